"""A step of many candidates never waits on itself: every branch and its reply's own task
have a thread (or slot) to run on, whatever the machine's core count.

(An asynchronous run is unbounded unless its caller bounds it; its sync fake model's
calls would share the event loop's default pool, so only the bound is checked there.)"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from self_refine import ConfigError, RefineContext, create_self_refine_graph
from self_refine.graphs.checked import tasks_at_once
from self_refine.settings.fields import CANDIDATES_LIMIT
from tests.fakes import FakeChatModel, critique

WIDTH = CANDIDATES_LIMIT  # more branches than Python's default pool has threads below 12 cores


def _all_at_once() -> FakeChatModel:
    """Each draft reply is held until all WIDTH of the step's replies are being asked at
    once: a run whose branches take every thread waits for its replies' tasks forever."""
    meeting = threading.Barrier(WIDTH, timeout=30)

    def draft(messages: list[Any]) -> str:
        meeting.wait()
        return "A draft."

    return FakeChatModel(
        script={"generator": [draft], "refiner": [draft], "critic": [critique(["ok"], score=0.9)]}
    )


def _run(go: Any) -> tuple[dict[str, Any], list[BaseException]]:
    """Run `go` in a daemon thread; what it returned or raised, or a failure after 60 s."""
    result: dict[str, Any] = {}
    raised: list[BaseException] = []

    def body() -> None:
        try:
            result.update(go())
        except BaseException as error:  # noqa: BLE001 - handed to the test
            raised.append(error)

    runner = threading.Thread(target=body, daemon=True)
    runner.start()
    runner.join(60)
    assert not runner.is_alive(), "the run is stuck: its branches wait for tasks with no thread"
    return result, raised


def test_every_candidate_of_a_step_is_asked_at_once() -> None:
    model = _all_at_once()
    graph = create_self_refine_graph(model).compile()
    settings = RefineContext(candidates=WIDTH, strategy="sample", max_iterations=1)
    result, raised = _run(lambda: graph.invoke({"task": "Write a sentence."}, context=settings))
    assert raised == []
    assert result["answer"] == "A draft."
    drafts = [s for s in model.requests if s.role in ("generator", "refiner")]
    assert len(drafts) >= WIDTH and len(drafts) % WIDTH == 0  # each step met at the barrier


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_caller_bound_too_low_for_the_candidates_is_refused_before_any_call(
    asynchronous: bool,
) -> None:
    model = _all_at_once()
    graph = create_self_refine_graph(model).compile()
    settings = RefineContext(candidates=4, strategy="sample", max_iterations=1)
    with pytest.raises(ConfigError, match="max_concurrency=3 is too few for a run of 4 candidates"):
        if asynchronous:
            asyncio.run(graph.ainvoke({"task": "t"}, {"max_concurrency": 3}, context=settings))
        else:
            graph.invoke({"task": "t"}, {"max_concurrency": 3}, context=settings)
    assert model.requests == []
    assert tasks_at_once(4) == 9
    # Enough is kept as given.
    model = FakeChatModel(script={"*": ["A draft."], "critic": [critique(["ok"], score=0.9)]})
    graph = create_self_refine_graph(model).compile()
    done = graph.invoke({"task": "t"}, {"max_concurrency": 9}, context=settings)
    assert done["answer"] == "A draft."


def test_a_bound_of_one_still_runs_a_run_of_one_reply_a_step() -> None:
    model = FakeChatModel(
        script={"*": ["A draft.", "A better draft."], "critic": [critique(["more"], score=0.5)]}
    )
    graph = create_self_refine_graph(model).compile()
    settings = RefineContext(strategy="refine", max_iterations=1)
    result, raised = _run(
        lambda: graph.invoke({"task": "t"}, {"max_concurrency": 1}, context=settings)
    )
    assert raised == []
    assert result["iterations"] == 1 and result["answer"]
