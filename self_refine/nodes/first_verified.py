"""A step of candidates that ends at its first verified candidate (`first_verified`).

The branches of one step share a stop (a `threading.Event`, keyed by the step: the
thread and the checkpoint the step runs from, which LangGraph gives every task of a
step in `checkpoint_map`). A branch whose candidate the verifiers pass sets it; the
model calls of the other branches then stop (`models/cancel.cancel_scope`: no call
starts, the local model stops writing within a token), and each of those branches
records its candidate as stopped instead of failing, with what its replies that came
in wrote and cost (a draft whose critique never started). The kept candidate is the
verified one (`nodes/ranking.best_candidate` ranks a verified reply first), so the
step's answer is what waiting for every branch would have kept, short of a tie broken
by the index. A call to a server already waiting for its reply is not cut short: its
branch is stopped when the call returns.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.config import get_config
from langgraph.runtime import Runtime

from self_refine.context import RefineContext
from self_refine.models.cancel import (
    CallCancelled,
    CallScope,
    cancel_scope,
    process_cancelled,
)
from self_refine.models.hygiene import rejected
from self_refine.state import STOPPED, Candidate, add_usage

__all__ = ["first_verified", "first_verified_async"]

_STEPS_KEPT = 256
_STEPS: OrderedDict[tuple[Any, ...], threading.Event] = OrderedDict()
_STEPS_LOCK = threading.Lock()

Branch = Callable[[Any, Runtime[RefineContext]], dict[str, Any]]
AsyncBranch = Callable[[Any, Runtime[RefineContext]], Awaitable[dict[str, Any]]]


def _step_stop() -> threading.Event:
    """The stop the branches of the running step share."""
    configurable = get_config().get("configurable") or {}
    step = tuple(sorted((configurable.get("checkpoint_map") or {}).items()))
    key = (configurable.get("thread_id"), step)
    with _STEPS_LOCK:
        stop = _STEPS.get(key)
        if stop is None:
            stop = _STEPS[key] = threading.Event()
            while len(_STEPS) > _STEPS_KEPT:
                _STEPS.popitem(last=False)
        return stop


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
    if "node" in state:
        record["node"], record["parent"] = state["node"], state.get("parent")
    return {"branches": [record]}


def _verified(writes: dict[str, Any]) -> bool:
    return any(c.get("verified") is True for c in writes.get("branches") or ())


def first_verified(branch: Branch) -> Branch:
    """The candidate branch, ending early when another branch of its step verified first
    (with the run's `first_verified` setting), and stopping the others once it verifies."""

    def run(state: Any, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        if not runtime.context.first_verified:
            return branch(state, runtime)
        stop = _step_stop()
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


def first_verified_async(branch: AsyncBranch) -> AsyncBranch:
    """Async twin of first_verified()."""

    async def run(state: Any, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        if not runtime.context.first_verified:
            return await branch(state, runtime)
        stop = _step_stop()
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
