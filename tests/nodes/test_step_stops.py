"""The stops a step of candidates shares are held while its branches run, not kept for
the life of the process."""

from __future__ import annotations

import itertools

from langgraph.runtime import ExecutionInfo

from self_refine.nodes.first_verified import StepStops

_tasks = itertools.count()


def _task(thread: str | None, checkpoint: str, graph: str = "") -> ExecutionInfo:
    """What LangGraph tells a branch of the step run from `checkpoint` (in a nested graph,
    `graph` is the namespace of the parent's task that runs it)."""
    own = f"candidate:{next(_tasks)}"
    namespace = f"{graph}|{own}" if graph else own
    return ExecutionInfo(
        checkpoint_id=checkpoint, checkpoint_ns=namespace, task_id=own, thread_id=thread
    )


def test_the_branches_of_a_step_share_its_stop_until_the_last_one_ends() -> None:
    stops = StepStops()
    with stops.joined(_task("t", "step-1"), 3) as first:
        with stops.joined(_task("t", "step-1"), 3) as second:
            first.set()
            assert second is first and second.is_set()
        assert len(stops) == 1
    # A branch that starts after the others ended still finds the step's stop set ...
    with stops.joined(_task("t", "step-1"), 3) as third:
        assert third is first
    # ... and once the last of the three has ended, nothing of the step is kept.
    assert len(stops) == 0


def test_a_step_left_unfinished_is_let_go_when_its_thread_starts_the_next() -> None:
    stops = StepStops()
    with stops.joined(_task("t", "step-1"), 3):
        pass  # two branches never ran: the run was stopped midway
    with stops.joined(_task("other", "step-1"), 2):
        assert len(stops) == 2  # another thread's step is its own
    with stops.joined(_task("t", "step-2"), 2) as stop:
        assert not stop.is_set()
        assert len(stops) == 2  # thread t's unfinished step is gone, "other"'s stays


def test_nested_graphs_on_one_thread_keep_their_steps_apart() -> None:
    """Two runs of the graph nested in one parent step (a parent's `Send`s) share the thread;
    a step of one lets go no step of the other."""
    stops = StepStops()
    with stops.joined(_task("t", "a-1", graph="refine:1"), 2) as a:
        with stops.joined(_task("t", "b-1", graph="refine:2"), 2) as b:
            assert a is not b
            assert len(stops) == 2
        with stops.joined(_task("t", "a-1", graph="refine:1"), 2) as again:
            assert again is a


def test_a_task_langgraph_told_nothing_of_has_a_stop_of_its_own() -> None:
    stops = StepStops()
    with stops.joined(None, 2) as first, stops.joined(None, 2) as second:
        assert first is not second
    assert len(stops) == 0
