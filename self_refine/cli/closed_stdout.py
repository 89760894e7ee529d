"""Handle a standard output closed by its reader (`self-refine show --json | head -1`)."""

from __future__ import annotations

import os
import sys

__all__ = ["drop_closed_stdout"]


def drop_closed_stdout() -> None:
    """Point stdout at /dev/null so no later write or the exit flush raises again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)
