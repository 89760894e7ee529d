"""Embed the refine graph in a parent agent: a node that maps the parent's state in and out.

The compiled refine graph can also be added directly as a parent's node when
the parent's state shares its keys (`task`, `answer`, ...); this module is for
parents whose state is something else, such as a chat's `messages`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel

from self_refine.content import TaskContent, has_images
from self_refine.errors import ConfigError
from self_refine.graphs.self_refine import GRAPH_NAME
from self_refine.input_checks import validate_input
from self_refine.state import ANSWER_NAME, RefineInput, RefineOutput

__all__ = ["InputMapper", "OutputMapper", "refine_node", "reply_from_output", "task_from_messages"]

InputMapper = Callable[[Any], RefineInput]
"""Maps the parent's state to the refine graph's input."""

OutputMapper = Callable[[Any, RefineOutput], dict[str, Any]]
"""Maps the parent's state and the refine graph's output to the parent's state update."""


def _messages(state: Any) -> Sequence[AnyMessage]:
    messages = (
        state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
    )
    if not messages:
        raise ConfigError(
            "the parent state has no 'messages' to refine a reply from: "
            "pass to_input= to map your state to {'task': ...}"
        )
    return cast(Sequence[AnyMessage], messages)


def _last_human(messages: Sequence[AnyMessage]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return index
    raise ConfigError(
        "no human message in the parent's 'messages': the task is the last human "
        "message, or pass to_input= to map your state to {'task': ...}"
    )


def _draft_message(messages: Sequence[AnyMessage]) -> AIMessage | None:
    """The reply being drafted: the last AI message after the last human one, if it has text."""
    last = messages[-1]
    after_human = _last_human(messages) < len(messages) - 1
    if after_human and isinstance(last, AIMessage) and not last.tool_calls and last.text.strip():
        return last
    return None


def task_from_messages(state: Any) -> RefineInput:
    """Default input mapping: the last human message is the task, a reply after it the draft.

    A message with images is the task as its content blocks, images included.
    """
    messages = _messages(state)
    question = messages[_last_human(messages)]
    content = question.content
    task = cast(TaskContent, content) if has_images(content) else question.text
    payload: RefineInput = {"task": task}
    draft = _draft_message(messages)
    if draft is not None:
        payload["draft"] = draft.text
    return payload


def reply_from_output(state: Any, output: RefineOutput) -> dict[str, Any]:
    """Default output mapping: the answer as an AI message, replacing the draft reply if any.

    The message, named "answer", has in its `response_metadata["self_refine"]` the
    stop reason, the number of refine steps and the answer's score.
    """
    draft = _draft_message(_messages(state))
    reply = AIMessage(
        output["answer"],
        name=ANSWER_NAME,
        response_metadata={
            "self_refine": {
                "stop_reason": output["stop_reason"],
                "iterations": output["iterations"],
                "score": output["score"],
            }
        },
    )
    if draft is not None and draft.id:
        reply.id = draft.id  # add_messages replaces the draft instead of adding a second reply
    return {"messages": [reply]}


def refine_node(
    refiner: Pregel[Any, Any, Any, Any] | StateGraph[Any, Any, Any, Any],
    *,
    to_input: InputMapper = task_from_messages,
    to_output: OutputMapper = reply_from_output,
    name: str = "refine_reply",
) -> RunnableLambda[Any, dict[str, Any]]:
    """Build a parent-graph node that runs the refine graph on a mapping of the parent's state.

    By default it reads a chat (`messages`): the last human message is the
    task, an AI reply after it is the draft to refine, and the answer comes
    back as an AI message that replaces that draft (or is added when there
    was none). Pass `to_input` / `to_output` for other state shapes.
    Compile `refiner` without a checkpointer: it then uses the parent's, and
    its steps are checkpointed in their own namespace, so interrupts inside
    it (the human critic, `interrupt_before`) resume from the parent.
    """
    if not isinstance(refiner, Pregel | StateGraph):
        raise ConfigError(
            f"refine_node needs the refine graph, got {type(refiner).__name__}: "
            "pass create_self_refine_graph(model).compile()"
        )
    graph = refiner.compile(name=GRAPH_NAME) if isinstance(refiner, StateGraph) else refiner

    def prepare(state: Any) -> RefineInput:
        payload = to_input(state)
        validate_input(payload)
        return payload

    # The refine graph's door gives the run the recursion limit its settings need.
    def run(state: Any, config: RunnableConfig) -> dict[str, Any]:
        """Refine a reply with the refine graph and map its output back."""
        return to_output(state, cast(RefineOutput, graph.invoke(prepare(state), config)))

    async def arun(state: Any, config: RunnableConfig) -> dict[str, Any]:
        """Refine a reply with the refine graph and map its output back."""
        output = await graph.ainvoke(prepare(state), config)
        return to_output(state, cast(RefineOutput, output))

    return RunnableLambda(run, afunc=arun, name=name)
