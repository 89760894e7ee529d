"""The generate node: write the first draft."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime

from self_refine.context import RefineContext
from self_refine.models.calls import aask_draft, ask_draft, asking_again
from self_refine.nodes.draft import DraftRequest, draft_update, rejected_reply
from self_refine.nodes.parts import Parts, RunPlan
from self_refine.nodes.runnable import Node
from self_refine.prompts import generate_messages
from self_refine.state import RefineState

__all__ = ["generate_request", "make_generate"]


def generate_request(plan: RunPlan, state: Mapping[str, Any]) -> DraftRequest:
    """The request for a first draft (asked again after a rejected reply)."""
    model = plan.model("generator")
    config = plan.trace("generate", "generator", model, 0)
    messages = generate_messages(plan.prompts, state["task"])
    rejected = rejected_reply(state)
    if rejected is not None:
        model, messages = asking_again(model, messages, rejected, config)
    return DraftRequest(model, messages, config, plan.guard(state["task"]), "generator", 0)


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
