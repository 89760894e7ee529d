"""Rows of measurements, and the Markdown table and JSON file they are written to."""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["Row", "machine", "markdown_table", "median", "suite_main"]


@dataclass
class Row:
    """One figure of the table: the library's value beside its baseline, and the target."""

    target: int
    measure: str
    unit: str
    value: float | None = None
    baseline: float | None = None
    baseline_label: str = ""
    goal: str = ""
    met: bool | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        """The value over the baseline, when both are there."""
        if self.value is None or not self.baseline:
            return None
        return self.value / self.baseline

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON object, with its ratio."""
        return {**asdict(self), "ratio": self.ratio}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Row:
        """Read a row back from its JSON object."""
        return cls(**{k: v for k, v in data.items() if k != "ratio"})


def median(values: Sequence[float]) -> float:
    """The median of the measurements."""
    return statistics.median(values)


def _amount(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit == "bytes":
        return f"{value / 1e6:.2f} MB" if value >= 1e5 else f"{value / 1e3:.1f} KB"
    if unit == "ms":
        return f"{value:.2f} ms"
    if unit == "s":
        return f"{value:.3f} s"
    if unit == "tokens":
        return f"{value:,.0f} tokens"
    return f"{value:.2f}"


def _met(met: bool | None) -> str:
    return {True: "yes", False: "**no**", None: "-"}[met]


def markdown_table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table, in target order."""
    lines = [
        "| # | measure | library | baseline | ratio | target | met | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in sorted(rows, key=lambda r: r.target):
        baseline = _amount(row.baseline, row.unit)
        if row.baseline_label and row.baseline is not None:
            baseline = f"{baseline} ({row.baseline_label})"
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x"
        cells = [
            str(row.target),
            row.measure,
            _amount(row.value, row.unit),
            baseline,
            ratio,
            row.goal or "-",
            _met(row.met),
            row.note or "",
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    versions = {}
    for package in ("langgraph", "langchain-core", "langchain-openai", "langgraph-checkpoint"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "packages": versions,
    }


def suite_main(run: Callable[[bool], list[Row]]) -> int:
    """Command line of one suite: run it, print its table, optionally write its rows as JSON."""
    parser = argparse.ArgumentParser(description=sys.modules["__main__"].__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, for a smoke run")
    parser.add_argument("--json", type=Path, help="write the rows to this file")
    args = parser.parse_args()
    rows = run(args.quick)
    print(markdown_table(rows))
    if args.json:
        args.json.write_text(json.dumps([row.to_json() for row in rows], indent=2))
    return 0
