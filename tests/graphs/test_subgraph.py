"""Embedding the refine graph in a parent graph, under the parent's checkpointer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command

from self_refine import (
    ConfigError,
    RefineContext,
    create_refined_chat_graph,
    create_self_refine_graph,
    refine_node,
)
from tests.openai_server import OpenAIServer

WORDS = "dog, frisbee, park"
TASK = f"Write one sentence using the words: {WORDS}."
EDITED = {"feedback": ['Mention "zebra"'], "score": 0.2, "done": False, "source": "human"}


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    if request.param == "memory":
        yield InMemorySaver()
    else:
        with SqliteSaver.from_conn_string(str(tmp_path / "parent.sqlite")) as sqlite:
            yield sqlite


class Report(TypedDict, total=False):
    """A parent whose state shares the refine graph's input and output keys."""

    words: str
    task: str
    answer: str
    stop_reason: str | None
    iterations: int
    published: str


def _report_graph(refiner: Any, saver: BaseCheckpointSaver[Any]) -> Any:
    builder = StateGraph(Report)
    builder.add_node(
        "plan", lambda s: {"task": f"Write one sentence using the words: {s['words']}."}
    )
    builder.add_node("refine", refiner)
    builder.add_node("publish", lambda s: {"published": f"{s['answer']} [{s['stop_reason']}]"})
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "refine")
    builder.add_edge("refine", "publish")
    builder.add_edge("publish", END)
    return builder.compile(checkpointer=saver)


def _namespaces(saver: BaseCheckpointSaver[Any], thread_id: str) -> set[str]:
    return {
        c.config["configurable"]["checkpoint_ns"]
        for c in saver.list({"configurable": {"thread_id": thread_id}})
    }


def _chat(refiner: Any, saver: BaseCheckpointSaver[Any]) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("refine_reply", refine_node(refiner))
    builder.add_edge(START, "refine_reply")
    return builder.compile(checkpointer=saver)


# Pattern 1: the compiled refine graph is the parent's node.


def test_graph_as_node_streams_and_checkpoints_in_its_namespace(
    saver: BaseCheckpointSaver[Any],
) -> None:
    parent = _report_graph(create_self_refine_graph("offline").compile(), saver)
    config = {"configurable": {"thread_id": "direct"}}
    seen: dict[tuple[str, ...], list[str]] = {}
    for namespace, update in parent.stream(
        {"words": WORDS}, config, subgraphs=True, stream_mode="updates"
    ):
        seen.setdefault(namespace, []).extend(update)
    (inner,) = [ns for ns in seen if ns]
    assert inner[0].startswith("refine:")
    assert {"generate", "critique", "refine", "finalize"} <= set(seen[inner])
    assert seen[()] == ["plan", "refine", "publish"]

    final = parent.get_state(config).values
    assert final["stop_reason"] == "critic_done"
    assert final["published"] == f"{final['answer']} [critic_done]"
    assert all(word in final["answer"] for word in ("dog", "frisbee", "park"))
    assert "task" in final and "attempts" not in final  # only keys the parent declares
    assert any(ns.startswith("refine:") for ns in _namespaces(saver, "direct"))


def test_graph_as_node_pauses_inside_and_the_parent_edits_and_resumes(
    saver: BaseCheckpointSaver[Any],
) -> None:
    refiner = create_self_refine_graph("offline").compile(interrupt_before=["refine"])
    parent = _report_graph(refiner, saver)
    config = {"configurable": {"thread_id": "paused"}}
    parent.invoke({"words": WORDS}, config)

    state = parent.get_state(config, subgraphs=True)
    assert state.next == ("refine",)
    inner = state.tasks[0].state
    assert inner.next == ("refine",)
    assert inner.values["draft"] == "this is a very rough draft about dog"
    assert len(inner.values["attempts"]) == 1

    parent.update_state(inner.config, {"critique": EDITED}, as_node="critique")
    parent.invoke(None, config)
    inner = parent.get_state(config, subgraphs=True).tasks[0].state
    assert inner.values["draft"].endswith("It also covers zebra.")
    resumes = 1
    while parent.get_state(config).next and resumes < 10:  # paused before each refine step
        parent.invoke(None, config)
        resumes += 1
    final = parent.get_state(config).values
    assert resumes == 3
    assert final["answer"] == (
        "This is a rough draft about dog. It also covers zebra. "
        "It also covers frisbee. It also covers park."
    )
    assert final["published"].endswith("[critic_done]")


def test_graph_as_node_human_critic_is_answered_from_the_parent(
    saver: BaseCheckpointSaver[Any],
) -> None:
    parent = _report_graph(create_self_refine_graph("offline", critics=["human"]).compile(), saver)
    config = {"configurable": {"thread_id": "human"}}
    result = parent.invoke({"words": WORDS}, config)
    (pending,) = result["__interrupt__"]
    assert pending.value["draft"] == "this is a very rough draft about dog"

    result = parent.invoke(Command(resume='Replace "rough" with "short"'), config)
    (pending,) = result["__interrupt__"]
    assert pending.value["draft"] == "this is a very short draft about dog"
    result = parent.invoke(Command(resume={"done": True}), config)
    assert result["published"] == "this is a very short draft about dog [critic_done]"


# Pattern 2: the library's node maps a chat's messages in and out.


def test_refine_node_replies_with_the_refined_answer(saver: BaseCheckpointSaver[Any]) -> None:
    chat = _chat(create_self_refine_graph("offline").compile(), saver)
    config = {"configurable": {"thread_id": "chat"}}
    chunks = list(
        chat.stream(
            {"messages": [HumanMessage(TASK)]}, config, subgraphs=True, stream_mode="updates"
        )
    )
    inner_nodes = {node for ns, update in chunks if ns for node in update}
    assert {"generate", "critique", "refine", "finalize"} <= inner_nodes

    messages = chat.get_state(config).values["messages"]
    assert [type(m) for m in messages] == [HumanMessage, AIMessage]
    reply = messages[-1]
    assert all(word in reply.text for word in ("dog", "frisbee", "park"))
    assert reply.response_metadata["self_refine"]["stop_reason"] == "critic_done"
    assert reply.response_metadata["self_refine"]["score"] == 1.0
    assert any(ns.startswith("refine_reply:") for ns in _namespaces(saver, "chat"))


def test_refine_node_refines_a_drafted_reply_in_place(saver: BaseCheckpointSaver[Any]) -> None:
    chat = _chat(create_self_refine_graph("offline").compile(), saver)
    draft = AIMessage("a dog in a park", id="draft-1")
    result = chat.invoke(
        {"messages": [HumanMessage(TASK), draft]}, {"configurable": {"thread_id": "draft"}}
    )
    assert [m.id for m in result["messages"][1:]] == ["draft-1"]
    assert result["messages"][-1].text == "A dog in a park. It also covers frisbee."


def test_refine_node_pauses_inside_and_resumes_from_the_parent(
    saver: BaseCheckpointSaver[Any],
) -> None:
    chat = _chat(create_self_refine_graph("offline").compile(), saver)
    config = {"configurable": {"thread_id": "chat-human"}}
    context = RefineContext(critics=["human"])
    result = chat.invoke({"messages": [HumanMessage(TASK)]}, config, context=context)
    assert result["__interrupt__"][0].value["task"] == TASK

    inner = chat.get_state(config, subgraphs=True).tasks[0].state
    assert inner.values["draft"] == "this is a very rough draft about dog"
    assert inner.config["configurable"]["checkpoint_ns"].startswith("refine_reply:")

    result = chat.invoke(Command(resume='Mention "zebra"'), config, context=context)
    result = chat.invoke(Command(resume={"done": True, "score": 0.9}), config, context=context)
    reply = result["messages"][-1]
    assert reply.text == "this is a very rough draft about dog. It also covers zebra."
    assert reply.response_metadata["self_refine"]["score"] == 0.9


@pytest.mark.parametrize("pattern", ["graph as node", "refine_node"])
def test_the_parent_s_first_context_holds_for_resumes_that_bring_none(
    saver: BaseCheckpointSaver[Any], pattern: str
) -> None:
    refiner = create_self_refine_graph("offline").compile()
    if pattern == "refine_node":
        parent, start = _chat(refiner, saver), {"messages": [HumanMessage(TASK)]}
    else:
        parent, start = _report_graph(refiner, saver), {"words": WORDS}
    config = {"configurable": {"thread_id": "kept"}}
    result = parent.invoke(start, config, context=RefineContext(critics=["human"]))
    assert result["__interrupt__"][0].value["draft"] == "this is a very rough draft about dog"

    result = parent.invoke(Command(resume='Mention "zebra"'), config)
    (pending,) = result["__interrupt__"]
    assert pending.value["draft"] == "this is a very rough draft about dog. It also covers zebra."


async def test_refine_node_async_under_async_sqlite(tmp_path: Path) -> None:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.sqlite")) as saver:
        chat = _chat(create_self_refine_graph("offline", critics=["human"]).compile(), saver)
        config = {"configurable": {"thread_id": "async"}}
        result = await chat.ainvoke({"messages": [HumanMessage(TASK)]}, config)
        assert result["__interrupt__"][0].value["draft"] == "this is a very rough draft about dog"
        result = await chat.ainvoke(Command(resume={"done": True}), config)
    assert result["messages"][-1].text == "this is a very rough draft about dog"


def test_refine_node_custom_mapping() -> None:
    class Ticket(TypedDict, total=False):
        question: str
        reply: str
        refined_steps: int

    builder = StateGraph(Ticket)
    builder.add_node(
        "refine",
        refine_node(
            create_self_refine_graph("offline").compile(),
            to_input=lambda s: {"task": s["question"]},
            to_output=lambda s, out: {"reply": out["answer"], "refined_steps": out["iterations"]},
        ),
    )
    builder.add_edge(START, "refine")
    result = builder.compile().invoke({"question": TASK})
    assert result["reply"].startswith("This is a rough draft about dog")
    assert result["refined_steps"] == 3


def test_refine_node_needs_the_refine_graph() -> None:
    with pytest.raises(ConfigError, match=r"pass create_self_refine_graph\(model\).compile\(\)"):
        refine_node("offline")  # type: ignore[arg-type]


def test_refine_node_without_a_human_message_says_what_to_pass() -> None:
    chat = _chat(create_self_refine_graph("offline").compile(), InMemorySaver())
    with pytest.raises(ConfigError, match="pass to_input="):
        chat.invoke({"messages": [AIMessage("hello")]}, {"configurable": {"thread_id": "x"}})


def test_example_chat_agent_drafts_then_refines() -> None:
    agent = create_refined_chat_graph("offline").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "agent"}}
    steps = [
        node
        for _, update in agent.stream(
            {"messages": [("user", TASK)]}, config, subgraphs=True, stream_mode="updates"
        )
        for node in update
    ]
    assert steps[0] == "draft_reply" and steps[-1] == "refine_reply"
    assert "refine" in steps
    messages = agent.get_state(config).values["messages"]
    assert len(messages) == 2
    assert (
        messages[-1].text
        == "This is a rough draft about dog. It also covers frisbee. It also covers park."
    )


def test_the_chat_agent_drafts_with_the_refine_graph_s_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with OpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        settings = RefineContext(max_tokens=77, max_iterations=1)
        refiner = create_self_refine_graph("openai:test-model", settings=settings).compile()
        agent = create_refined_chat_graph("openai:test-model", refiner=refiner).compile()

        agent.invoke({"messages": [("user", TASK)]})
        agent.invoke({"messages": [("user", TASK)]}, context={"max_tokens": 55})

        sent = server.chat_requests()
    drafts = [r.body["max_tokens"] for r in sent if r.role not in ("critic", "refiner")]
    assert drafts == [77, 55]  # the refine graph's settings, or the call's over them
