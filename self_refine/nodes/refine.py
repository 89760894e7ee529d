"""The refine node: rewrite the draft from the critique and the earlier attempts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime

from self_refine.context import RefineContext
from self_refine.models.calls import aask_draft, ask_draft, asking_again
from self_refine.models.hygiene import DraftGuard, feedback_of
from self_refine.nodes.draft import DraftRequest, draft_update, rejected_reply
from self_refine.nodes.parts import Parts, RunPlan
from self_refine.nodes.runnable import Node
from self_refine.prompts import refine_messages
from self_refine.prompts.render import RefineForm
from self_refine.state import RefineState

__all__ = ["make_refine", "refine_request"]


def refine_request(
    plan: RunPlan, state: Mapping[str, Any], form: RefineForm | None = None
) -> DraftRequest:
    """The request for the next draft, from the critique and the earlier attempts.

    Laid out in `form`, else the run's; a step that asks again after a reply that was
    its draft unchanged asks in the fresh form (the task and the feedback, no draft to
    copy), at a new draw.
    """
    attempts = state.get("attempts") or []
    rejected = rejected_reply(state)
    iteration = state.get("iteration", 0) + (0 if rejected else 1)
    copied = rejected is not None and rejected["reason"] == "unchanged"
    model = plan.model("refiner")
    config = plan.trace("refine", "refiner", model, iteration)
    messages = refine_messages(
        plan.prompts,
        state["task"],
        attempts,
        state.get("critique"),
        plan.settings.history_window,
        "fresh" if copied else form or plan.form,
    )
    if rejected is not None:
        model, messages = asking_again(model, messages, rejected, config)
    previous = attempts[-1]["draft"] if attempts else None
    guard = plan.guard(state["task"], feedback_of(attempts, _items(state)), previous)
    return DraftRequest(model, messages, config, guard, "refiner", iteration)


def make_refine(parts: Parts) -> Node:
    """Build the node that asks the refiner for a better draft."""

    def refine(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Rewrite the latest draft so it addresses the feedback."""
        ask = refine_request(parts.plan(runtime.context), state)
        reply = ask_draft(ask.model, ask.messages, ask.role, ask.config, ask.guard)
        return {**_update(state, reply, ask.guard), "iteration": ask.iteration}

    async def arefine(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Rewrite the latest draft so it addresses the feedback."""
        ask = refine_request(parts.plan(runtime.context), state)
        reply = await aask_draft(ask.model, ask.messages, ask.role, ask.config, ask.guard)
        return {**_update(state, reply, ask.guard), "iteration": ask.iteration}

    return Node(refine, arefine, name="refine")


def _items(state: Mapping[str, Any]) -> list[str]:
    """The feedback in the critique channel (a person may have edited it)."""
    critique = state.get("critique") or {}
    return [str(item) for item in critique.get("feedback") or []]


def _update(state: RefineState, reply: Any, guard: DraftGuard) -> dict[str, Any]:
    # A refiner whose replies are all rejected leaves the draft as it was (the
    # attempt says why): the "unchanged" policy then ends the run.
    kept = guard.previous if guard.previous is not None else state.get("draft", "")
    return draft_update(state, reply, role="refiner", kept=kept)
