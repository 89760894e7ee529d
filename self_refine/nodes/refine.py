"""The refine node: rewrite the draft from the critique and the earlier attempts."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from self_refine.models import message_text, message_usage
from self_refine.nodes.deps import Deps
from self_refine.nodes.runnable import NodeRunnable
from self_refine.prompts import refine_messages
from self_refine.state import RefineState, Usage, add_usage

__all__ = ["make_refine"]


def make_refine(deps: Deps) -> NodeRunnable:
    """Build the node that asks the refiner for a better draft."""

    def prepare(state: RefineState) -> tuple[BaseChatModel, list[BaseMessage]]:
        ctx = deps.settings()
        messages = refine_messages(
            deps.prompt_set(ctx),
            state["task"],
            state.get("attempts") or [],
            state.get("critique"),
            ctx.history_window,
        )
        return deps.model("refiner", ctx), messages

    def refine(state: RefineState) -> dict[str, Any]:
        """Rewrite the latest draft so it addresses the feedback."""
        model, messages = prepare(state)
        reply = model.invoke(messages)
        usage = message_usage(reply)
        if not message_text(reply):  # one retry: an empty draft is a failed call
            reply = model.invoke(messages)
            usage = add_usage(usage, message_usage(reply))
        return _update(state, message_text(reply), usage)

    async def arefine(state: RefineState) -> dict[str, Any]:
        """Rewrite the latest draft so it addresses the feedback."""
        model, messages = prepare(state)
        reply = await model.ainvoke(messages)
        usage = message_usage(reply)
        if not message_text(reply):
            reply = await model.ainvoke(messages)
            usage = add_usage(usage, message_usage(reply))
        return _update(state, message_text(reply), usage)

    return NodeRunnable(refine, arefine, name="refine")


def _update(state: RefineState, draft: str, usage: Usage) -> dict[str, Any]:
    # A refiner that keeps answering nothing leaves the draft as it was: the
    # "unchanged" policy then ends the run instead of critiquing an empty text.
    return {
        "draft": draft or state.get("draft", ""),
        "iteration": state.get("iteration", 0) + 1,
        "draft_usage": usage,
        "usage": add_usage(state.get("usage"), usage),
        "stop_reason": None,
    }
