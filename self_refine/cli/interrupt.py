"""Ctrl-C and SIGTERM during a run: its model calls stopped, the program out within seconds.

While a run streams (`stoppable`), SIGINT and SIGTERM stop every model call of the
process (`models/cancel.py`: no call starts, the local model stops writing within a
token) and raise `Interrupted` in the main thread, so the run unwinds and saves what
its finished steps and branches wrote. A call to a server that is still waiting for
its reply cannot be cut short from here; if unwinding takes longer than `GRACE_SECONDS`,
or a second signal comes, the program says how to continue and exits at once (the
database keeps every committed write; a thread's lock goes with the process). Once
stopped, the stop holds until the process ends: leaving the block, however it is left,
neither lets calls start again nor disarms the exit.

A block that runs an event loop (a batch) runs it with `_Stop.run`: there the signal
cancels the loop's main task instead of raising inside whichever task was running, so
the tasks unwind as asyncio cancels them and none is left with an exception nobody
retrieves (which asyncio would print, with its traceback, as the program exits).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

__all__ = ["GRACE_SECONDS", "Interrupted", "stoppable"]

T = TypeVar("T")

GRACE_SECONDS = 2.0
"""How long a stopped run may take to unwind before the program exits without waiting."""


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal (SIGINT: Ctrl-C, or SIGTERM)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a process a signal ended."""
        return 128 + self.signum


class _Stop:
    """What the signal handler does, once: cancel the calls, arm the deadline, raise."""

    def __init__(self, note: str) -> None:
        self.note = note
        self.said = threading.Lock()
        self.deadline: threading.Timer | None = None
        self.signum = 0
        """The first signal that stopped the run (0: none yet)."""
        self._main: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None

    def say(self, signum: int) -> None:
        """Print how to continue, once, whoever gets here first."""
        if self.said.acquire(blocking=False):
            name = "interrupted" if signum == signal.SIGINT else f"stopped ({_name(signum)})"
            print(f"\nself-refine: {name}; {self.note}", file=sys.stderr, flush=True)

    def handle(self, signum: int, frame: Any) -> None:
        from self_refine.models.cancel import cancel_calls

        cancel_calls()
        if self.deadline is not None:  # told twice: the run is unwinding already
            self._exit_now(self.signum)
        # The run unwinds while branches in worker threads end: LangGraph's executor is
        # shut down by then, and its callback for a branch that ends afterwards fails in
        # `concurrent.futures`, which logs a traceback of the stop it carries. The stop
        # is said once, by `say`; the program is on its way out.
        logging.getLogger("concurrent.futures").disabled = True
        if self.deadline is None:
            self.signum = signum
            self.deadline = threading.Timer(GRACE_SECONDS, self._exit_now, (signum,))
            self.deadline.daemon = True
            self.deadline.start()
        if self._main is not None:
            loop, task = self._main
            loop.call_soon_threadsafe(task.cancel)
            return
        raise Interrupted(signum)

    def run(self, main: Coroutine[Any, Any, T]) -> T:
        """`asyncio.run(main)`, which a signal cancels; then raise `Interrupted`."""

        async def watched() -> T | None:
            task = asyncio.current_task()
            assert task is not None
            self._main = (asyncio.get_running_loop(), task)
            try:
                return await main
            except BaseException:
                if self.signum:  # what the cancelled tasks raised on their way out
                    return None
                raise
            finally:
                self._main = None

        result = asyncio.run(watched())
        if self.signum:
            raise Interrupted(self.signum)
        return cast(T, result)

    def _exit_now(self, signum: int) -> None:
        self.say(signum)
        os._exit(128 + signum)


def _name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@contextmanager
def stoppable(note: str) -> Iterator[_Stop]:
    """Handle SIGINT and SIGTERM for the block as the module says; `note` says how to go on.

    The block catches `Interrupted`, calls `say(signum)` and returns its exit code; once
    a signal came, the program is expected to end, within `GRACE_SECONDS` at the latest.
    """
    from self_refine.models.cancel import cancel_calls

    stop = _Stop(note)
    cancel_calls(False)
    previous: dict[int, Any] = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, stop.handle)
    except ValueError:  # not the main thread: signals stay as they were
        pass
    try:
        yield stop
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if stop.deadline is None:  # not stopped: calls may run again
            cancel_calls(False)
