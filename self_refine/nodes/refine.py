"""The refine node: rewrite the draft from the critique and the earlier attempts."""

from __future__ import annotations

import dataclasses
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from self_refine.models.calls import DraftReply, awrite_draft, trace_config, write_draft
from self_refine.models.hygiene import DraftGuard, feedback_of
from self_refine.nodes.deps import Deps
from self_refine.nodes.runnable import NodeRunnable
from self_refine.prompts import refine_messages
from self_refine.state import RefineState, add_usage

__all__ = ["make_refine"]


def make_refine(deps: Deps) -> NodeRunnable:
    """Build the node that asks the refiner for a better draft."""

    def prepare(
        state: RefineState,
    ) -> tuple[BaseChatModel, list[BaseMessage], RunnableConfig, DraftGuard]:
        ctx = deps.settings(state)
        messages = refine_messages(
            deps.prompt_set(ctx),
            state["task"],
            state.get("attempts") or [],
            state.get("critique"),
            ctx.history_window,
            deps.refine_form(ctx),
        )
        model = deps.model("refiner", ctx)
        config = trace_config(
            "refine",
            "refiner",
            model,
            iteration=state.get("iteration", 0) + 1,
            profile=deps.profile_name(ctx),
        )
        attempts = state.get("attempts") or []
        guard = deps.guard(ctx, state["task"], feedback_of(attempts, _items(state)))
        previous = attempts[-1]["draft"] if attempts else None
        return model, messages, config, dataclasses.replace(guard, previous=previous)

    def refine(state: RefineState) -> dict[str, Any]:
        """Rewrite the latest draft so it addresses the feedback."""
        model, messages, config, guard = prepare(state)
        return _update(state, write_draft(model, messages, "refiner", config, guard))

    async def arefine(state: RefineState) -> dict[str, Any]:
        """Rewrite the latest draft so it addresses the feedback."""
        model, messages, config, guard = prepare(state)
        return _update(state, await awrite_draft(model, messages, "refiner", config, guard))

    return NodeRunnable(refine, arefine, name="refine")


def _items(state: RefineState) -> list[str]:
    """The feedback in the critique channel (a person may have edited it)."""
    critique = state.get("critique") or {}
    return [str(item) for item in critique.get("feedback") or []]


def _update(state: RefineState, reply: DraftReply) -> dict[str, Any]:
    # A refiner that refuses or keeps answering nothing leaves the draft as it
    # was (the reply says why): the "unchanged" policy then ends the run.
    return {
        "draft": reply.text or state.get("draft", ""),
        "iteration": state.get("iteration", 0) + 1,
        "draft_usage": reply.usage,
        "draft_problems": reply.problems,
        "draft_rejected": reply.rejected,
        "usage": add_usage(state.get("usage"), reply.usage),
        "stop_reason": None,
    }
