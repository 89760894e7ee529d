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
import datetime
import fcntl
import hashlib
import os
import socket
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from self_refine.errors import ConfigError, ThreadBusyError
from self_refine.redact import redact_url

__all__ = ["athread_lock", "lock_folder", "thread_lock", "try_lock", "atry_lock"]

Release = Callable[[], None]
_Key = tuple[Any, ...]

# Thread locks this context already holds (taken by `thread_lock`): a run inside one is
# the same writer, not a second one.
_held: contextvars.ContextVar[frozenset[_Key]] = contextvars.ContextVar(
    "self_refine_held_thread_locks", default=frozenset()
)
_LOCK_FOLDER_SUFFIX = "-locks"
_SERVER_MODULES = ("langgraph_runtime", "langgraph_api")
_PG_NAMESPACE = b"self-refine thread lock\0"


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


# --- SQLite file: flock on a file per thread -------------------------------------------------


def lock_folder(database: str | os.PathLike[str]) -> Path:
    """The folder beside an SQLite database that holds its busy threads' lock files."""
    path = Path(database)
    return path.with_name(path.name + _LOCK_FOLDER_SUFFIX)


def _lock_file(folder: Path, thread_id: str) -> Path:
    digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()
    return folder / f"{digest[:40]}.lock"


def _holder_text() -> bytes:
    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    return f"pid {os.getpid()} on {socket.gethostname()}, since {started}\n".encode()


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text or "another process"


def _open_lock_file(path: Path) -> tuple[int, bool]:
    """Open (creating) the lock file; (fd, writable). Read-only works for flock too."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666), True
    except PermissionError:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC), False


def _flock_acquire(folder: Path, thread_id: str) -> Release:
    """Hold the thread's lock file, or raise ThreadBusyError naming its holder.

    The file is removed on release while still locked; a process that opened
    it before then finds, once it has the lock, that the path no longer names
    its file, and starts over (so two processes never hold two different files).
    """
    path = _lock_file(folder, thread_id)
    while True:
        try:
            fd, writable = _open_lock_file(path)
        except FileNotFoundError:
            _make_folder(folder)
            continue
        except OSError as error:
            raise ConfigError(
                f"cannot create the thread lock file {str(path)!r} ({error.strerror}): "
                "the folder of the database must be writable"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise ThreadBusyError(thread_id, holder) from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    if writable:
        os.ftruncate(fd, 0)
        os.pwrite(fd, _holder_text(), 0)

    def release() -> None:
        try:
            os.unlink(path)
        except OSError:
            pass  # gone already, or a read-only folder: the next holder reuses it
        os.close(fd)
        try:
            folder.rmdir()  # only once no thread is busy; a taker in between makes it again
        except OSError:
            pass

    return release


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(exist_ok=True)
    except OSError as error:
        raise ConfigError(
            f"cannot create the thread lock folder {str(folder)!r} ({error.strerror}): "
            "the folder of the database must be writable"
        ) from None


# --- PostgreSQL: session-level advisory locks on one connection per process and database ----


def _advisory_key(thread_id: str) -> int:
    digest = hashlib.blake2b(
        _PG_NAMESPACE + thread_id.encode("utf-8", "surrogatepass"), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


class _PostgresLocks:
    """A connection of this process that holds the advisory locks of its busy threads.

    It is opened for the first lock and closed with the last, so an idle
    process keeps no connection (and a database can be dropped).
    """

    def __init__(self, dsn: str, password: str) -> None:
        self._dsn = dsn
        self._password = password
        self._conn: Any = None
        self._held = 0
        self._mutex = threading.Lock()

    def _connection(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            extra: dict[str, Any] = {"password": self._password} if self._password else {}
            try:
                self._conn = psycopg.Connection.connect(
                    self._dsn,
                    autocommit=True,
                    application_name=f"self-refine pid {os.getpid()} on {socket.gethostname()}",
                    **extra,
                )
            except psycopg.Error as error:
                reason = " ".join(str(error).split()) or type(error).__name__
                raise ConfigError(
                    "cannot open a PostgreSQL connection for the thread lock "
                    f"({redact_url(reason)})"
                ) from None
        return self._conn

    def _close_if_idle(self) -> None:
        if self._held == 0 and self._conn is not None:
            self._conn.close()
            self._conn = None

    def try_lock(self, thread_id: str) -> str | None:
        """Take the thread's lock: None when taken, else who holds it."""
        key = _advisory_key(thread_id)
        with self._mutex:
            try:
                conn = self._connection()
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
                if row[0]:
                    self._held += 1
                    return None
                return self._holder(conn, key)
            finally:
                self._close_if_idle()

    def unlock(self, thread_id: str) -> None:
        """Release the thread's lock (a closed connection already released it)."""
        key = _advisory_key(thread_id)
        with self._mutex:
            self._held -= 1
            try:
                if self._conn is not None and not self._conn.closed:
                    self._conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            finally:
                self._close_if_idle()

    @staticmethod
    def _holder(conn: Any, key: int) -> str:
        unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
        query = (
            "SELECT a.application_name, a.pid FROM pg_locks l "
            "LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
            "AND l.classid::text::bigint = %s AND l.objid::text::bigint = %s"
        )
        row = conn.execute(query, (unsigned >> 32, unsigned & 0xFFFF_FFFF)).fetchone()
        if not row:
            return "another process"
        name = row[0] or ""
        if name.startswith("self-refine "):
            return name.removeprefix("self-refine ")
        return f"PostgreSQL backend pid {row[1]}"


_pg_mutex = threading.Lock()
_pg_locks: dict[tuple[int, str, str], _PostgresLocks] = {}


def _postgres_locks(dsn: str, password: str) -> _PostgresLocks:
    # Keyed by pid too: a forked child must not share its parent's session.
    key = (os.getpid(), dsn, password)
    with _pg_mutex:
        if key not in _pg_locks:
            _pg_locks[key] = _PostgresLocks(dsn, password)
        return _pg_locks[key]


def _pg_acquire(locks: _PostgresLocks, key: _Key, thread_id: str) -> Release:
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
        return _flock_acquire(kind[1], thread_id)
    if kind[0] == "postgres":
        return _pg_acquire(_postgres_locks(kind[1], kind[2]), key, thread_id)
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
    process cannot be waited on otherwise across every kind of checkpointer.
    """
    kind = await _akind(checkpointer)
    delay = 0.05
    while True:
        try:
            release = _acquire(kind, thread_id)
            break
        except ThreadBusyError:
            if not wait:
                raise
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
