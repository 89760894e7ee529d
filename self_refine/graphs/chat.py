"""Example parent agent: a chat assistant that drafts each reply, then refines it before sending."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

from langchain_core.messages import BaseMessage, RemoveMessage, SystemMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.pregel import Pregel
from langgraph.runtime import Runtime

from self_refine.graphs.adapters import refine_node, reply_from_output
from self_refine.graphs.checked import CheckedStateGraph
from self_refine.graphs.self_refine import GRAPH_NAME, create_self_refine_graph
from self_refine.models.resolve import resolve_model
from self_refine.models.roles import ModelLike, RoleModel
from self_refine.nodes.critic_run import CriticRun
from self_refine.nodes.runnable import Node
from self_refine.settings.call import Parts, resolve
from self_refine.settings.fields import RefineContext
from self_refine.state import RefineOutput

__all__ = ["CHAT_SYSTEM_PROMPT", "create_refined_chat_graph"]

CHAT_SYSTEM_PROMPT = "You are a helpful assistant. Answer the user's last message."


def _draft_parts(model: ModelLike, refiner: Pregel[Any, Any, Any, Any]) -> Parts:
    """What the draft reply is asked with: the refine graph's parts (its settings, prompts
    and models), `model` as the generator."""
    builder = getattr(refiner, "builder", None)
    if isinstance(builder, CheckedStateGraph):
        parts = builder.parts
    else:  # a refine graph wrapped beyond reach: the defaults, `model` in every role
        parts = Parts(
            roles=dict.fromkeys(("critic", "refiner"), model),
            settings=RefineContext(),
            critic_call=CriticRun,
        )
    return dataclasses.replace(parts, roles={**parts.roles, "generator": model})


def _make_draft_reply(parts: Parts, system_prompt: str) -> Node:
    """Build the node that drafts a reply to the conversation with the chat model.

    Its settings are those the refine graph's door gives the run it starts next
    (`resolve` of the same context); its model is the generator of their
    plan, made once per settings and kept.
    """

    def prepare(state: Any, runtime: Runtime[Any]) -> tuple[RoleModel, list[BaseMessage]]:
        plan = parts.plan(resolve(parts, runtime.context).settings)
        return plan.models.get("generator"), [SystemMessage(system_prompt), *state["messages"]]

    def draft_reply(state: Any, runtime: Runtime[Any]) -> dict[str, Any]:
        """Draft a reply to the user's last message."""
        chat_model, messages = prepare(state, runtime)
        return {"messages": [chat_model.invoke(messages)]}

    async def adraft_reply(state: Any, runtime: Runtime[Any]) -> dict[str, Any]:
        """Draft a reply to the user's last message."""
        # Off the event loop: resolving a local model reads files and runs a test process.
        chat_model, messages = await asyncio.to_thread(prepare, state, runtime)
        return {"messages": [await chat_model.ainvoke(messages)]}

    return Node(draft_reply, adraft_reply, name="draft_reply")


def _answer_reply(state: Any, output: RefineOutput) -> dict[str, Any]:
    """The answer as the chat's reply, under an id of its own; the draft reply is removed.

    A reply that kept the draft's id would replace it in the state, but the
    messages stream, which already sent the draft, would not send it again.
    """
    reply = reply_from_output(state, output)["messages"][0]
    draft_id = reply.id
    reply = reply.model_copy(update={"id": str(uuid.uuid4())})
    return {"messages": [RemoveMessage(id=draft_id), reply] if draft_id else [reply]}


def create_refined_chat_graph(
    model: ModelLike,
    *,
    refiner: Pregel[Any, Any, Any, Any] | None = None,
    system_prompt: str = CHAT_SYSTEM_PROMPT,
) -> StateGraph[MessagesState, RefineContext, MessagesState, MessagesState]:
    """Build (uncompiled) a chat agent: draft a reply with `model`, refine it, then send it.

    `refiner` is the compiled refine graph (default: one built on `model`).
    The run's `RefineContext` (over the refine graph's settings) reaches both the
    draft (its `generator_model` or `model`) and the refine subgraph. On
    `stream_mode="messages"` the draft reply streams as the model writes it, and the
    refined reply, an `AIMessage` named "answer" that takes the draft's place, comes last.
    """
    resolve_model(model)  # bad model strings and missing keys fail here
    refiner = refiner or create_self_refine_graph(model).compile(name=GRAPH_NAME)
    builder = StateGraph(MessagesState, context_schema=RefineContext)
    builder.add_node("draft_reply", _make_draft_reply(_draft_parts(model, refiner), system_prompt))
    builder.add_node("refine_reply", refine_node(refiner, to_output=_answer_reply))
    builder.add_edge(START, "draft_reply")
    builder.add_edge("draft_reply", "refine_reply")
    builder.add_edge("refine_reply", END)
    return builder
