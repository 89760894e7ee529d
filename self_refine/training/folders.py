"""What the training commands may write: a new or empty folder, or one the user says to replace.

`examples/train_grpo.py --out` and `python -m self_refine.training.evaluate --out` call
`check_out_folder` before any model loads, so a user's own files (a `train.jsonl`, an
`evaluation.md`, a regular file of the folder's name) are never written over by mistake.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from self_refine.errors import ConfigError

__all__ = ["check_out_folder", "clear_written"]


def check_out_folder(
    folder: Path, writes: Sequence[str], *, replace: bool, option: str = "--out"
) -> None:
    """Refuse `folder` unless it is new, empty, or `replace` is set (and it is a folder).

    `writes` names what the command writes there, for the message.
    """
    if folder.exists() and not folder.is_dir():
        raise ConfigError(
            f"{option} {str(folder)!r} is a file, not a folder: name a new folder "
            "(nothing was written)"
        )
    if replace or not folder.is_dir():
        return
    held = sorted(entry.name for entry in folder.iterdir())
    if held:
        shown = ", ".join(held[:4]) + (f" and {len(held) - 4} more" if len(held) > 4 else "")
        raise ConfigError(
            f"{option} {str(folder)!r} already holds {shown}: name a new or empty folder, or "
            f"pass --replace to write there anyway ({', '.join(writes)} replaced, other files "
            "left alone; nothing was written)"
        )


def clear_written(folder: Path, writes: Sequence[str]) -> None:
    """Remove what a command writes from `folder` (files and folders of those names)."""
    for name in writes:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
