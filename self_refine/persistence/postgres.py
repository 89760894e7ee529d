"""PostgreSQL for the command line: the official checkpointer, and the thread-settings table.

Needs the `postgres` extra (`langgraph-checkpoint-postgres`, `psycopg`); the
checkpointer's tables are created on first use.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from self_refine.errors import ConfigError, install_hint
from self_refine.redact import redact_url

__all__ = [
    "INSTALL_HINT",
    "PostgresSettings",
    "async_postgres_checkpointer",
    "is_postgres_url",
    "postgres_checkpointer",
]

INSTALL_HINT = install_hint("postgres")
_SCHEMES = ("postgresql://", "postgres://")
_SETTINGS_TABLE = (
    "CREATE TABLE IF NOT EXISTS self_refine_threads "
    "(thread_id TEXT PRIMARY KEY, settings TEXT NOT NULL)"
)
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


def _once(conn: Any, statement: str) -> None:
    """Run a CREATE ... IF NOT EXISTS under an advisory lock, safe against concurrent runs."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SETUP_LOCK,))
        conn.execute(statement)


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


class PostgresSettings:
    """The thread-settings table, in the same PostgreSQL database as the checkpoints."""

    def __init__(self, db: str) -> None:
        self.db = db
        with _connect(db) as conn:
            _once(conn, _SETTINGS_TABLE)

    def save(self, thread_id: str, settings: dict[str, Any]) -> None:
        """Record a thread's settings (overwriting what was there)."""
        with _connect(self.db) as conn:
            conn.execute(
                "INSERT INTO self_refine_threads VALUES (%s, %s) "
                "ON CONFLICT (thread_id) DO UPDATE SET settings = EXCLUDED.settings",
                (thread_id, json.dumps(settings, sort_keys=True)),
            )

    def load(self, thread_id: str) -> dict[str, Any] | None:
        """A thread's settings, or None for a thread this database does not know."""
        with _connect(self.db) as conn:
            row = conn.execute(
                "SELECT settings FROM self_refine_threads WHERE thread_id = %s", (thread_id,)
            ).fetchone()
        return json.loads(row["settings"]) if row else None
