"""Output paths checked before any work: writable, and never one of the command's other files."""

from __future__ import annotations

import os
from pathlib import Path

from self_refine.errors import ConfigError

__all__ = ["check_writable", "refuse_same_files"]


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
