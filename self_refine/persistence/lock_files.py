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
from self_refine.safe_files import open_folder, open_own_file

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


def _open_lock_file(folder_fd: int, name: str, shown: Path) -> tuple[int, bool]:
    """Open (creating) the lock file, never through a link; (fd, writable).

    Read-only works for flock too (a lock file another user made).
    """
    create = os.O_RDWR | os.O_CREAT
    try:
        return open_own_file(folder_fd, name, create, shown=str(shown), mode=0o666), True
    except PermissionError as refused:
        try:
            return open_own_file(folder_fd, name, os.O_RDONLY, shown=str(shown)), False
        except FileNotFoundError:
            raise refused from None  # a folder we may not write, and no file yet: not a race


def _same_file(folder_fd: int, name: str, fd: int) -> bool:
    """Whether `name` in the folder is still the file open as `fd` (not unlinked, not replaced)."""
    try:
        found = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return found.st_ino == os.fstat(fd).st_ino and found.st_dev == os.fstat(fd).st_dev


def flock_acquire(folder: Path, thread_id: str) -> Release:
    """Hold the thread's lock file, or raise ThreadBusyError naming its holder.

    The file is removed on release while still locked; a process that opened
    it before then finds, once it has the lock, that the path no longer names
    its file, and starts over (so two processes never hold two different files).
    Neither the folder nor the file is ever a link (`self_refine.safe_files`).
    """
    path = _lock_file(folder, thread_id)
    name = path.name
    while True:
        folder_fd = _open_folder(folder)
        try:
            fd, writable = _open_lock_file(folder_fd, name, path)
        except FileNotFoundError:
            os.close(folder_fd)
            continue  # the folder went away (its last holder released it): make it again
        except OSError as error:
            os.close(folder_fd)
            raise ConfigError(
                f"cannot create the thread lock file {str(path)!r} ({error.strerror}): "
                "the folder of the database must be writable"
            ) from None
        except BaseException:
            os.close(folder_fd)
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            os.close(folder_fd)
            raise ThreadBusyError(thread_id, holder) from None
        if _same_file(folder_fd, name, fd):
            break
        os.close(fd)
        os.close(folder_fd)
    if writable:
        os.ftruncate(fd, 0)
        os.pwrite(fd, _holder_text(), 0)

    def release() -> None:
        try:
            os.unlink(name, dir_fd=folder_fd)
        except OSError:
            pass  # gone already, or a read-only folder: the next holder reuses it
        os.close(fd)
        os.close(folder_fd)
        try:
            folder.rmdir()  # only once no thread is busy; a taker in between makes it again
        except OSError:
            pass

    return release


def _open_folder(folder: Path) -> int:
    try:
        return open_folder(folder, create=True)
    except OSError as error:
        raise ConfigError(
            f"cannot create the thread lock folder {str(folder)!r} ({error.strerror}): "
            "the folder of the database must be writable"
        ) from None
