"""A step writes its bookkeeping flags only when they change, and the state reads the same."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from self_refine import RefineContext, create_self_refine_graph
from tests.fakes import FakeChatModel, critique

TASK = "Write one sentence about a dog in a park using the words: dog, frisbee, park, catch."
FLAGS = {"draft_problems", "draft_rejected", "ask_again", "stop_reason", "fan_out"}
ECHO = f'<attempt n="0">\n{TASK}\n</attempt>'


def _steps(refiner: list[str]) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """Each node's update of a run of three refine steps, and the state it ended with."""
    low = critique(["Add frisbee."], score=0.2)
    model = FakeChatModel(
        script={"generator": ["A dog in a park."], "critic": [low] * 4, "refiner": refiner}
    )
    builder = create_self_refine_graph(model, settings=RefineContext(max_iterations=3))
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    steps = [next(iter(chunk.items())) for chunk in graph.stream({"task": TASK}, config)]
    return steps, graph.get_state(config).values


def test_steps_that_change_no_flag_write_none_and_the_state_reads_the_same() -> None:
    steps, result = _steps(["A dog in a park at noon.", "A dog in a sunny park.", "A dog here."])
    nodes = [node for node, _ in steps]
    assert nodes == ["begin", "generate", *["critique", "refine"] * 3, "critique", "finalize"]
    first_draft, first_critique = steps[1][1], steps[2][1]
    assert {"draft_problems", "draft_rejected", "ask_again"} <= first_draft.keys()
    assert first_draft["stop_reason"] is None  # a new thread's first: the key was missing
    later = [update for node, update in steps[3:-2]]
    assert all(not FLAGS & update.keys() for update in later), later
    assert "fan_out" not in first_critique  # the width begin wrote
    assert steps[-2][1]["stop_reason"] == "max_iterations"  # the step that stops says so
    assert result["stop_reason"] == "max_iterations"
    assert result["iterations"] == 3


def test_a_flag_is_written_again_when_a_step_changes_it_back() -> None:
    replies = [ECHO, "A dog catches a frisbee.", "A dog catches it.", "A dog catches it here."]
    steps, result = _steps(replies)
    refines = [update for node, update in steps if node == "refine"]
    assert len(refines) == 4  # three refine steps, the first asked twice
    rejected, kept, clean, _ = refines
    assert rejected["ask_again"] is True
    assert [r["reason"] for r in rejected["draft_rejected"]] == ["echo"]
    assert kept["ask_again"] is False  # changed back: written
    assert "draft_rejected" not in kept  # the same record, kept until the critique
    assert clean["draft_rejected"] == []  # the next draft starts with none
    assert "ask_again" not in clean
    assert [r["reason"] for r in result["attempts"][1]["rejected"]] == ["echo"]
    assert "rejected" not in result["attempts"][2]
