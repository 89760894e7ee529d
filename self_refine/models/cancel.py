"""Model calls stopped at once when the program is told to stop (Ctrl-C, SIGTERM).

`cancel_calls()` is process-wide: from then on no model call of a run watched by
`StopNewCalls` starts (a callback that refuses each call as it begins, for every kind
of model), and the
embedded model stops writing within a token (`models/local.py`); each such call raises
`CallCancelled`, so that a step cut short writes nothing and a resume runs it again.
The command line cancels when a run is interrupted (`cli/interrupt.py`).

`cancel_scope` does the same for the calls of one block only: a step of candidates
stops its other branches' calls once one is verified (`nodes/first_verified.py`).
Every call that goes through `models/calls.model_errors` checks before it starts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

__all__ = [
    "CallCancelled",
    "CallScope",
    "StopNewCalls",
    "cancel_calls",
    "cancel_scope",
    "calls_cancelled",
    "check_cancelled",
    "note_reply",
    "process_cancelled",
]

_CANCELLED = threading.Event()
_SCOPE: ContextVar[CallScope | None] = ContextVar("self_refine_call_scope", default=None)


class CallScope:
    """The calls of one block, stopped together once `stop` is set; the replies that came
    in before (`replies`: each one's text and usage), so that what they cost is kept."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.replies: list[tuple[str, Any]] = []


class CallCancelled(BaseException):
    """A model call stopped or refused because the program is stopping.

    A `BaseException`, as `KeyboardInterrupt` is: no handler of model errors
    (a critique's fallback to plain text, a retry) takes it for a bad reply.
    """


def cancel_calls(cancelled: bool = True) -> None:
    """Stop every model call of this process (False: let calls run again)."""
    if cancelled:
        _CANCELLED.set()
    else:
        _CANCELLED.clear()


def calls_cancelled() -> bool:
    """True once the program is stopping its model calls, or the calls of this scope."""
    scope = _SCOPE.get()
    return _CANCELLED.is_set() or (scope is not None and scope.stop.is_set())


def process_cancelled() -> bool:
    """True once the whole program is stopping its model calls (not only a scope's)."""
    return _CANCELLED.is_set()


def check_cancelled() -> None:
    """Raise CallCancelled when the program is stopping its model calls, or this scope's."""
    if _CANCELLED.is_set():
        raise CallCancelled("the run was interrupted")
    scope = _SCOPE.get()
    if scope is not None and scope.stop.is_set():
        raise CallCancelled("the calls of this scope were stopped")


@contextmanager
def cancel_scope(stop: threading.Event) -> Iterator[CallScope]:
    """Stop the model calls made inside the block (and the threads and tasks it starts)
    once `stop` is set, as `cancel_calls` stops every call of the process."""
    scope = CallScope(stop)
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def note_reply(text: str, usage: Any) -> None:
    """Record a reply that came in, in the block's scope (if any): its calls may yet stop."""
    scope = _SCOPE.get()
    if scope is not None:
        scope.replies.append((text, usage))


class StopNewCalls(BaseCallbackHandler):
    """A callback handler that refuses every model call, before its request is sent, once
    `cancel_calls()` was called: put it in a run's `callbacks`.

    It takes only model starts: LangChain hands a run's handlers every event of every
    runnable inside it (a graph step, each node, each parser: a dozen per refine
    iteration), and skips a handler for the kinds it ignores."""

    raise_error = True
    ignore_chain = True
    ignore_agent = True
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        """Refuse the call when the program is stopping."""
        check_cancelled()

    def on_llm_start(self, serialized: Any, prompts: Any, **kwargs: Any) -> None:
        """Refuse the call when the program is stopping."""
        check_cancelled()
