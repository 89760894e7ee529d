"""What a storage error means: a damaged file, one that cannot be written, a full disk.

Each becomes one line that says what to do; a storage failure (full, damaged,
I/O) is the whole batch's, not one item's (`storage_failure`). A thread that lost
its input (`thread_damage`) is that thread's alone.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "damaged_message",
    "failure_message",
    "is_damaged",
    "is_locked",
    "not_writable",
    "not_writable_message",
    "sqlite_code",
    "storage_failure",
    "thread_damage",
    "write_refused",
    "SQLITE_CANTOPEN",
]


def not_writable(path: Path) -> str | None:
    """What keeps the database at `path` (or one made there) from being written, if anything."""
    folder = next((p for p in path.absolute().parents if p.exists()), None)
    if folder is None or not folder.is_dir():
        return None  # not a folder at all: opening it says so
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"its folder {str(folder)!r} is read-only"
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is read-only"
    for suffix in ("-wal", "-shm"):
        beside = path.with_name(path.name + suffix)
        if beside.exists() and not os.access(beside, os.W_OK):
            return f"{str(beside)!r} beside it is read-only"
    return None


def not_writable_message(db: str, why: str) -> str:
    """What to say when a command that saves threads gets a database it cannot write."""
    return (
        f"the database {db!r} is not writable ({why}): run, resume and batch save their "
        "threads in it; choose a writable --db (show can still read this one)"
    )


def write_refused(db: str, error: BaseException) -> str | None:
    """Why `db` cannot be written, when `error` is SQLite refusing to open or write it for that."""
    if sqlite_code(error) in (_SQLITE_READONLY, SQLITE_CANTOPEN, _SQLITE_PERM):
        return not_writable(Path(db))
    return None


def failure_message(db: str, error: sqlite3.Error) -> str:
    """One line for an SQLite error opening `db`: damaged, not writable, or what SQLite said."""
    if is_damaged(error):
        return damaged_message(db, error)
    if why := write_refused(db, error):
        return not_writable_message(db, why)
    return f"cannot open the database {db!r} ({error}): choose a writable path with --db"


def damaged_message(db: str, error: BaseException) -> str:
    """What to say when SQLite finds a database damaged ("database disk image is malformed")."""
    return (
        f"the database {db!r} is damaged ({error}): its threads cannot be read. Keep a copy, "
        f"try `sqlite3 {db} .recover | sqlite3 recovered.sqlite` to save what is left, or "
        "start afresh with another --db"
    )


def thread_damage(thread_id: str, values: Mapping[str, Any]) -> str | None:
    """Why a saved thread cannot be shown whole or continued (None: nothing known wrong).

    Every run starts from a task the door checked, so a thread that has a state but no
    task lost its input from the database: the writes of its `task`, or the first
    checkpoint they belong to, were removed.
    """
    if not values or values.get("task"):
        return None
    return (
        f"thread {thread_id} is damaged: its task is missing from the database (the writes "
        "of its input, or its first checkpoint, were removed)"
    )


_SQLITE_PERM, _SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 3, 5, 6, 8
_SQLITE_CORRUPT, SQLITE_CANTOPEN, _SQLITE_NOTADB = 11, 14, 26


def sqlite_code(error: BaseException) -> int | None:
    """SQLite's primary result code of an error (the extended code's low byte), if it has one."""
    code = getattr(error, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def is_locked(error: BaseException) -> bool:
    """Whether an error is SQLite giving up on another connection's lock ("database is locked")."""
    if sqlite_code(error) is not None:
        return sqlite_code(error) in (_SQLITE_BUSY, _SQLITE_LOCKED)
    return isinstance(error, sqlite3.OperationalError) and "locked" in str(error)


def is_damaged(error: BaseException) -> bool:
    """Whether an error is SQLite finding a damaged file (not a lock, a full disk or I/O)."""
    if isinstance(error, sqlite3.Error) and sqlite_code(error) is not None:
        return sqlite_code(error) in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    return type(error) is sqlite3.DatabaseError


_DISK_FULL_SQLSTATE = "53100"  # PostgreSQL's disk_full


def storage_failure(error: BaseException) -> str | None:
    """What failed when an error is the storage's own (full, damaged, I/O), else None.

    Such a failure is not one item's: every later write would fail alike.
    """
    reason = " ".join(str(error).split()) or type(error).__name__
    if isinstance(error, sqlite3.OperationalError) and ("full" in reason or "I/O" in reason):
        return f"the checkpoint database failed ({reason})"
    if is_locked(error):
        return (
            f"the checkpoint database stayed locked by another connection ({reason}): let the "
            "program that holds its write lock finish (another self-refine command, or one in "
            "a transaction, such as the sqlite3 shell)"
        )
    if is_damaged(error):
        return f"the checkpoint database is damaged ({reason})"
    if getattr(error, "sqlstate", None) == _DISK_FULL_SQLSTATE:
        return f"the PostgreSQL server's disk is full ({reason.split(' CONTEXT:')[0]})"
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
        return f"the disk failed ({error.strerror})"
    return None
