"""The generate node: write the first draft."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableLambda

from self_refine.models import message_text, message_usage
from self_refine.nodes.critique import check_critics
from self_refine.nodes.deps import Deps
from self_refine.prompts import generate_messages
from self_refine.state import RefineState, Usage, add_usage

__all__ = ["make_generate"]


def make_generate(deps: Deps) -> RunnableLambda[RefineState, dict[str, Any]]:
    """Build the node that asks the generator for a first draft."""

    def prepare(state: RefineState) -> tuple[BaseChatModel, list[BaseMessage]]:
        ctx = deps.settings()
        check_critics(deps, ctx, state.get("reference"))  # fail before any model call
        model = deps.model("generator", ctx)
        return model, generate_messages(deps.prompt_set(ctx), state["task"])

    def generate(state: RefineState) -> dict[str, Any]:
        """Write the first draft of the task."""
        model, messages = prepare(state)
        reply = model.invoke(messages)
        usage = message_usage(reply)
        if not message_text(reply):  # one retry: an empty draft is a failed call
            reply = model.invoke(messages)
            usage = add_usage(usage, message_usage(reply))
        return _update(state, message_text(reply), usage)

    async def agenerate(state: RefineState) -> dict[str, Any]:
        """Write the first draft of the task."""
        model, messages = prepare(state)
        reply = await model.ainvoke(messages)
        usage = message_usage(reply)
        if not message_text(reply):
            reply = await model.ainvoke(messages)
            usage = add_usage(usage, message_usage(reply))
        return _update(state, message_text(reply), usage)

    return RunnableLambda(generate, afunc=agenerate, name="generate")


def _update(state: RefineState, draft: str, usage: Usage) -> dict[str, Any]:
    return {
        "draft": draft,
        "iteration": 0,
        "draft_usage": usage,
        "usage": add_usage(state.get("usage"), usage),
        "stop_reason": None,
    }
