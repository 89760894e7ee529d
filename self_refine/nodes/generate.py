"""The generate node: write the first draft."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from self_refine.models.calls import DraftReply, awrite_draft, trace_config, write_draft
from self_refine.models.hygiene import DraftGuard
from self_refine.nodes.critique import check_critics
from self_refine.nodes.deps import Deps
from self_refine.nodes.runnable import NodeRunnable
from self_refine.prompts import generate_messages
from self_refine.state import RefineState, start_over_update

__all__ = ["make_generate"]


def make_generate(deps: Deps) -> NodeRunnable:
    """Build the node that asks the generator for a first draft."""

    def prepare(
        state: RefineState,
    ) -> tuple[BaseChatModel, list[BaseMessage], RunnableConfig, DraftGuard]:
        ctx = deps.settings(state)
        check_critics(deps, ctx, state.get("reference"))  # fail before any model call
        deps.model("refiner", ctx)  # and so does a refiner model that cannot be had
        model = deps.model("generator", ctx)
        config = trace_config(
            "generate", "generator", model, iteration=0, profile=deps.profile_name(ctx)
        )
        guard = deps.guard(ctx, state["task"], [])
        return model, generate_messages(deps.prompt_set(ctx), state["task"]), config, guard

    def generate(state: RefineState) -> dict[str, Any]:
        """Write the first draft of the task."""
        model, messages, config, guard = prepare(state)
        return _update(state, write_draft(model, messages, "generator", config, guard))

    async def agenerate(state: RefineState) -> dict[str, Any]:
        """Write the first draft of the task."""
        model, messages, config, guard = prepare(state)
        return _update(state, await awrite_draft(model, messages, "generator", config, guard))

    return NodeRunnable(generate, agenerate, name="generate")


def _update(state: RefineState, reply: DraftReply) -> dict[str, Any]:
    # generate always begins a run: an earlier finished run's attempts are replaced.
    return {
        **start_over_update(state, []),
        "draft": reply.text,
        "iteration": 0,
        "draft_usage": reply.usage,
        "draft_problems": reply.problems,
        "draft_rejected": reply.rejected,
        "usage": reply.usage,
        "stop_reason": None,
    }
