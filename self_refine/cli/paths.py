"""Paths of the command line: files it reads capped and checked, files it writes checked first.

Output paths are checked before any work: writable, and never one of the
command's other files.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from self_refine.errors import ConfigError

__all__ = ["check_writable", "read_capped", "refuse_same_files"]


def read_capped(path: str, label: str, limit: int, *, kind: str, too_big: str) -> tuple[bytes, int]:
    """The bytes of the regular file or pipe at `path`, and its mode; at most `limit` bytes.

    Anything else (a folder, a device such as /dev/urandom, a larger file) is a
    ConfigError naming `label`; `kind` says what the file should hold, `too_big`
    what to do about a larger one.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise ConfigError(f"{label}: {error.strerror or error}: give the path of {kind}") from None
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise ConfigError(f"{label} is not a regular file: give the path of {kind}")
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as error:
        raise ConfigError(f"{label}: {error.strerror or error}: make it readable to you") from None
    if len(data) > limit:
        size = f"{limit // 1_000_000} MB" if limit >= 1_000_000 else f"{limit // 1024} KB"
        raise ConfigError(f"{label} is over {size}, {too_big}")
    return data, mode


def check_writable(path: str | None, label: str) -> None:
    """Raise ConfigError, naming `label`, when a file could not be written at `path` later."""
    if not path:
        return
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"cannot write {label} {path!r}: it is a folder; give a file path")
    folder = next((p for p in target.absolute().parents if p.exists()), None)
    if folder is None or not folder.is_dir() or not os.access(folder, os.W_OK):
        raise ConfigError(
            f"cannot write {label} {path!r}: {folder} is not a writable folder; choose another path"
        )
    if target.exists() and not os.access(target, os.W_OK):
        raise ConfigError(
            f"cannot write {label} {path!r}: the file is read-only; choose another path"
        )


def _same(first: str, second: str) -> bool:
    """Whether two paths are one file, after links (symbolic and hard)."""
    if os.path.realpath(first) == os.path.realpath(second):
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def refuse_same_files(paths: list[tuple[str, str | None]]) -> None:
    """Raise ConfigError when any two of the (flag, path) pairs are the same file.

    Called before any work, so a dataset or a results file is never overwritten.
    """
    given = [(flag, path) for flag, path in paths if path]
    for index, (flag, path) in enumerate(given):
        for other_flag, other_path in given[index + 1 :]:
            if _same(path, other_path):
                raise ConfigError(
                    f"{flag} and {other_flag} are the same file ({path!r}): "
                    "give each its own path so neither is overwritten"
                )
