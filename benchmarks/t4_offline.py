"""Target 4: an offline batch of tiny items, its cost per item and its memory, and its resume.

`self-refine batch --model offline` (the deterministic stand-in, which answers
in microseconds, so what is measured is the graph, the checkpoints and the
output file) refines 2,000 and 20,000 one-line items in fresh processes, as a
user runs it (SQLite checkpoints, each result line fsynced); then the same
command again, which finds every item finished and only writes the summary.
Measured: wall and CPU time per item (start-up included, so the larger run is
the fairer figure), and the peak resident memory of each process (the kernel's
`ru_maxrss`), which must not grow with the number of items.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.report import Row, suite_main

SIZES = (2_000, 20_000)
QUICK_SIZES = (200, 2_000)


def _items(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for n in range(count):
            task = f"Write one short sentence about the number {n}."
            out.write(json.dumps({"id": f"item-{n}", "task": task}) + "\n")


def _env() -> dict[str, str]:
    env = dict(os.environ, LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false")
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def _batch(folder: Path) -> dict[str, float]:
    """Run the batch command once in a fresh process: wall, CPU seconds and peak RSS (bytes)."""
    command = [sys.executable, "-m", "self_refine.cli", "batch", str(folder / "in.jsonl")]
    command += ["-o", str(folder / "out.jsonl"), "--db", str(folder / "db.sqlite")]
    command += ["--model", "offline"]
    start = time.perf_counter()
    process = subprocess.Popen(
        command, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    stderr = process.stderr.read().decode() if process.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"the batch failed: {stderr.strip()[-500:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss * 1024}


def _measure(count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="self-refine-bench-") as name:
        folder = Path(name)
        _items(folder / "in.jsonl", count)
        first = _batch(folder)
        lines = (folder / "out.jsonl").read_text().count("\n")
        if lines != count:
            raise RuntimeError(f"expected {count} result lines, got {lines}")
        again = _batch(folder)
    return {"first": first, "again": again}


def run(quick: bool) -> list[Row]:
    """The small and the large batch, each run and resumed."""
    small, large = QUICK_SIZES if quick else SIZES
    got = {count: _measure(count) for count in (small, large)}
    per_item = {n: 1000 * got[n]["first"]["wall"] / n for n in got}
    cpu_item = {n: 1000 * got[n]["first"]["cpu"] / n for n in got}
    skip_item = {n: 1000 * got[n]["again"]["wall"] / n for n in got}
    rss = {n: got[n]["first"]["rss"] for n in got}
    rss_again = {n: got[n]["again"]["rss"] for n in got}
    return [
        Row(
            4,
            f"offline batch of {large:,} tiny items: time per item (graph, checkpoints, output)",
            "ms",
            per_item[large],
            per_item[small],
            f"{small:,} items",
            "<= 20 ms per item",
            per_item[large] <= 20,
            f"CPU {cpu_item[large]:.1f} ms per item ({cpu_item[small]:.1f} at {small:,}); "
            "start-up included",
        ),
        Row(
            4,
            f"peak memory (RSS) of the {large:,}-item batch",
            "bytes",
            rss[large],
            rss[small],
            f"{small:,} items",
            "<= 1.2x the smaller run",
            rss[large] <= 1.2 * rss[small],
        ),
        Row(
            4,
            f"peak memory (RSS) of its rerun, every item already finished ({large:,} items)",
            "bytes",
            rss_again[large],
            rss[small],
            f"the {small:,}-item batch",
            "<= 1.2x the smaller run",
            rss_again[large] <= 1.2 * rss[small],
            f"the {small:,}-item rerun: {rss_again[small] / 1e6:.0f} MB",
        ),
        Row(
            4,
            f"rerun that skips every finished item: time per item ({large:,} items)",
            "ms",
            skip_item[large],
            skip_item[small],
            f"{small:,} items",
            "<= 0.5 ms per item",
            skip_item[large] <= 0.5,
            "start-up included",
        ),
    ]


if __name__ == "__main__":
    sys.exit(suite_main(run))
