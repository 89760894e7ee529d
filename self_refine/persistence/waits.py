"""Waits on another process, said while they happen: the database's write lock, a thread.

A command that saves threads can wait on two things another process holds:

- SQLite's write lock (another self-refine command writing the same file, or another
  program in a transaction, such as the sqlite3 shell after BEGIN). SQLite waits for
  it inside the statement, for up to the connection's timeout. Every statement of the
  program's connections runs inside `waiting_for_database` (`WatchedConnection`); one
  still running after `NOTICE_SECONDS` is checked from a watcher thread (can another
  connection take the write lock at once?), and when another connection holds it, a
  warning says so, again every `REPEAT_SECONDS` while the wait lasts.
- A thread that another process runs (a second batch on the same database and
  settings). The batch polls for it for as long as it takes (`persistence/locks.py`),
  and says after `NOTICE_SECONDS`, then every `REPEAT_SECONDS`, which process has it,
  and whether that process is stopped (SIGSTOP, Ctrl-Z).

The warnings go to the `self_refine.persistence` logger; the command line prints them
on standard error (`cli/main.py`), and with no logging set up Python prints them too.
"""

from __future__ import annotations

import itertools
import logging
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "NOTICE_SECONDS",
    "REPEAT_SECONDS",
    "WatchedConnection",
    "ThreadWait",
    "waiting_for_database",
]

log = logging.getLogger("self_refine.persistence")

NOTICE_SECONDS = 2.0
"""How long a wait lasts before it is said: longer than any statement of a healthy database."""
REPEAT_SECONDS = 60.0
"""How often a wait that goes on is said again."""
_TICK = 0.25


class _Wait:
    """One statement under way: when it began, when it was last said."""

    def __init__(self, path: str, seconds: float, known: bool) -> None:
        self.path = path
        self.seconds = seconds
        self.known = known
        self.started = time.monotonic()
        self.said = float("-inf")


class _Watcher:
    """The process's one watcher thread, and the statements under way it watches."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.waits: dict[int, _Wait] = {}
        self.keys = itertools.count()
        self.busy = threading.Event()
        self.thread: threading.Thread | None = None

    def add(self, wait: _Wait) -> int:
        with self.lock:
            key = next(self.keys)
            self.waits[key] = wait
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self._run, name="self-refine database waits", daemon=True
                )
                self.thread.start()
        self.busy.set()
        return key

    def remove(self, key: int) -> None:
        with self.lock:
            self.waits.pop(key, None)
            if not self.waits:
                self.busy.clear()

    def _run(self) -> None:
        while True:
            self.busy.wait()
            time.sleep(_TICK)
            now = time.monotonic()
            with self.lock:
                due = [
                    w
                    for w in self.waits.values()
                    if now - w.started >= NOTICE_SECONDS and now - w.said >= REPEAT_SECONDS
                ]
            for wait in due:
                wait.said = now
                if wait.known or _write_lock_taken(wait.path):
                    log.warning(_database_notice(wait, now))


_WATCHER = _Watcher()


def _write_lock_taken(path: str) -> bool:
    """Whether another connection holds the database's write lock right now."""
    try:
        probe = sqlite3.connect(path, timeout=0, isolation_level=None)
    except sqlite3.Error:
        return False
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError as error:
        return "locked" in str(error) or "busy" in str(error)
    finally:
        probe.close()


def _database_notice(wait: _Wait, now: float) -> str:
    waited = int(now - wait.started)
    return (
        f"waiting for the database {_shown(wait.path)!r} ({waited} s so far, for up to "
        f"{wait.seconds:.0f} s): another connection holds its write lock (another "
        "self-refine command writing it, or a program in a transaction, such as the "
        "sqlite3 shell); it goes on once that one finishes"
    )


def _shown(path: str) -> str:
    """The database as the user named it: relative to the working folder when inside it."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


@contextmanager
def waiting_for_database(path: str, seconds: float, *, known: bool = False) -> Iterator[None]:
    """Say so when the block waits on another connection's lock of `path` (up to `seconds`).

    `known`: the block waits on a lock for certain (no need to check which).
    """
    key = _WATCHER.add(_Wait(path, seconds, known))
    try:
        yield
    finally:
        _WATCHER.remove(key)


class _WatchedCursor(sqlite3.Cursor):
    """A cursor whose statements say when they wait on another connection's lock."""

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        connection: WatchedConnection = self.connection  # type: ignore[assignment]
        with waiting_for_database(connection.path, connection.timeout):
            return super().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        connection: WatchedConnection = self.connection  # type: ignore[assignment]
        with waiting_for_database(connection.path, connection.timeout):
            return super().executemany(sql, parameters)


class WatchedConnection(sqlite3.Connection):
    """An SQLite connection (`sqlite3.connect(..., factory=WatchedConnection)`) whose
    statements say when they wait on another connection's lock.

    Commits are not watched: in WAL mode (every database the program writes) the
    connection that commits already holds the write lock, so a slow commit is the
    disk, not another connection.
    """

    def __init__(self, database: Any, timeout: float = 5.0, *args: Any, **kwargs: Any) -> None:
        super().__init__(database, timeout, *args, **kwargs)
        self.path = str(database)
        self.timeout = timeout

    def cursor(self, factory: Any = None) -> Any:
        """A cursor that says when its statements wait."""
        return super().cursor(factory or _WatchedCursor)

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        """Run one statement, saying so when it waits."""
        with waiting_for_database(self.path, self.timeout):
            return super().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        """Run a statement for each set of parameters, saying so when it waits."""
        with waiting_for_database(self.path, self.timeout):
            return super().executemany(sql, parameters)


_HOLDER = re.compile(r"pid (\d+) on (\S+),")


class ThreadWait:
    """A wait for a thread that another process runs: said after a while, then now and then."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.started = time.monotonic()
        self.said = float("-inf")

    def still(self, holder: str) -> None:
        """The thread is still held by `holder` (as the lock file says it)."""
        now = time.monotonic()
        if now - self.started < NOTICE_SECONDS or now - self.said < REPEAT_SECONDS:
            return
        self.said = now
        log.warning(
            f"waiting for thread {self.thread_id!r} ({int(now - self.started)} s so far): "
            f"another process is running it ({holder}){_stopped(holder)}; this batch takes "
            "its result once it finishes, without calling the model again"
        )


def _stopped(holder: str) -> str:
    """What to say when the holding process, on this machine, is stopped (SIGSTOP, Ctrl-Z)."""
    found = _HOLDER.match(holder)
    if found is None or found.group(2) != socket.gethostname():
        return ""
    pid = found.group(1)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    state = stat.rsplit(")", 1)[-1].split()[0]
    if state not in ("T", "t"):
        return ""
    return f"; that process is stopped: continue it with `kill -CONT {pid}` (or `fg` in its shell)"
