"""A run stopped mid-way and continued: what the door lets it change, and when it is over."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from self_refine import ConfigError, RefineContext, create_self_refine_graph
from tests.nodes.test_search import REFERENCE, TASK, _drafts, _model, _settings

SEARCH = _settings("search", candidates=3)


def _tree(values: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(d["node"], d["parent"], d["draft"]) for d in _drafts(values)]


def _stopped_after_the_first_pick() -> tuple[Any, Any, dict[str, Any]]:
    model = _model()
    graph = create_self_refine_graph(model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "s"}}
    graph.invoke(
        {"task": TASK, "reference": REFERENCE}, config, context=SEARCH, interrupt_after=["pick"]
    )
    assert graph.get_state(config).next  # stopped mid-way, after the first step's pick
    return graph, model, config


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
    graph, model, config = _stopped_after_the_first_pick()
    checkpoints = len(list(graph.get_state_history(config)))
    asked = len(model.requests)

    with pytest.raises(ConfigError) as refused:
        graph.invoke(None, config, context=changes)

    message = str(refused.value)
    assert "a continued run cannot change" in message and "new thread" in message
    assert all(name in message for name in named)
    assert "\n" not in message
    assert len(list(graph.get_state_history(config))) == checkpoints
    assert len(model.requests) == asked


def test_a_continued_search_with_its_own_settings_plans_what_an_uninterrupted_one_did() -> None:
    whole = create_self_refine_graph(_model()).compile()
    straight = whole.invoke({"task": TASK, "reference": REFERENCE}, context=SEARCH)
    graph, _, config = _stopped_after_the_first_pick()

    graph.invoke(None, config, context={"strategy": "search", "candidates": 3})  # as it began
    while graph.get_state(config).next:
        graph.invoke(None, config)

    assert _tree(graph.get_state(config).values) == _tree(straight)


def test_a_continued_refine_run_cannot_turn_into_a_search() -> None:
    graph = create_self_refine_graph(_model()).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "r"}}
    refine = {**SEARCH, "strategy": "refine", "candidates": 1}
    graph.invoke(
        {"task": TASK, "reference": REFERENCE}, config, context=refine, interrupt_before=["refine"]
    )

    with pytest.raises(ConfigError, match=r"strategy='refine' -> 'search', candidates=1 -> 3"):
        graph.invoke(None, config, context={"strategy": "search", "candidates": 3})
    assert graph.get_state(config).next == ("refine",)


def test_new_input_is_refused_while_a_step_of_candidates_waits_for_its_pick() -> None:
    graph = create_self_refine_graph(_model()).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "b"}}
    written = 0
    # Leave the stream once every candidate of the first step has written, before `pick`.
    for update in graph.stream(
        {"task": TASK, "reference": REFERENCE}, config, context=SEARCH, stream_mode="updates"
    ):
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
