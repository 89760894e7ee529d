"""Stopping a server's whole process group on every way out, whatever signals arrive.

`stop_signals` turns SIGTERM and SIGHUP into `Stopped` while a server runs;
`stop_group` stops the group (SIGTERM, a grace period, then SIGKILL) with a second
SIGTERM or Ctrl-C unable to cut the stop short.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Stopped", "stop_group", "stop_signals"]


class Stopped(Exception):
    """This process got SIGTERM or SIGHUP: stop the server and exit."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, frame: Any) -> None:
    raise Stopped(signum)


@contextmanager
def _signals_handled(handler: Any, signums: tuple[int, ...]) -> Iterator[None]:
    """Handle `signums` with `handler` for the block (in the main thread only)."""
    previous: dict[int, Any] = {}
    try:
        for signum in signums:
            previous[signum] = signal.signal(signum, handler)
    except ValueError:  # not the main thread: signals stay as they were
        pass
    try:
        yield
    finally:
        for number, handler_before in previous.items():
            signal.signal(number, handler_before)


def stop_signals() -> Any:
    """Turn SIGTERM and SIGHUP into `Stopped` for the block."""
    return _signals_handled(_raise_stopped, (signal.SIGTERM, signal.SIGHUP))


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_group(process: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """Stop the server's whole process group: SIGTERM, up to `grace` seconds, then SIGKILL."""
    group = process.pid  # the leader of its own session
    with _stop_signals_ignored():
        if _group_alive(group):
            os.killpg(group, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if process.poll() is not None and not _group_alive(group):
                return
            time.sleep(0.1)
        if _group_alive(group):
            os.killpg(group, signal.SIGKILL)
        process.wait()


def _stop_signals_ignored() -> Any:
    """While stopping the server, a second SIGTERM or Ctrl-C must not cut the stop short."""
    return _signals_handled(signal.SIG_IGN, (signal.SIGTERM, signal.SIGHUP, signal.SIGINT))
