"""A whole input file read so that Ctrl-C or SIGTERM always ends a wait for it.

Python runs a signal's handler between two instructions of the main thread. A signal that
comes after the last such check and before a blocking `read()` has started (the
microseconds between opening a pipe and reading it) only marks the handler as due, and the
read then waits for as long as the pipe's writer does: for `self-refine batch <(make-items)`
with a writer that has written nothing yet, for ever, with the program deaf to Ctrl-C.

`read_input` opens without waiting (`O_NONBLOCK`: a FIFO's open would wait for its writer)
and, for a pipe, a terminal or a socket, waits (`selectors`) on the input and on the signal
module's wakeup pipe, which the interpreter writes to from the C handler itself: a signal
that comes at any moment ends the wait, and its handler runs before the next instruction.
Off the main thread, or while an event loop owns the wakeup pipe, it reads plainly.
"""

from __future__ import annotations

import os
import selectors
import signal
import stat
import sys
from pathlib import Path

__all__ = ["read_input"]

_CHUNK = 1 << 16

_Selector = getattr(selectors, "PollSelector", selectors.SelectSelector)
"""poll(2) where there is one: any fd number (select's stop at 1024) and any device
(epoll refuses /dev/null)."""


def read_input(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of `path` (a file, a FIFO, `/dev/stdin`), the first `limit` of them when
    given (the rest is left unread); raises OSError as `open` does."""
    left = sys.maxsize if limit is None else limit
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode):
            return _read_waiting(fd, left)
        return _read_plainly(fd, left)  # a file (a directory: IsADirectoryError, as open)
    finally:
        os.close(fd)


def _read_plainly(fd: int, left: int) -> bytes:
    """At most `left` bytes of `fd`, read in the usual blocking way."""
    os.set_blocking(fd, True)
    chunks: list[bytes] = []
    while left > 0 and (chunk := os.read(fd, min(left, _CHUNK))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_waiting(fd: int, left: int) -> bytes:
    wake, woken = os.pipe()
    try:
        os.set_blocking(wake, False)
        os.set_blocking(woken, False)
        try:
            before = signal.set_wakeup_fd(woken, warn_on_full_buffer=False)
        except ValueError:  # not the main thread: its signals are not ours to wait on
            return _read_plainly(fd, left)
        if before != -1:  # an event loop listens there: leave it its pipe
            signal.set_wakeup_fd(before)
            return _read_plainly(fd, left)
        try:
            return _read_until_end(fd, wake, left)
        finally:
            signal.set_wakeup_fd(-1)
    finally:
        os.close(wake)
        os.close(woken)


def _read_until_end(fd: int, wake: int, left: int) -> bytes:
    """At most `left` bytes of `fd`, waiting on it and on the signal wakeup pipe `wake`."""
    chunks: list[bytes] = []
    with _Selector() as waiting:
        waiting.register(fd, selectors.EVENT_READ)
        waiting.register(wake, selectors.EVENT_READ)
        while left > 0:
            ready = {key.fd for key, _ in waiting.select()}
            if wake in ready:  # a signal came: its handler runs now, and may raise
                try:
                    os.read(wake, _CHUNK)
                except BlockingIOError:
                    pass
            if fd in ready:
                try:
                    chunk = os.read(fd, min(left, _CHUNK))
                except BlockingIOError:  # readable was said, then someone else read it
                    continue
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
    return b"".join(chunks)
