"""Model calls stopped at once when the program is told to stop (Ctrl-C, SIGTERM).

`cancel_calls()` is process-wide: from then on no model call of a run watched by
`StopNewCalls` starts (a callback that refuses each call as it begins, for every kind
of model), and the
embedded model stops writing within a token (`models/local.py`); each such call raises
`CallCancelled`, so that a step cut short writes nothing and a resume runs it again.
The command line cancels when a run is interrupted (`cli/interrupt.py`).
"""

from __future__ import annotations

import threading
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

__all__ = ["CallCancelled", "StopNewCalls", "cancel_calls", "calls_cancelled", "check_cancelled"]

_CANCELLED = threading.Event()


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
    """True once the program is stopping its model calls."""
    return _CANCELLED.is_set()


def check_cancelled() -> None:
    """Raise CallCancelled when the program is stopping its model calls."""
    if _CANCELLED.is_set():
        raise CallCancelled("the run was interrupted")


class StopNewCalls(BaseCallbackHandler):
    """A callback handler that refuses every model call, before its request is sent, once
    `cancel_calls()` was called: put it in a run's `callbacks`."""

    raise_error = True

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        """Refuse the call when the program is stopping."""
        check_cancelled()

    def on_llm_start(self, serialized: Any, prompts: Any, **kwargs: Any) -> None:
        """Refuse the call when the program is stopping."""
        check_cancelled()
