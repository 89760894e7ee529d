"""The generate node: write the first draft."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from self_refine.models.calls import aask_draft, ask_draft
from self_refine.nodes.draft import draft_update
from self_refine.nodes.requests import generate_request
from self_refine.nodes.runnable import Node
from self_refine.settings.call import Parts
from self_refine.settings.fields import RefineContext
from self_refine.state import RefineState

__all__ = ["make_generate"]


def make_generate(parts: Parts) -> Node:
    """Build the node that asks the generator for a first draft."""

    def generate(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Write the first draft of the task."""
        ask = generate_request(parts.plan(runtime.context), state)
        reply = ask_draft(ask.model, ask.messages, ask.role, ask.config, ask.guard)
        return {**draft_update(state, reply, role=ask.role, kept=""), "iteration": 0}

    async def agenerate(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Write the first draft of the task."""
        ask = generate_request(parts.plan(runtime.context), state)
        reply = await aask_draft(ask.model, ask.messages, ask.role, ask.config, ask.guard)
        return {**draft_update(state, reply, role=ask.role, kept=""), "iteration": 0}

    return Node(generate, agenerate, name="generate")
