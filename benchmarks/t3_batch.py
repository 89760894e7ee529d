"""Target 3: how close a batch gets to what the model server can serve, and its CPU per call.

200 items, each refined for 3 steps (the stand-in critic is never satisfied,
so every item makes 8 calls: generate, then critique and refine three times,
and the last critique), go through the real `ChatOpenAI` client to the
stand-in server in its own process, which answers after 500 ms and serves at
most 32 requests at once. The ideal time is the calls the server served x
500 ms / 32. Measured in fresh processes (`batch_runs.py`): `self-refine batch
--concurrency 32` as a user runs it, `arefine_batch(..., concurrency=32)`, and
two plain asyncio loops over the same client with the same prompts and calls;
and in the peers' environment (`peers/batch.py`) DSPy's `Refine` (its own
client, `Refine.batch(num_threads=32)`: 7 calls per item) and
langgraph-reflection (`abatch`, 32 at a time: 8 calls per item). CPU time is
the batch process's own (all its threads), after its imports, over the calls
the server served.
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
from benchmarks.report import Row, median, suite_main

DELAY = 0.5
ITEMS = 200
QUICK_ITEMS = 72
CALLS_PER_ITEM = 2 * STEPS + 2
PEER_CALLS = {"dspy": 2 * STEPS + 1, "reflection": CALLS_PER_ITEM}
PLAIN_CPU_TARGET = 1.2
"""Issue 25: the doors' CPU per model call within this of the plain loop over the same client."""


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


def _command(way: str, url: str, items: int, folder: str) -> list[str]:
    if way in PEER_CALLS:
        from benchmarks.peers import peer_python

        return [str(peer_python()), "-m", "benchmarks.peers.batch", way, url, str(items)]
    return [sys.executable, "-m", "benchmarks.batch_runs", way, url, str(items), folder]


def measure(way: str, items: int) -> dict[str, Any]:
    """Run one batch against a fresh server; its wall and CPU seconds and the calls served."""
    with tempfile.TemporaryDirectory(prefix="self-refine-bench-") as name:
        folder = Path(name)
        record = folder / "requests.jsonl"
        with serve(delay=DELAY, max_concurrency=SLOTS, record=record) as url:
            done = subprocess.run(
                _command(way, url, items, name),
                capture_output=True,
                text=True,
                env=_env(),
                timeout=900,
            )
        if done.returncode != 0:
            raise RuntimeError(f"{way} batch failed: {done.stderr.strip()[-500:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result["calls"] = len(record.read_text().splitlines())
        expected = items * PEER_CALLS.get(way, CALLS_PER_ITEM)
        if result["calls"] < expected:  # more: a client retried a request (counted in the ideal)
            raise RuntimeError(f"{way}: the server served {result['calls']} calls, not {expected}")
        result["extra"] = result["calls"] - expected
        if way not in PEER_CALLS:
            _check(folder / "out.jsonl", items)
    result["ideal"] = result["calls"] * DELAY / SLOTS
    result["ratio"] = result["wall"] / result["ideal"]
    result["cpu_per_call"] = 1000 * result["cpu"] / result["calls"]
    return dict(result)


WAYS = ("library", "api", "dspy", "reflection", "plain", "plain-items")


def run(quick: bool) -> list[Row]:
    """Time the library's batches, the peers' and the plain loops against the ideal."""
    items = QUICK_ITEMS if quick else ITEMS
    repeats = 1 if quick else 2
    runs: dict[str, list[dict[str, Any]]] = {way: [] for way in WAYS}
    for _ in range(repeats):
        for way in WAYS:
            runs[way].append(measure(way, items))
    got = {
        way: {key: median([r[key] for r in results]) for key in results[0]}
        for way, results in runs.items()
    }
    setting = (
        f"{items} items, {STEPS} refine steps each ({items * CALLS_PER_ITEM:,} model calls), "
        f"ChatOpenAI to a local server ({DELAY * 1000:.0f} ms per answer, {SLOTS} at once)"
    )
    dspy_cpu = got["dspy"]["cpu_per_call"]
    ideal = f"ideal: calls x {DELAY * 1000:.0f} ms / {SLOTS}"

    def wall(way: str, measure: str, goal: str = "reference", note: str = "") -> Row:
        ratio = got[way]["ratio"]
        met = ratio <= 1.1 if goal != "reference" and goal != "peer" else None
        return Row(3, measure, "s", got[way]["wall"], got[way]["ideal"], ideal, goal, met, note)

    def cpu(way: str, measure: str, goal: str = "reference") -> Row:
        value = got[way]["cpu_per_call"]
        met = value <= dspy_cpu if goal.startswith("<=") else None
        return Row(3, measure, "ms", value, dspy_cpu, "DSPy Refine", goal, met)

    plain_cpu = got["plain"]["cpu_per_call"]

    def over_plain(way: str, measure: str) -> Row:
        value = got[way]["cpu_per_call"]
        met = value <= PLAIN_CPU_TARGET * plain_cpu
        note = "best-of figures alternating: `python -m benchmarks.cpu_check`"
        return Row(3, measure, "ms", value, plain_cpu, "plain asyncio loop", "<= 1.2x", met, note)

    repeat_note = f"median of {repeats} runs" if repeats > 1 else "one run"
    return [
        wall(
            "library",
            f"batch of {setting}: `self-refine batch --concurrency {SLOTS}`",
            "<= 1.1x ideal",
            f"{got['library']['calls']:,.0f} calls served; {repeat_note}; calls beyond the "
            f"{CALLS_PER_ITEM} per item (client retries): "
            + ", ".join(f"{way} {got[way]['extra']:.0f}" for way in WAYS),
        ),
        wall("api", f"the same batch, `arefine_batch(concurrency={SLOTS})`", "<= 1.1x ideal"),
        wall(
            "dspy",
            f"the same batch, DSPy Refine (N={STEPS + 1}, Refine.batch, {SLOTS} threads)",
            "peer",
            f"{PEER_CALLS['dspy']} calls per item",
        ),
        wall(
            "reflection",
            f"the same batch, langgraph-reflection (abatch, max_concurrency {SLOTS})",
            "peer",
            "no checkpointer",
        ),
        wall(
            "plain",
            f"the same batch, plain asyncio loop: every item started, calls held to {SLOTS}",
            note="no checkpoints; the same ChatOpenAI client, prompts and calls",
        ),
        wall(
            "plain-items",
            f"the same batch, plain asyncio loop: {SLOTS} items at a time (a worker per slot)",
            note=f"the last {items % SLOTS or SLOTS} items run their calls alone at the end",
        ),
        cpu("library", "orchestrator CPU per model call, `self-refine batch`", "<= DSPy Refine's"),
        cpu("api", "orchestrator CPU per model call, `arefine_batch`", "<= DSPy Refine's"),
        cpu("reflection", "orchestrator CPU per model call, langgraph-reflection", "peer"),
        cpu("plain", "orchestrator CPU per model call, plain asyncio loop (ChatOpenAI)"),
        over_plain("library", "orchestrator CPU per model call over the plain loop's, CLI"),
        over_plain("api", "orchestrator CPU per model call over the plain loop's, API"),
    ]


if __name__ == "__main__":
    sys.exit(suite_main(run))
