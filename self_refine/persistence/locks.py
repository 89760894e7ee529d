"""One writer per thread: the lock every run holds on the thread it writes.

Two runs on one thread (two `resume`s, or a `run` and a `resume`) would both
make every remaining model call and write interleaved checkpoints. The
compiled graph takes this lock in `stream`/`astream` before it reads the
thread, so check-then-write is atomic, and a second writer is refused with
`ThreadBusyError` before anything is written. Reading a thread is never
blocked.

Where the lock lives depends on the checkpointer:

- SQLite file: one file per busy thread in `<database>-locks/`, held with
  `flock`, so the kernel releases it when the holder exits, even on kill -9.
  The holder's pid, host and start time are written in it for the message.
- PostgreSQL: a session-level advisory lock (`pg_try_advisory_lock`) on one
  connection per process and database, released when that session ends.
- Anything else (in memory, an in-memory SQLite database, other savers): a
  lock in this process.

A LangGraph server's own checkpointer is left alone: the server already runs
one run per thread (its multitask strategies decide what a second one does).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from self_refine.errors import ThreadBusyError
from self_refine.persistence.lock_files import Release, flock_acquire, lock_folder
from self_refine.persistence.postgres import PostgresLocks, postgres_locks
from self_refine.persistence.waits import ThreadWait

__all__ = ["athread_lock", "lock_folder", "thread_lock", "try_lock", "atry_lock"]

_Key = tuple[Any, ...]

# Thread locks this context already holds (taken by `thread_lock`): a run inside one is
# the same writer, not a second one.
_held: contextvars.ContextVar[frozenset[_Key]] = contextvars.ContextVar(
    "self_refine_held_thread_locks", default=frozenset()
)
_SERVER_MODULES = ("langgraph_runtime", "langgraph_api")


# --- a lock in this process ---------------------------------------------------------------

_local_mutex = threading.Lock()
_local_held: set[_Key] = set()


def _local_acquire(key: _Key) -> bool:
    with _local_mutex:
        if key in _local_held:
            return False
        _local_held.add(key)
        return True


def _local_release(key: _Key) -> None:
    with _local_mutex:
        _local_held.discard(key)


def _pg_acquire(locks: PostgresLocks, key: _Key, thread_id: str) -> Release:
    if not _local_acquire(key):
        raise ThreadBusyError(thread_id, "another run in this process")
    try:
        holder = locks.try_lock(thread_id)
    except BaseException:
        _local_release(key)
        raise
    if holder is not None:
        _local_release(key)
        raise ThreadBusyError(thread_id, holder)

    def release() -> None:
        try:
            locks.unlock(thread_id)
        finally:
            _local_release(key)

    return release


# --- which lock a checkpointer gets ---------------------------------------------------------

# A checkpointer's lock kind, found once per checkpointer object:
# ("file", folder) | ("postgres", dsn, password) | ("local", id) | ("none",)
_kinds: weakref.WeakKeyDictionary[Any, tuple[Any, ...]] = weakref.WeakKeyDictionary()


def _loaded(module: str, name: str) -> Any:
    """A class from a module, only if that module is already imported (else nothing is one)."""
    found = sys.modules.get(module)
    return getattr(found, name, None) if found is not None else None


def _is_server_checkpointer(saver: Any) -> bool:
    return type(saver).__module__.startswith(_SERVER_MODULES)


def _file_kind(database: str, saver: Any) -> tuple[Any, ...]:
    if not database:  # an in-memory SQLite database: only this process can see it
        return ("local", id(saver))
    return ("file", lock_folder(os.path.realpath(database)))


def _sqlite_file(conn: Any) -> str:
    rows = conn.execute("PRAGMA database_list").fetchall()
    return next((str(row[2] or "") for row in rows if row[1] == "main"), "")


def _kind(saver: Any) -> tuple[Any, ...]:
    """The lock kind of a checkpointer, for the sync path."""
    if saver in _kinds:
        return _kinds[saver]
    kind: tuple[Any, ...]
    sqlite_saver = _loaded("langgraph.checkpoint.sqlite", "SqliteSaver")
    postgres_saver = _loaded("langgraph.checkpoint.postgres", "PostgresSaver")
    if _is_server_checkpointer(saver):
        kind = ("none",)
    elif sqlite_saver is not None and isinstance(saver, sqlite_saver):
        with saver.lock:
            kind = _file_kind(_sqlite_file(saver.conn), saver)
    elif postgres_saver is not None and isinstance(saver, postgres_saver):
        kind = ("postgres", *_pg_params(saver.conn))
    else:
        kind = ("local", id(saver))
    _kinds[saver] = kind
    return kind


async def _akind(saver: Any) -> tuple[Any, ...]:
    """The lock kind of a checkpointer, for the async path."""
    if saver in _kinds:
        return _kinds[saver]
    kind: tuple[Any, ...]
    sqlite_saver = _loaded("langgraph.checkpoint.sqlite.aio", "AsyncSqliteSaver")
    postgres_saver = _loaded("langgraph.checkpoint.postgres.aio", "AsyncPostgresSaver")
    if sqlite_saver is not None and isinstance(saver, sqlite_saver):
        async with saver.lock, saver.conn.execute("PRAGMA database_list") as cursor:
            rows = await cursor.fetchall()
        database = next((str(row[2] or "") for row in rows if row[1] == "main"), "")
        kind = _file_kind(database, saver)
    elif postgres_saver is not None and isinstance(saver, postgres_saver):
        kind = ("postgres", *(await _apg_params(saver.conn)))
    else:
        return _kind(saver)
    _kinds[saver] = kind
    return kind


def _pg_params(conn: Any) -> tuple[str, str]:
    """(dsn without password, password) of a psycopg connection or pool."""
    if hasattr(conn, "info"):
        return conn.info.dsn, conn.info.password or ""
    with conn.connection() as borrowed:
        return borrowed.info.dsn, borrowed.info.password or ""


async def _apg_params(conn: Any) -> tuple[str, str]:
    if hasattr(conn, "info"):
        return conn.info.dsn, conn.info.password or ""
    async with conn.connection() as borrowed:
        return borrowed.info.dsn, borrowed.info.password or ""


def _acquire(kind: tuple[Any, ...], thread_id: str) -> Release | None:
    """Take the thread's lock of this kind; None when nothing needs taking."""
    if kind[0] == "none":
        return None
    key = (*kind, thread_id)
    if key in _held.get():
        return None
    if kind[0] == "file":
        return flock_acquire(kind[1], thread_id)
    if kind[0] == "postgres":
        return _pg_acquire(postgres_locks(kind[1], kind[2]), key, thread_id)
    if not _local_acquire(key):
        raise ThreadBusyError(thread_id, "another run in this process")
    return lambda: _local_release(key)


def try_lock(checkpointer: Any, thread_id: str) -> Release | None:
    """Take the thread's lock, or raise ThreadBusyError; the function that releases it.

    None when there is nothing to take: the lock is already held in this
    context, or the checkpointer is a LangGraph server's own.
    """
    return _acquire(_kind(checkpointer), thread_id)


async def atry_lock(checkpointer: Any, thread_id: str) -> Release | None:
    """Async twin of try_lock.

    Taking and releasing stay synchronous (one short database round trip at
    most): a cancelled await could otherwise leave a lock taken with nobody
    to release it.
    """
    return _acquire(await _akind(checkpointer), thread_id)


@contextmanager
def thread_lock(checkpointer: Any, thread_id: str) -> Iterator[None]:
    """Hold the thread's lock for a block; runs of the thread inside it are this writer's."""
    kind = _kind(checkpointer)
    with _holding(kind, thread_id, _acquire(kind, thread_id)):
        yield


@asynccontextmanager
async def athread_lock(
    checkpointer: Any, thread_id: str, *, wait: bool = False
) -> AsyncIterator[None]:
    """Async twin of thread_lock; with `wait`, wait while another writer holds the thread.

    Waiting polls, a little longer each time (up to 2 s): a lock held by another
    process cannot be waited on otherwise across every kind of checkpointer. A wait
    that lasts is said, naming the holder (`persistence/waits.py`).
    """
    kind = await _akind(checkpointer)
    delay = 0.05
    waiting = ThreadWait(thread_id)
    while True:
        try:
            release = _acquire(kind, thread_id)
            break
        except ThreadBusyError as busy:
            if not wait:
                raise
            waiting.still(busy.holder)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)
    with _holding(kind, thread_id, release):
        yield


@contextmanager
def _holding(kind: _Key, thread_id: str, release: Release | None) -> Iterator[None]:
    """Mark the thread held by this context for the block, then release its lock."""
    token = _held.set(_held.get() | {(*kind, thread_id)})
    try:
        yield
    finally:
        _held.reset(token)
        if release is not None:
            release()
