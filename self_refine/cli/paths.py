"""Refuse a command whose input and output paths name the same file."""

from __future__ import annotations

import os

from self_refine.errors import ConfigError

__all__ = ["refuse_same_files"]


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
