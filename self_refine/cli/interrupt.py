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

Around the run, `guarded` holds the signals from the first instruction of `main` to the
last, and on through the interpreter's teardown when `main` is the program: before the
run (reading the input, building the graph) a signal raises `Interrupted`, which `main`
says in one line and turns into 128 + the signal; once a run was stopped, a further
signal exits at once, with that code; once a run finished, its answer and exit code are
kept: a first signal is let pass, a second exits at once. Never a traceback, never a
death by the signal.
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

__all__ = ["GRACE_SECONDS", "Guard", "Interrupted", "guarded", "stoppable"]

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

    def __init__(self, note: str, said: threading.Lock | None = None) -> None:
        self.note = note
        self.said = said or threading.Lock()
        """Taken by whoever says the line first: it is said once a process."""
        self.deadline: threading.Timer | None = None
        self.signum = 0
        """The first signal that stopped the run (0: none yet)."""
        self._main: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None

    def say(self, signum: int) -> None:
        """Print how to continue, once, whoever gets here first."""
        if self.said.acquire(blocking=False):
            name = "interrupted" if signum == signal.SIGINT else f"stopped ({_name(signum)})"
            note = f"; {self.note}" if self.note else ""
            print(f"\nself-refine: {name}{note}", file=sys.stderr, flush=True)

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


class Guard:
    """What a signal does in `main` outside a run's `stoppable` block (see the module)."""

    def __init__(self) -> None:
        self.said = threading.Lock()
        self.signum = 0
        """The first signal (0: none yet); the program's exit code is 128 + it."""
        self.stopped = False
        """A run was stopped: a further signal exits at once."""
        self.finished = False
        """A run finished (or `main` returned): its output and exit code are kept."""
        self.deadline: threading.Timer | None = None

    def say(self, signum: int) -> None:
        """Print the one line, unless it was said already."""
        _Stop("", self.said).say(signum)

    def handle(self, signum: int, frame: Any) -> None:
        if self.signum or self.stopped:
            self._exit_now(self.signum or signum)
        self.signum = signum
        if self.finished:  # the answer is out: let the program end as it was ending
            return
        from self_refine.models.cancel import cancel_calls

        cancel_calls()
        self.deadline = threading.Timer(GRACE_SECONDS, self._exit_now, (signum,))
        self.deadline.daemon = True
        self.deadline.start()
        raise Interrupted(signum)

    def _exit_now(self, signum: int) -> None:
        self.say(signum)
        os._exit(128 + signum)


_GUARD: Guard | None = None


def _take_signals(handler: Any) -> dict[int, Any]:
    """Install `handler` for SIGINT and SIGTERM; the handlers it replaced (none off the main
    thread, where signals stay as they were)."""
    previous: dict[int, Any] = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, handler)
    except ValueError:
        pass
    return previous


@contextmanager
def guarded(program: bool) -> Iterator[Guard]:
    """Hold SIGINT and SIGTERM for `main`, as the module says.

    `program`: `main` is the process's program (its arguments are the command line's), so
    the guard stays through the interpreter's teardown; else the caller's handlers come back.
    """
    global _GUARD
    guard = Guard()
    outer = _GUARD
    _GUARD = guard
    previous = _take_signals(guard.handle)
    try:
        yield guard
    finally:
        _GUARD = outer
        guard.finished = True
        if not program:
            for number, handler in previous.items():
                signal.signal(number, handler)
            if guard.deadline is not None:
                guard.deadline.cancel()


@contextmanager
def stoppable(note: str) -> Iterator[_Stop]:
    """Handle SIGINT and SIGTERM for the block as the module says; `note` says how to go on.

    The block catches `Interrupted`, calls `say(signum)` and returns its exit code; once
    a signal came, the program is expected to end, within `GRACE_SECONDS` at the latest.
    After the block, `main`'s guard holds the signals: once stopped, a further signal
    exits at once; else the run finished, and its output and exit code are kept.
    """
    from self_refine.models.cancel import cancel_calls

    guard = _GUARD
    stop = _Stop(note, guard.said if guard is not None else None)
    cancel_calls(False)
    previous = _take_signals(stop.handle)
    try:
        yield stop
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if stop.deadline is None:  # not stopped: calls may run again
            cancel_calls(False)
        if guard is not None:
            if stop.signum:
                guard.stopped, guard.signum = True, stop.signum
            else:
                guard.finished = True
