"""Where a quality run writes: a new dated name, never over files already there unless asked."""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

__all__ = [
    "PLOT_MISSING",
    "dated_stem",
    "pyplot",
    "refuse_existing",
    "show_page",
    "warn_no_plot",
]

PLOT_MISSING = (
    "matplotlib is not installed, so the .png was NOT written: "
    "pip install -e '.[plot]' (or '.[dev]') and run again"
)


def dated_stem(prefix: str, model_name: str, when: datetime.datetime) -> str:
    """`<prefix>-<model>-<date>-<hhmm>`: each run a name of its own."""
    model = re.sub(r"[^\w.-]+", "-", model_name)[:60].removesuffix(".gguf")
    return f"{prefix}-{model}-{when:%Y-%m-%d-%H%M}"


def refuse_existing(paths: list[Path], overwrite: bool) -> None:
    """Exit with a message naming what is there, unless `overwrite` says replace it."""
    there = [path for path in paths if path.exists()]
    if there and not overwrite:
        names = ", ".join(str(path) for path in there)
        raise SystemExit(
            f"refusing to overwrite {names}: pass --overwrite to replace it, or choose "
            "another --name or --out"
        )


def warn_no_plot() -> None:
    """Say on stderr, where it cannot be missed, that the plot was not written."""
    import sys

    print(f"\n*** {PLOT_MISSING} ***\n", file=sys.stderr, flush=True)


def pyplot() -> Any:
    """matplotlib's pyplot drawing to files (the Agg backend), or None when it is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def show_page(lines: list[str], out: Path | None) -> None:
    """A page of markdown lines: written to `out` where given, and printed."""
    text = "\n".join(lines) + "\n"
    if out:
        out.write_text(text)
    print(text)
