"""Target 3: how close a batch gets to what the model server can serve, and its CPU per call.

200 items, each refined for 3 steps (the stand-in critic is never satisfied,
so every item makes 8 calls: generate, then critique and refine three times,
and the last critique), go through the real `ChatOpenAI` client to the
stand-in server in its own process, which answers after 500 ms and serves at
most 32 requests at once. The ideal time is the calls the server served x
500 ms / 32. Measured in fresh processes (`batch_runs.py`): `self-refine batch
--concurrency 32` as a user runs it, and two plain asyncio loops over the
same client with the same prompts and calls: one that starts every item and
holds the calls to 32 with a semaphore, one that runs 32 items at a time.
CPU time is the batch process's own (all its threads), after its imports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.batch_runs import SLOTS, STEPS
from benchmarks.openai_stub import serve
from benchmarks.report import Row, suite_main

DELAY = 0.5
ITEMS = 200
QUICK_ITEMS = 72
CALLS_PER_ITEM = 2 * STEPS + 2


def _env() -> dict[str, str]:
    env = dict(os.environ, LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false")
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def _check(output: Path, items: int) -> None:
    """Every item finished, after exactly the 3 refine steps."""
    records = [json.loads(line) for line in output.read_text().splitlines()]
    steps = {len(r["attempts"]) - 1 for r in records}
    if len({r["id"] for r in records}) != items or steps != {STEPS}:
        raise RuntimeError(f"expected {items} items of {STEPS} steps, got {len(records)}: {steps}")


def _measure(way: str, items: int) -> dict[str, Any]:
    """Run one batch against a fresh server; its wall and CPU seconds and the calls served."""
    with tempfile.TemporaryDirectory(prefix="self-refine-bench-") as name:
        folder = Path(name)
        record = folder / "requests.jsonl"
        with serve(delay=DELAY, max_concurrency=SLOTS, record=record) as url:
            done = subprocess.run(
                [sys.executable, "-m", "benchmarks.batch_runs", way, url, str(items), name],
                capture_output=True,
                text=True,
                env=_env(),
                timeout=600,
            )
        if done.returncode != 0:
            raise RuntimeError(f"{way} batch failed: {done.stderr.strip()[-500:]}")
        _check(folder / "out.jsonl", items)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result["calls"] = len(record.read_text().splitlines())
    result["ideal"] = result["calls"] * DELAY / SLOTS
    return dict(result)


def run(quick: bool) -> list[Row]:
    """Time the library's batch and the plain loops against the ideal; compare CPU per call."""
    items = QUICK_ITEMS if quick else ITEMS
    library, plain, per_item = (_measure(way, items) for way in ("library", "plain", "plain-items"))
    setting = (
        f"{items} items, {STEPS} refine steps each ({items * CALLS_PER_ITEM:,} model calls), "
        f"ChatOpenAI to a local server ({DELAY * 1000:.0f} ms per answer, {SLOTS} at once)"
    )
    cpu_library, cpu_plain = (1000 * r["cpu"] / r["calls"] for r in (library, plain))
    ratio = library["wall"] / library["ideal"]
    return [
        Row(
            3,
            f"batch of {setting}: `self-refine batch --concurrency {SLOTS}` against the ideal",
            "s",
            library["wall"],
            library["ideal"],
            f"ideal: calls x {DELAY * 1000:.0f} ms / {SLOTS}",
            "<= 1.15x ideal",
            ratio <= 1.15,
            note=f"{library['calls']:,} calls served",
        ),
        Row(
            3,
            f"the same batch, plain asyncio loop: every item started, calls held to {SLOTS}",
            "s",
            plain["wall"],
            plain["ideal"],
            "ideal",
            "reference",
            note="no checkpoints; the same ChatOpenAI client, prompts and calls",
        ),
        Row(
            3,
            f"the same batch, plain asyncio loop: {SLOTS} items at a time (a worker per slot)",
            "s",
            per_item["wall"],
            per_item["ideal"],
            "ideal",
            "reference",
            note=f"the last {items % SLOTS or SLOTS} items run their calls alone at the end",
        ),
        Row(
            3,
            "orchestrator CPU per model call, `self-refine batch`",
            "ms",
            cpu_library,
            cpu_plain,
            "plain asyncio loop",
            "reference",
            note=f"adds {cpu_library - cpu_plain:.1f} ms per call",
        ),
    ]


if __name__ == "__main__":
    sys.exit(suite_main(run))
