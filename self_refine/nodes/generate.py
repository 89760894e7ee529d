"""The generate node: write the first draft."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from self_refine.context import RefineContext
from self_refine.models.calls import aask_draft, ask_draft, asking_again
from self_refine.models.hygiene import DraftGuard
from self_refine.nodes.draft import draft_update, rejected_reply
from self_refine.nodes.plan import Loop
from self_refine.nodes.runnable import Node
from self_refine.prompts import generate_messages
from self_refine.state import RefineState

__all__ = ["make_generate"]


def make_generate(loop: Loop) -> Node:
    """Build the node that asks the generator for a first draft."""

    def request(
        state: RefineState, runtime: Runtime[RefineContext]
    ) -> tuple[Any, list[BaseMessage], RunnableConfig, DraftGuard]:
        plan = loop.plan(state, runtime)
        model = plan.model("generator")
        config = plan.trace("generate", "generator", model, 0)
        messages = generate_messages(plan.prompts, state["task"])
        rejected = rejected_reply(state)
        if rejected is not None:
            model, messages = asking_again(model, messages, rejected, config)
        return model, messages, config, plan.guard(state["task"])

    def generate(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Write the first draft of the task."""
        model, messages, config, guard = request(state, runtime)
        reply = ask_draft(model, messages, "generator", config, guard)
        return {**draft_update(state, reply, role="generator", kept=""), "iteration": 0}

    async def agenerate(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Write the first draft of the task."""
        model, messages, config, guard = request(state, runtime)
        reply = await aask_draft(model, messages, "generator", config, guard)
        return {**draft_update(state, reply, role="generator", kept=""), "iteration": 0}

    return Node(generate, agenerate, name="generate")
