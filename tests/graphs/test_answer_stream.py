"""The answer as a message on the `messages` stream: last, named "answer", once."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from self_refine import create_refined_chat_graph, create_self_refine_graph

TASK = "Write one sentence using the words: dog, frisbee, park."


def test_the_refine_graph_streams_its_drafts_then_the_answer_last() -> None:
    graph = create_self_refine_graph("offline").compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "stream"}}
    events = list(graph.stream({"task": TASK}, config, stream_mode="messages"))
    answers = [(m, meta) for m, meta in events if m.name == "answer"]
    assert len(answers) == 1 and events[-1] == answers[0]
    message, metadata = answers[0]
    values = graph.get_state(config).values
    assert isinstance(message, AIMessage) and message.text == values["answer"]
    assert metadata["langgraph_node"] == "finalize"
    assert message.response_metadata["self_refine"] == {
        "stop_reason": "critic_done",
        "iterations": values["iterations"],
        "score": values["score"],
    }
    drafts = [meta["role"] for m, meta in events[:-1]]
    assert {"generator", "critic", "refiner"} <= set(drafts)
    # The message streams; the output holds the answer as text only.
    assert "answer_message" not in graph.invoke({"task": TASK}, config)


async def test_the_answer_streams_last_under_astream_too() -> None:
    graph = create_self_refine_graph("offline").compile()
    events = [m async for m, _ in graph.astream({"task": TASK}, stream_mode="messages")]
    assert events[-1].name == "answer"


def test_the_chat_graphs_reply_is_the_answer_message() -> None:
    agent = create_refined_chat_graph("offline").compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "chat"}}
    events = list(agent.stream({"messages": [("user", TASK)]}, config, stream_mode="messages"))
    nodes = [(meta["langgraph_node"], m.name) for m, meta in events]
    assert nodes == [("draft_reply", None), ("refine_reply", "answer")]
    messages = agent.get_state(config).values["messages"]
    assert [type(m) for m in messages] == [HumanMessage, AIMessage]
    assert messages[-1].name == "answer" and messages[-1].id == events[-1][0].id
    assert messages[-1].text == events[-1][0].text != events[0][0].text
