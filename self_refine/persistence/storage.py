"""Where the command line keeps its checkpoints: which checkpointer, sync or async.

What a storage error means is in `persistence/failures.py`. `db` is an SQLite
file path, or a `postgresql://` URL (see `self_refine.persistence.postgres`). The
settings a thread ran with are in the thread itself (its `run_context`), so that
`self-refine resume` continues it exactly as it was started.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from self_refine.errors import ConfigError
from self_refine.persistence.failures import (
    SQLITE_CANTOPEN,
    failure_message,
    not_writable,
    not_writable_message,
    sqlite_code,
)
from self_refine.persistence.postgres import (
    async_postgres_checkpointer,
    is_postgres_url,
    postgres_checkpointer,
)
from self_refine.persistence.waits import WatchedConnection, waiting_for_database

__all__ = [
    "DEFAULT_DB",
    "check_database",
    "read_only_connection",
    "open_async_checkpointer",
    "open_checkpointer",
    "sqlite_path",
]

DEFAULT_DB = ".self-refine/checkpoints.sqlite"

# How long a connection waits for another process's write (several commands may
# share one database: two batches, a batch and `show`) before it says "locked"; a wait
# is said while it lasts (`persistence/waits.py`).
BUSY_SECONDS = 60.0


_SQLITE_HEADER = b"SQLite format 3\x00"


def sqlite_path(db: str, *, read_only: bool = False) -> Path:
    """Check that an SQLite database can be created or opened at `db`, and return its path.

    `db` must be a regular file holding an SQLite database, or a path where a
    new one can be made: not ":memory:" (gone when the command ends) and not a
    device or a folder (SQLite would put its journal beside it). Unless
    `read_only`, the file and its folder must be writable: a command that saves
    threads says "not writable" here, before any work.
    """
    if db.strip() in ("", ":memory:"):
        raise ConfigError(
            f"--db {db!r} is not a file: the threads must outlive the command to be shown or "
            "resumed; give the path of an SQLite file"
        )
    path = Path(db).expanduser()
    if path.exists() and not path.is_file():
        raise ConfigError(
            f"--db {str(path)!r} is not a regular file: give the path of an SQLite file, or of "
            "a new one to create"
        )
    if path.is_file() and _not_sqlite(path):
        raise ConfigError(
            f"--db {str(path)!r} is not an SQLite database: give the path of the database "
            "the threads are in, or of a new one to create"
        )
    if read_only:
        return path
    if why := not_writable(path):
        raise ConfigError(not_writable_message(str(path), why))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_SECONDS, factory=WatchedConnection)
        try:
            conn.execute("PRAGMA user_version")
        finally:
            conn.close()
    except sqlite3.Error as error:
        raise ConfigError(failure_message(str(path), error)) from None
    except OSError as error:
        raise ConfigError(
            f"cannot open the database {str(path)!r} ({error.strerror or error}): choose a "
            "writable path with --db"
        ) from None
    return path


def check_database(db: str) -> None:
    """Raise ConfigError when threads could not be saved at `db`; nothing is created.

    For a command to call before any work; a PostgreSQL URL is checked when it connects.
    """
    if is_postgres_url(db):
        return
    path = sqlite_path(db, read_only=True)
    if why := not_writable(path):
        raise ConfigError(not_writable_message(str(path), why))


def read_only_connection(db: str) -> sqlite3.Connection:
    """Open an existing SQLite database read-only: nothing, not even a journal, is written.

    A database in WAL mode needs a shared-memory file beside it; in a folder where
    none can be made (a read-only folder or mount), where no other process can be
    writing it either, the file is read as it is (SQLite's `immutable`).
    """
    path = sqlite_path(db, read_only=True)
    uri = f"{path.absolute().as_uri()}?mode=ro"
    try:
        return _opened(uri)
    except sqlite3.Error as error:
        wal = path.with_name(path.name + "-wal")
        unwritable = not os.access(path.absolute().parent, os.W_OK)
        if sqlite_code(error) == SQLITE_CANTOPEN and unwritable and wal.exists():
            raise ConfigError(
                f"the database {str(path)!r} has changes in {str(wal)!r} that SQLite cannot "
                "read in a read-only folder: copy both files to a writable folder and read "
                "them there"
            ) from None
        if sqlite_code(error) != SQLITE_CANTOPEN or not unwritable:
            raise ConfigError(failure_message(str(path), error)) from None
    try:
        return _opened(uri + "&immutable=1")
    except sqlite3.Error as error:
        raise ConfigError(failure_message(str(path), error)) from None


def _writable_connection(path: Path) -> sqlite3.Connection:
    """Open the SQLite file at `path` for writing, in WAL mode with `synchronous=NORMAL`.

    Two commands that open a new database at once both switch it to WAL, and
    SQLite answers one of them "database is locked" at once, without waiting
    (the switch needs the file to itself): that switch is retried until
    `BUSY_SECONDS`, as every later write waits for another process's.
    """
    conn = sqlite3.connect(
        path, timeout=BUSY_SECONDS, check_same_thread=False, factory=WatchedConnection
    )
    try:
        deadline = time.monotonic() + BUSY_SECONDS
        pause = 0.01
        with waiting_for_database(str(path), BUSY_SECONDS, known=True):
            while True:
                try:
                    conn.execute("PRAGMA journal_mode=WAL")
                    break
                except sqlite3.OperationalError as error:
                    if "locked" not in str(error) or time.monotonic() > deadline:
                        raise
                    time.sleep(pause)
                    pause = min(pause * 2, 0.5)
        conn.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


def _opened(uri: str) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False)  # the saver serializes
    try:
        conn.execute("PRAGMA schema_version").fetchone()  # opens the file now
    except BaseException:
        conn.close()
        raise
    return conn


def _not_sqlite(path: Path) -> bool:
    """True for a non-empty file that does not start with SQLite's header."""
    try:
        with path.open("rb") as handle:
            head = handle.read(len(_SQLITE_HEADER))
    except OSError:
        return False  # opening it will say what is wrong
    return bool(head) and head != _SQLITE_HEADER


@contextmanager
def open_checkpointer(db: str, *, read_only: bool = False) -> Iterator[BaseCheckpointSaver[Any]]:
    """Open the checkpointer for an SQLite path or a PostgreSQL URL.

    An SQLite database is in WAL mode with `synchronous=NORMAL`: each committed
    step survives the program being killed, and only a power cut or an
    operating-system crash can lose the last few (never corrupt the file).
    That saves a disk flush per commit; a step is one commit, its tasks' writes
    saved with its checkpoint (`StepSqliteSaver`). `read_only` (for `show`)
    opens an existing SQLite file without writing anything, so a database in a
    read-only folder or mount can be read.
    """
    if is_postgres_url(db):
        with ExitStack() as stack:
            with _named_flag():
                saver = stack.enter_context(postgres_checkpointer(db))
            yield saver
        return
    from self_refine.persistence.sqlite import StepSqliteSaver

    # one connection for the saver, which serializes its use across threads
    conn = read_only_connection(db) if read_only else _writable_connection(sqlite_path(db))
    try:
        saver = StepSqliteSaver(conn)
        try:
            yield saver
        finally:
            saver.flush()
    finally:
        conn.close()


@contextmanager
def _named_flag() -> Iterator[None]:
    """Name the command line's --db flag in the PostgreSQL module's errors."""
    try:
        yield
    except ConfigError as error:
        raise ConfigError(f"--db: {error}") from None


@asynccontextmanager
async def open_async_checkpointer(
    db: str, *, pool_size: int = 8
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """Open one async checkpointer for a whole batch: SQLite by path, or a postgresql:// URL.

    SQLite runs as `open_checkpointer` sets it up, each operation on one worker
    thread (`ThreadedSqliteSaver`); PostgreSQL over a pool of `pool_size` connections.
    """
    if is_postgres_url(db):
        async with AsyncExitStack() as stack:
            with _named_flag():
                opened = async_postgres_checkpointer(db, pool_size=pool_size)
                saver = await stack.enter_async_context(opened)
            yield saver
        return
    from self_refine.persistence.sqlite import ThreadedSqliteSaver

    conn = _writable_connection(sqlite_path(db))
    threaded: ThreadedSqliteSaver | None = None
    try:
        threaded = ThreadedSqliteSaver(conn)
        yield threaded
    finally:
        if threaded is not None:
            threaded.close()
        conn.close()
