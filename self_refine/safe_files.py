"""The project's own lock, marker and temp files, made without ever following a link.

A symbolic link planted where such a file goes (a lock file beside a database, a
marker beside a model file) must not make the program write through it into a file
the link names. Every file of its own the program creates goes through here:

- `open_folder` opens a folder of the program's own (a database's lock folder)
  and refuses one that is a link;
- `open_own_file` opens or creates a file inside such a folder with `O_NOFOLLOW`,
  and refuses anything but a plain file (a link, a pipe, a device, a second
  hard link to someone's file);
- `replace_file` writes a whole file under a fresh name `mkstemp` picks in the
  same folder (created exclusively, so never a link), then renames it into place:
  a link at the final name is replaced, never written through.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from self_refine.errors import ConfigError

__all__ = ["open_folder", "open_own_file", "read_own_file", "replace_file"]


def _refused(path: str | os.PathLike[str], what: str) -> ConfigError:
    return ConfigError(
        f"{os.fspath(path)!r} is a link or not a plain {what}: self-refine never writes its "
        "own files through one; remove it and run again"
    )


def open_folder(folder: Path, *, create: bool = False) -> int:
    """A descriptor of `folder` (made first when `create`); a link there is refused.

    Only the last part of the path is checked: the folders above it are the user's.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(folder, flags)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refused(folder, "folder") from None
        raise
    try:
        os.mkdir(folder)  # the umask decides, as for any folder
    except FileExistsError:
        pass  # made by another process in between: opened below like any other
    return open_folder(folder)


def open_own_file(folder_fd: int, name: str, flags: int, *, shown: str, mode: int = 0o644) -> int:
    """Open `name` in the folder `folder_fd` with `flags` (os.O_CREAT creates it), never via a link.

    Anything but a plain file with at most one name (a link, a pipe, a device, a
    hard link to another file) is a ConfigError naming `shown`, the path to show.
    """
    try:
        fd = os.open(
            name,
            flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
            mode,
            dir_fd=folder_fd,
        )
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENXIO):  # ENXIO: a socket or an unread pipe
            raise _refused(shown, "file") from None
        raise
    found = os.fstat(fd)
    # A file another process just unlinked (0 names) is fine: its holder checks the path.
    if not stat.S_ISREG(found.st_mode) or found.st_nlink > 1:
        os.close(fd)
        raise _refused(shown, "file")
    return fd


def read_own_file(path: Path, limit: int = 1 << 16) -> bytes | None:
    """The first `limit` bytes of a plain file the program wrote; None when absent or not plain."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write `data` as the whole file at `path`: to a new file beside it, renamed into place.

    The temporary name is made by `mkstemp` (created exclusively, never a link);
    the rename replaces whatever `path` was, a link included, without writing
    through it. An error leaves `path` as it was and no temporary file behind.
    """
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
