"""PostgreSQL: the official checkpointers, the thread-settings table, the thread locks.

Needs the `postgres` extra (`langgraph-checkpoint-postgres`, `psycopg`); the
checkpointer's tables are created on first use.
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from self_refine.errors import ConfigError, install_hint
from self_refine.redact import redact_url

__all__ = [
    "INSTALL_HINT",
    "PostgresLocks",
    "async_postgres_checkpointer",
    "is_postgres_url",
    "postgres_checkpointer",
    "postgres_locks",
]

INSTALL_HINT = install_hint("postgres")
_SCHEMES = ("postgresql://", "postgres://")
_SETUP_LOCK = 0x5E1F_0001  # advisory lock id: concurrent first uses create tables once


def is_postgres_url(db: str) -> bool:
    """True when --db names a PostgreSQL database rather than an SQLite file."""
    return db.startswith(_SCHEMES)


def _psycopg() -> Any:
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver  # noqa: F401
    except ImportError:
        raise ConfigError(
            f"a postgresql:// database needs the PostgreSQL extra: {INSTALL_HINT}"
        ) from None
    return psycopg


_CONNECTION = {"autocommit": True, "prepare_threshold": 0}


def _cannot_open(db: str, error: BaseException) -> ConfigError:
    reason = " ".join(str(error).split()) or type(error).__name__
    return ConfigError(
        f"cannot open the database {redact_url(db)} ({redact_url(reason)}): "
        "start PostgreSQL or fix the database URL"
    )


def _connect(db: str) -> Any:
    """Open an autocommit connection, or raise ConfigError naming the server and the fix."""
    psycopg = _psycopg()
    from psycopg.rows import dict_row

    try:
        return psycopg.Connection.connect(
            db, **_CONNECTION, row_factory=dict_row, connect_timeout=10
        )
    except psycopg.Error as error:
        raise _cannot_open(db, error) from None


@contextmanager
def postgres_checkpointer(db: str) -> Iterator[Any]:
    """Open `PostgresSaver` on a URL, creating its tables on first use."""
    conn = _connect(db)
    from langgraph.checkpoint.postgres import PostgresSaver

    with conn:
        saver = PostgresSaver(conn)
        _setup(saver, conn)
        yield saver


def _setup(saver: Any, conn: Any) -> None:
    """Run the checkpointer's migrations while holding the setup lock."""
    conn.execute("SELECT pg_advisory_lock(%s)", (_SETUP_LOCK,))
    try:
        saver.setup()
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))


@asynccontextmanager
async def async_postgres_checkpointer(db: str, *, pool_size: int = 8) -> AsyncIterator[Any]:
    """Open `AsyncPostgresSaver` over a pool of `pool_size` connections, tables made first."""
    psycopg = _psycopg()
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    try:
        setup = await psycopg.AsyncConnection.connect(
            db, **_CONNECTION, row_factory=dict_row, connect_timeout=10
        )
    except psycopg.Error as error:
        raise _cannot_open(db, error) from None
    async with setup:
        await setup.execute("SELECT pg_advisory_lock(%s)", (_SETUP_LOCK,))
        try:
            await AsyncPostgresSaver(setup).setup()
        finally:
            await setup.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))
    pool: Any = AsyncConnectionPool(
        db,
        min_size=1,
        max_size=max(1, pool_size),
        open=False,
        kwargs={**_CONNECTION, "row_factory": dict_row},
    )
    try:
        await pool.open(wait=True, timeout=15)
    except Exception as error:
        raise _cannot_open(db, error) from None
    try:
        yield AsyncPostgresSaver(pool)
    finally:
        await pool.close()


# One writer per thread (see `persistence/locks.py`): session-level advisory locks, held on
# one connection per process and database, so the server releases them when that session
# ends, whatever ends it.

_PG_NAMESPACE = b"self-refine thread lock\0"


def _advisory_key(thread_id: str) -> int:
    digest = hashlib.blake2b(
        _PG_NAMESPACE + thread_id.encode("utf-8", "surrogatepass"), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresLocks:
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
_pg_locks: dict[tuple[int, str, str], PostgresLocks] = {}


def postgres_locks(dsn: str, password: str) -> PostgresLocks:
    # Keyed by pid too: a forked child must not share its parent's session.
    key = (os.getpid(), dsn, password)
    with _pg_mutex:
        if key not in _pg_locks:
            _pg_locks[key] = PostgresLocks(dsn, password)
        return _pg_locks[key]
