"""The delta-stored channels (attempts, draft, critique, task) read back whole.

Each checkpoint stores only what its step wrote; these tests check that every
way of reading a thread back still sees the full attempts list: the latest
state, the history, a fork from an earlier checkpoint, a graph rebuilt on the
same database, and the graph running as a subgraph under a parent's
checkpointer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from self_refine import RefineContext, create_self_refine_graph
from self_refine.models.offline import OfflineModel
from self_refine.persistence.storage import open_checkpointer

TASK = "Write a sentence using the words: dog, frisbee, park, catch."


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    if request.param == "memory":
        yield InMemorySaver()
    else:
        with open_checkpointer(str(tmp_path / "checkpoints.sqlite")) as sqlite_saver:
            yield sqlite_saver


def _graph(saver: BaseCheckpointSaver[Any] | None, **compile_options: Any) -> Any:
    # One edit per refine step, so three steps never finish the task.
    builder = create_self_refine_graph(
        OfflineModel(edits_per_step=1), settings=RefineContext(max_iterations=3)
    )
    return builder.compile(checkpointer=saver, **compile_options)


def _config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def test_latest_state_and_every_checkpoint_see_the_attempts_so_far(
    saver: BaseCheckpointSaver[Any],
) -> None:
    graph = _graph(saver)
    result = graph.invoke({"task": TASK}, _config("t"))
    attempts = result["attempts"]
    assert result["stop_reason"] == "max_iterations"
    assert [a["iteration"] for a in attempts] == [0, 1, 2, 3]

    assert graph.get_state(_config("t")).values["attempts"] == attempts
    history = list(graph.get_state_history(_config("t")))
    assert len(history) == 12  # input, START, begin, generate, 4 critiques, 3 refines, finalize
    for snapshot in history:
        seen = snapshot.values.get("attempts", [])
        assert seen == attempts[: len(seen)]
        if snapshot.next == ("refine",):  # just critiqued: the newest attempt is this draft
            assert len(seen) == snapshot.values["iteration"] + 1
            assert seen[-1]["draft"] == snapshot.values["draft"]
            assert seen[-1]["critique"] == snapshot.values["critique"]
    assert sorted({len(s.values.get("attempts", [])) for s in history}) == [0, 1, 2, 3, 4]


def test_a_graph_rebuilt_on_the_same_checkpointer_resumes_with_the_full_history(
    saver: BaseCheckpointSaver[Any],
) -> None:
    first = _graph(saver, interrupt_before=["refine"])
    first.invoke({"task": TASK, "draft": "a dog"}, _config("t"))
    first.invoke(None, _config("t"))  # paused before the second refine step

    second = _graph(saver)
    paused = second.get_state(_config("t"))
    assert paused.next == ("refine",)
    assert [a["iteration"] for a in paused.values["attempts"]] == [0, 1]
    assert paused.values["attempts"][0]["draft"] == "a dog"
    assert paused.values["task"] == TASK

    result = second.invoke(None, _config("t"))
    assert [a["iteration"] for a in result["attempts"]] == [0, 1, 2, 3]
    assert result["attempts"][:2] == paused.values["attempts"]


def test_a_fork_from_an_earlier_checkpoint_keeps_the_attempts_before_it(
    saver: BaseCheckpointSaver[Any],
) -> None:
    graph = _graph(saver)
    original = graph.invoke({"task": TASK}, _config("t"))["attempts"]
    final_config = graph.get_state(_config("t")).config
    before_second_refine = next(
        s
        for s in graph.get_state_history(_config("t"))
        if s.next == ("refine",) and len(s.values["attempts"]) == 2
    )

    edited = {
        **before_second_refine.values["critique"],
        "feedback": ['Replace "dog" with "puppy".'],
    }
    fork_config = graph.update_state(
        before_second_refine.config, {"critique": edited}, as_node="critique"
    )
    forked = graph.invoke(None, fork_config)["attempts"]

    assert forked[:2] == original[:2]
    assert [a["iteration"] for a in forked] == [0, 1, 2, 3]
    assert "puppy" in forked[2]["draft"] and "puppy" not in original[2]["draft"]
    assert graph.get_state(_config("t")).values["attempts"] == forked
    assert graph.get_state(final_config).values["attempts"] == original


class _Parent(TypedDict, total=False):
    task: str
    answer: str
    attempts: list[Any]


def test_as_a_subgraph_its_state_is_read_back_in_the_parents_checkpointer(
    saver: BaseCheckpointSaver[Any],
) -> None:
    refine_graph = _graph(None, interrupt_before=["refine"])
    parent = (
        StateGraph(_Parent)
        .add_node("refine_answer", refine_graph)
        .add_edge(START, "refine_answer")
        .add_edge("refine_answer", END)
        .compile(checkpointer=saver)
    )
    parent.invoke({"task": TASK}, _config("p"))
    seen = []
    for _ in range(3):  # paused before each of the three refine steps
        inner = parent.get_state(_config("p"), subgraphs=True).tasks[0].state
        assert inner is not None and not isinstance(inner, dict)
        seen.append([a["iteration"] for a in inner.values["attempts"]])
        parent.invoke(None, _config("p"))
    assert seen == [[0], [0, 1], [0, 1, 2]]

    values = parent.get_state(_config("p")).values
    assert [a["iteration"] for a in values["attempts"]] == [0, 1, 2, 3]
    assert values["answer"] == values["attempts"][-1]["draft"]
