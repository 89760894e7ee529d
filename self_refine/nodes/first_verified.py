"""A step of candidates that ends at its first verified candidate (`first_verified`).

The branches of one step share a stop (a `threading.Event`): the graph's `StepStops`
holds one per step (the thread, the graph and the checkpoint the step runs from, which
LangGraph gives every task of a step in `Runtime.execution_info`) while its branches
run, and lets it go when the last of them ends (each branch is sent its step's
`width`) or when the graph's next step of candidates on that thread starts (one left
by a run stopped midway). A branch whose candidate the verifiers pass sets it; the
model calls of the other branches then stop (`models/cancel.cancel_scope`: no call
starts, the local model stops writing within a token), and each of those branches
records its candidate as stopped instead of failing, with what its replies that came
in wrote and cost (a draft whose critique never started). The kept candidate
is the verified one (`nodes/ranking.best_candidate` ranks a verified reply first), so
the step's answer is what waiting for every branch would have kept, short of a tie
broken by the index. A call to a server already waiting for its reply is not cut
short: its branch is stopped when the call returns.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from langgraph.runtime import ExecutionInfo, Runtime

from self_refine.drafts import Candidate, add_usage, place_of, placed
from self_refine.langgraph_private import graph_namespace
from self_refine.models.cancel import (
    CallCancelled,
    CallScope,
    cancel_scope,
    process_cancelled,
)
from self_refine.models.hygiene import rejected
from self_refine.settings.fields import RefineContext
from self_refine.state import STOPPED

__all__ = ["StepStops", "first_verified", "first_verified_async"]

BranchBody = Callable[[Any, Runtime[RefineContext]], dict[str, Any]]
AsyncBranchBody = Callable[[Any, Runtime[RefineContext]], Awaitable[dict[str, Any]]]


@dataclass
class _Step:
    stop: threading.Event = field(default_factory=threading.Event)
    left: int = 1
    """The step's branches that have not ended yet."""


class StepStops:
    """The stops of one graph's steps of candidates, each held while its branches run."""

    def __init__(self) -> None:
        self._steps: dict[tuple[Any, ...], _Step] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._steps)

    @contextmanager
    def joined(self, task: ExecutionInfo | None, width: int) -> Iterator[threading.Event]:
        """The stop of the step `task` runs in, which has `width` branches, while it runs
        (a task LangGraph told nothing of has a stop of its own)."""
        if task is None:
            yield threading.Event()
            return
        thread = task.thread_id
        graph = (thread, graph_namespace(task.checkpoint_ns))  # nested: the graph's path
        key = (*graph, task.checkpoint_id)
        with self._lock:
            step = self._steps.get(key)
            if step is None:
                if thread is not None:  # a graph's thread runs one step at a time
                    for over in [k for k in self._steps if k[:2] == graph]:
                        del self._steps[over]
                step = self._steps[key] = _Step(left=width)
        try:
            yield step.stop
        finally:
            with self._lock:
                step.left -= 1
                if step.left <= 0 and self._steps.get(key) is step:
                    del self._steps[key]


def _stopped(state: Any, scope: CallScope) -> dict[str, Any]:
    """The branch's candidate, stopped: what its replies that came in wrote and cost (in a
    run that samples or searches, at the node of the tree it was sent to be)."""
    written = scope.replies[-1][0] if scope.replies else ""
    record: Candidate = {
        "index": state["candidate"],
        "draft": "",
        "critique": {},
        "usage": add_usage(*(usage for _, usage in scope.replies)),
        "verified": None,
        "checked": None,
        "rejected": rejected(
            STOPPED, "another candidate of this step passed the verifiers first", written
        ),
    }
    return {"branches": [placed(record, place_of(state))]}


def _verified(writes: dict[str, Any]) -> bool:
    return any(c.get("verified") is True for c in writes.get("branches") or ())


def first_verified(branch: BranchBody, stops: StepStops) -> BranchBody:
    """The candidate branch, ending early when another branch of its step verified first
    (with the run's `first_verified` setting), and stopping the others once it verifies."""

    def run(state: Any, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        if not runtime.context.first_verified:
            return branch(state, runtime)
        with stops.joined(runtime.execution_info, state.get("width", 1)) as stop:
            try:
                with cancel_scope(stop) as scope:
                    writes = branch(state, runtime)
            except CallCancelled:
                if not stop.is_set() or process_cancelled():
                    raise
                return _stopped(state, scope)
            if _verified(writes):
                stop.set()
            return writes

    return run


def first_verified_async(branch: AsyncBranchBody, stops: StepStops) -> AsyncBranchBody:
    """Async twin of first_verified()."""

    async def run(state: Any, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        if not runtime.context.first_verified:
            return await branch(state, runtime)
        with stops.joined(runtime.execution_info, state.get("width", 1)) as stop:
            try:
                with cancel_scope(stop) as scope:
                    writes = await branch(state, runtime)
            except CallCancelled:
                if not stop.is_set() or process_cancelled():
                    raise
                return _stopped(state, scope)
            if _verified(writes):
                stop.set()
            return writes

    return run
