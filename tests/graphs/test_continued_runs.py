"""A run stopped mid-way and continued: what the door lets it change, and when it is over."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from self_refine import ConfigError, RefineContext, create_self_refine_graph

TASK = "Write one sentence about a dog in a park using the words: dog, frisbee, park, catch."
REFERENCE = {"concepts": ["dog", "frisbee", "park", "catch"]}
SEARCH: dict[str, Any] = {
    "strategy": "search",
    "candidates": 3,
    "critics": ["concepts"],
    "profile": "constrained_generation",
    "max_iterations": 4,
}
START = {"task": TASK, "reference": REFERENCE}


class _ModelCalls(BaseCallbackHandler):
    """Counts the model calls of the runs it is handed to."""

    def __init__(self) -> None:
        self.count = 0

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.count += 1


def _tree(values: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Every draft of the run (kept attempts and the candidates beside them) as
    (node, parent, draft), in node order."""
    drafts = [d for a in values["attempts"] for d in (a, *a.get("candidates", []))]
    return sorted((d["node"], d["parent"], d["draft"]) for d in drafts)


def _stopped_after_the_first_pick() -> tuple[Any, dict[str, Any]]:
    graph = create_self_refine_graph("offline").compile(checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": "s"}}
    graph.invoke(START, config, context=SEARCH, interrupt_after=["pick"])
    assert graph.get_state(config).next  # stopped mid-way, after the first step's pick
    return graph, config


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"strategy": "refine", "candidates": 1}, ["strategy='search' -> 'refine'", "candidates"]),
        ({"candidates": 2}, ["candidates=3 -> 2"]),
        (RefineContext(**{**SEARCH, "critics": ("concepts",), "strategy": "sample"}), ["strategy"]),
    ],
    ids=["refine", "fewer-candidates", "whole-context"],
)
def test_a_continued_search_that_changes_its_shape_is_refused_before_anything_is_written(
    changes: Any, named: list[str]
) -> None:
    graph, config = _stopped_after_the_first_pick()
    checkpoints = len(list(graph.get_state_history(config)))
    calls = _ModelCalls()

    with pytest.raises(ConfigError) as refused:
        graph.invoke(None, {**config, "callbacks": [calls]}, context=changes)

    message = str(refused.value)
    assert "a continued run cannot change" in message and "new thread" in message
    assert all(name in message for name in named)
    assert "\n" not in message
    assert len(list(graph.get_state_history(config))) == checkpoints
    assert calls.count == 0


def test_a_continued_search_with_its_own_settings_plans_what_an_uninterrupted_one_did() -> None:
    straight = create_self_refine_graph("offline").compile().invoke(START, context=SEARCH)
    graph, config = _stopped_after_the_first_pick()

    graph.invoke(None, config, context={"strategy": "search", "candidates": 3})  # as it began
    while graph.get_state(config).next:
        graph.invoke(None, config)

    assert _tree(graph.get_state(config).values) == _tree(straight)


def test_a_continued_refine_run_cannot_turn_into_a_search() -> None:
    graph = create_self_refine_graph("offline").compile(checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": "r"}}
    refine = {**SEARCH, "strategy": "refine", "candidates": 1}
    graph.invoke(START, config, context=refine, interrupt_before=["refine"])

    with pytest.raises(ConfigError, match=r"strategy='refine' -> 'search', candidates=1 -> 3"):
        graph.invoke(None, config, context={"strategy": "search", "candidates": 3})
    assert graph.get_state(config).next == ("refine",)


def test_new_input_is_refused_while_a_step_of_candidates_waits_for_its_pick() -> None:
    graph = create_self_refine_graph("offline").compile(checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": "b"}}
    written = 0
    # Leave the stream once every candidate of the first step has written, before `pick`.
    for update in graph.stream(START, config, context=SEARCH, stream_mode="updates"):
        written += "candidate" in update
        if written == 3:
            break
    state = graph.get_state(config)
    assert state.next == () and [t.name for t in state.tasks] == ["candidate"] * 3

    with pytest.raises(ConfigError, match="unfinished refinement: continue it"):
        graph.invoke({"task": "A different task"}, config)

    assert graph.get_state(config).values["task"] == TASK
    while graph.get_state(config).next or graph.get_state(config).tasks:
        graph.invoke(None, config)
    assert graph.get_state(config).values["stop_reason"]


def _without_its_task(db: Path, thread_id: str, how: str) -> None:
    """Remove a stopped thread's input from the database as `how` says: the writes of its
    `task`, or the first checkpoint (the one those writes belong to)."""
    with sqlite3.connect(db) as connection:
        if how == "task writes":
            removed = connection.execute(
                "DELETE FROM writes WHERE thread_id = ? AND channel = 'task'", (thread_id,)
            ).rowcount
        else:
            removed = connection.execute(
                "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id = (SELECT "
                "MIN(checkpoint_id) FROM checkpoints WHERE thread_id = ?)",
                (thread_id, thread_id),
            ).rowcount
        assert removed == 1


@pytest.mark.parametrize("how", ["task writes", "first checkpoint"])
def test_a_thread_that_lost_its_task_is_refused_before_anything_is_written(
    tmp_path: Path, how: str
) -> None:
    db = tmp_path / "c.sqlite"
    config: dict[str, Any] = {"configurable": {"thread_id": "damaged"}}
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = create_self_refine_graph("offline").compile(checkpointer=saver)
        graph.invoke(START, config, context=SEARCH, interrupt_after=["pick"])
    _without_its_task(db, "damaged", how)
    calls = _ModelCalls()

    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = create_self_refine_graph("offline").compile(checkpointer=saver)
        assert graph.get_state(config).next and not graph.get_state(config).values.get("task")
        checkpoints = len(list(graph.get_state_history(config)))
        with pytest.raises(ConfigError) as refused:
            graph.invoke(None, {**config, "callbacks": [calls]})
        assert len(list(graph.get_state_history(config))) == checkpoints

    message = str(refused.value)
    assert "thread damaged is damaged: its task is missing" in message
    assert "new thread" in message and "\n" not in message
    assert calls.count == 0


def _finished_thread() -> tuple[Any, dict[str, Any], dict[str, Any]]:
    graph = create_self_refine_graph("offline").compile(checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": "t"}}
    result = graph.invoke(START, config, context={"max_iterations": 1})
    return graph, config, result


def test_time_travel_to_the_input_checkpoint_replays_the_run_as_langgraph_does() -> None:
    graph, config, first = _finished_thread()
    *_, start = graph.get_state_history(config)
    assert start.metadata["source"] == "input"

    replayed = graph.invoke(None, start.config, context={"max_iterations": 1})

    assert replayed["answer"] == first["answer"]
    assert [a["draft"] for a in replayed["attempts"]] == [a["draft"] for a in first["attempts"]]


@pytest.mark.parametrize(
    ("as_node", "missing"),
    [
        ("critique", "no critiqued draft for its refine step"),
        ("refine", "no draft for its critique"),
    ],
)
def test_an_update_before_any_attempt_says_what_the_next_step_is_missing(
    as_node: str, missing: str
) -> None:
    graph, config, _ = _finished_thread()
    before_any_attempt = [s for s in graph.get_state_history(config) if s.next == ("generate",)]
    forked = graph.update_state(before_any_attempt[0].config, {}, as_node=as_node)
    calls = _ModelCalls()

    with pytest.raises(ConfigError, match=missing) as refused:
        graph.invoke(None, {**forked, "callbacks": [calls]})

    assert "as_node='generate'" in str(refused.value)
    assert calls.count == 0


def test_an_update_at_the_input_checkpoint_says_the_input_was_never_read() -> None:
    graph, config, _ = _finished_thread()
    *_, start = graph.get_state_history(config)
    forked = graph.update_state(start.config, {}, as_node="critique")

    with pytest.raises(ConfigError, match="before the run read its input"):
        graph.invoke(None, forked)


def test_an_update_as_generate_with_a_draft_runs_on_from_that_draft() -> None:
    graph, config, _ = _finished_thread()
    before_any_attempt = [s for s in graph.get_state_history(config) if s.next == ("generate",)]
    forked = graph.update_state(
        before_any_attempt[0].config, {"draft": "The dog ran."}, as_node="generate"
    )

    result = graph.invoke(None, forked, context={"max_iterations": 1})

    assert result["attempts"][0]["draft"] == "The dog ran."
