"""New input on a thread that already holds a refinement."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from self_refine import ConfigError, arefine, create_self_refine_graph, refine

DOG = "Write a sentence using the words: dog, park."
RAIN = "Write a poem using the words: rain, roof."


def test_new_task_on_a_finished_thread_starts_over() -> None:
    saver = InMemorySaver()
    first = refine(DOG, model="offline", checkpointer=saver, thread_id="t")
    alone = refine(RAIN, model="offline", max_iterations=1)

    again = refine(RAIN, model="offline", checkpointer=saver, thread_id="t", max_iterations=1)

    assert first["stop_reason"] == "critic_done"
    assert again["attempts"] == alone["attempts"]
    assert again["iterations"] == 1 and again["usage"] == alone["usage"]
    assert "rain" in again["answer"] and "dog" not in again["answer"]


def test_new_draft_on_a_finished_thread_is_critiqued_alone() -> None:
    saver = InMemorySaver()
    refine(DOG, model="offline", checkpointer=saver, thread_id="t")
    result = asyncio.run(
        arefine(
            "Write about: sun, sea.",
            draft="The sun and the sea.",
            model="offline",
            checkpointer=saver,
            thread_id="t",
        )
    )
    assert [a["draft"] for a in result["attempts"]] == ["The sun and the sea."]
    assert result["stop_reason"] == "critic_done" and result["iterations"] == 0


def test_earlier_runs_stay_in_the_thread_history() -> None:
    saver = InMemorySaver()
    refine(DOG, model="offline", checkpointer=saver, thread_id="t")
    refine(RAIN, model="offline", checkpointer=saver, thread_id="t")
    graph = create_self_refine_graph("offline").compile(checkpointer=saver)
    answers = {
        s.values.get("answer")
        for s in graph.get_state_history({"configurable": {"thread_id": "t"}})
    }
    assert any(a and "dog" in a for a in answers) and any(a and "rain" in a for a in answers)


def test_new_input_on_an_unfinished_thread_is_refused() -> None:
    saver = InMemorySaver()
    graph = create_self_refine_graph("offline").compile(
        checkpointer=saver, interrupt_before=["refine"]
    )
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"task": DOG}, config)
    with pytest.raises(ConfigError, match="unfinished refinement: continue it"):
        graph.invoke({"task": RAIN}, config)


def _interrupted(saver: Any) -> tuple[Any, dict[str, Any]]:
    graph = create_self_refine_graph("offline", critics="human").compile(checkpointer=saver)
    config: dict[str, Any] = {"configurable": {"thread_id": "t"}}
    graph.invoke({"task": DOG}, config)
    return graph, config


@pytest.mark.parametrize("store", ["memory", "sqlite"])
@pytest.mark.parametrize("bad", [{"task": RAIN}, {"task": ""}, {"task": "  "}])
def test_refused_input_leaves_an_unfinished_thread_as_it_was(
    store: str, bad: dict[str, Any], tmp_path: Path
) -> None:
    with contextlib.ExitStack() as stack:
        if store == "memory":
            saver: Any = InMemorySaver()
        else:
            saver = stack.enter_context(SqliteSaver.from_conn_string(str(tmp_path / "c.db")))
        graph, config = _interrupted(saver)
        before = list(graph.get_state_history(config))
        with pytest.raises(ConfigError):
            graph.invoke(bad, config)
        after = graph.get_state(config)
        assert len(list(graph.get_state_history(config))) == len(before)
        assert after.values["task"] == DOG and after.next == ("critique",)
        assert after.interrupts, "the person's question must still be pending"
        resumed = graph.invoke(Command(resume="Mention the weather."), config)
        assert "__interrupt__" in resumed or resumed.get("stop_reason")


def test_empty_task_on_a_finished_thread_keeps_its_task() -> None:
    saver = InMemorySaver()
    graph = create_self_refine_graph("offline").compile(checkpointer=saver)
    config: dict[str, Any] = {"configurable": {"thread_id": "t"}}
    graph.invoke({"task": DOG}, config)
    count = len(list(graph.get_state_history(config)))
    with pytest.raises(ConfigError, match="task is empty"):
        graph.invoke({"task": ""}, config)
    assert graph.get_state(config).values["task"] == DOG
    assert len(list(graph.get_state_history(config))) == count


def test_refused_input_through_ainvoke_leaves_the_thread_as_it_was() -> None:
    graph, config = _interrupted(InMemorySaver())
    count = len(list(graph.get_state_history(config)))
    with pytest.raises(ConfigError, match="unfinished refinement"):
        asyncio.run(graph.ainvoke({"task": RAIN}, config))
    assert graph.get_state(config).values["task"] == DOG
    assert len(list(graph.get_state_history(config))) == count
