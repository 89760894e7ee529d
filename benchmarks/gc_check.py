"""What the garbage collector costs a batch per model call, with and without the freeze.

    python -m benchmarks.gc_check [ITEMS]

Target 3's batch (ITEMS items x 8 calls through the real `ChatOpenAI` client to
the stand-in server, 20 ms per answer, 32 at once) through `arefine_batch` and
`self-refine batch`, in this process after a small warm-up batch, each way twice:
as it runs (the objects alive at the batch's start frozen out of the collector's
passes, `self_refine/batch/heap.py`) and with that freeze taken out. Prints the
CPU per model call of the whole process and the collector's own, per generation
(`gc.callbacks`): the full passes (generation 2) are what the freeze saves. A
benchmark, not a test: it never fails.
"""

from __future__ import annotations

import asyncio
import gc
import io
import json
import os
import sys
import tempfile
import time
from contextlib import nullcontext, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from benchmarks.batch_runs import STEPS, _api, _library, task_text
from benchmarks.openai_stub import serve

CALLS_PER_ITEM = 2 * STEPS + 2


class _Collections:
    """The collector's passes while it watches: count and CPU seconds per generation."""

    def __init__(self) -> None:
        self.seen: dict[int, list[float]] = {}
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.process_time()
            return
        got = self.seen.setdefault(info["generation"], [0, 0.0])
        got[0] += 1
        got[1] += time.process_time() - self._started


def _batch(way: str, url: str, items: int, folder: Path) -> None:
    folder.mkdir()
    if way == "api":
        asyncio.run(_api(url, items, folder))
        return
    source = folder / "in.jsonl"
    lines = (json.dumps({"id": f"item-{n}", "task": task_text(n)}) for n in range(items))
    source.write_text("\n".join(lines) + "\n")
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        _library(url, source, folder)


def measure(way: str, url: str, items: int, folder: Path, frozen: bool) -> str:
    """One batch of `way`, watched; its line of figures."""
    import self_refine.batch.runner as runner

    real = runner.long_lived_frozen
    if not frozen:
        runner.long_lived_frozen = nullcontext  # type: ignore[assignment]
    watch = _Collections()
    gc.collect()
    gc.callbacks.append(watch)
    try:
        started = time.process_time()
        _batch(way, url, items, folder)
        cpu = time.process_time() - started
    finally:
        gc.callbacks.remove(watch)
        runner.long_lived_frozen = real
    calls = items * CALLS_PER_ITEM
    passes = ", ".join(
        f"gen {gen}: {count:.0f} passes, {seconds / calls * 1000:.3f} ms"
        for gen, (count, seconds) in sorted(watch.seen.items())
    )
    name = "arefine_batch" if way == "api" else "self-refine batch"
    state = "frozen" if frozen else "not frozen"
    return f"{name:<18} {state:<11} CPU per call {cpu / calls * 1000:.2f} ms; collector: {passes}"


def main(argv: list[str] | None = None) -> int:
    """Warm up, then each way with and without the freeze, twice, alternating."""
    args = sys.argv[1:] if argv is None else argv
    items = int(args[0]) if args else 96
    load = os.getloadavg()[0]
    with serve(delay=0.02, max_concurrency=32) as url, tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for way in ("api", "library"):
            _batch(way, url, 4, folder / f"warm-{way}")
        runs = iter(range(100))
        for _ in range(2):
            for way in ("api", "library"):
                for frozen in (False, True):
                    print(measure(way, url, items, folder / f"run-{next(runs)}", frozen))
    print(f"{items} items; load average (1 min) {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    sys.exit(main())
