"""The refine node: rewrite the draft from the critique and the earlier attempts."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from self_refine.models.calls import DraftReply, aask_draft, ask_draft
from self_refine.models.hygiene import DraftGuard
from self_refine.nodes.draft import draft_update
from self_refine.nodes.requests import refine_request
from self_refine.nodes.runnable import Node
from self_refine.settings.call import Parts
from self_refine.settings.fields import RefineContext
from self_refine.state import RefineState

__all__ = ["make_refine"]


def make_refine(parts: Parts) -> Node:
    """Build the node that asks the refiner for a better draft."""

    def refine(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Rewrite the latest draft so it addresses the feedback."""
        plan = parts.plan(runtime.context)
        ask = refine_request(plan, state)
        reply = ask_draft(ask.model, ask.messages, ask.role, ask.config, ask.guard)
        budget = plan.settings.max_tokens_total
        return {**_update(state, reply, ask.guard, budget), "iteration": ask.iteration}

    async def arefine(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Rewrite the latest draft so it addresses the feedback."""
        plan = parts.plan(runtime.context)
        ask = refine_request(plan, state)
        reply = await aask_draft(ask.model, ask.messages, ask.role, ask.config, ask.guard)
        budget = plan.settings.max_tokens_total
        return {**_update(state, reply, ask.guard, budget), "iteration": ask.iteration}

    return Node(refine, arefine, name="refine")


def _update(
    state: RefineState, reply: DraftReply, guard: DraftGuard, budget: int | None
) -> dict[str, Any]:
    # A refiner whose replies are all rejected leaves the draft as it was (the
    # attempt says why): the "unchanged" policy then ends the run.
    kept = guard.previous if guard.previous is not None else state.get("draft", "")
    return draft_update(state, reply, role="refiner", kept=kept, budget=budget)
