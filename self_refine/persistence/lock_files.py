"""The thread lock beside an SQLite database: an flock'd file per busy thread.

The kernel releases an flock when its holder exits, even on kill -9, so a
dead writer never keeps a thread. Each file holds its holder's pid, host and
start time, for the message a second writer gets.
"""

from __future__ import annotations

import datetime
import fcntl
import hashlib
import os
import socket
from collections.abc import Callable
from pathlib import Path

from self_refine.errors import ConfigError, ThreadBusyError

__all__ = ["flock_acquire", "lock_folder"]

Release = Callable[[], None]

_LOCK_FOLDER_SUFFIX = "-locks"


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


def flock_acquire(folder: Path, thread_id: str) -> Release:
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
