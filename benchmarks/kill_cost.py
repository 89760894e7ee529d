"""What a SIGKILL of a batch with candidates costs: the model calls it repeats.

A batch of `--items` items (`--candidates 3 --concurrency 4 --max-iterations 0`: three
drafts and three critiques an item) runs against the stand-in server
(`benchmarks/openai_stub.py`, `--delay` seconds a reply), once straight through for its
call count, then again in a fresh directory, killed with SIGKILL `--kills` times (each
time once it has sent a random 4 to 16 more requests, so every kill lands mid-work,
whatever the start-up takes) and run to the end. The repeated calls are the second's
count over the first's; per kill, that over the kills.

    python -m benchmarks.kill_cost                      # this checkout
    python -m benchmarks.kill_cost --tree /path/to/other/checkout

`--tree` runs another checkout's `self_refine` (a before/after on one machine); the
server is always this checkout's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.openai_stub import serve

TASK = "Write one sentence using the words: dog, park, ball, tree, and the number {n}."


def _batch(tree: Path, url: str, workdir: Path, items: int) -> subprocess.Popen[bytes]:
    flags = ["--candidates", "3", "--concurrency", "4", "--max-iterations", "0"]
    return subprocess.Popen(
        [sys.executable, "-m", "self_refine.cli", "batch", "in.jsonl", "-o", "out.jsonl",
         "--db", "db", "--model", "stub", "--base-url", url, *flags],
        cwd=workdir,
        env={**os.environ, "PYTHONPATH": str(tree), "OPENAI_API_KEY": "sk-stub"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip


def _count(record: Path) -> int:
    return len(record.read_text().splitlines()) if record.exists() else 0


def _run(tree: Path, items: int, kills: int, delay: float, seed: int) -> tuple[int, int, int]:
    """(calls of a straight run, calls of the killed one, kills that landed mid-work)."""
    rng = random.Random(seed)
    counts = []
    landed = 0
    for killing in (0, kills):
        with tempfile.TemporaryDirectory(prefix="kill-cost-") as scratch:
            workdir = Path(scratch)
            lines = [json.dumps({"id": f"q{n}", "task": TASK.format(n=n)}) for n in range(items)]
            (workdir / "in.jsonl").write_text("\n".join(lines) + "\n")
            record = workdir / "requests.jsonl"
            with serve(delay=delay, record=record) as url:
                for _ in range(killing):
                    run = _batch(tree, url, workdir, items)
                    start, more = _count(record), rng.randint(4, 16)
                    while run.poll() is None and _count(record) < start + more:
                        time.sleep(0.02)
                    if run.poll() is None:
                        run.send_signal(signal.SIGKILL)
                        landed += 1
                    run.wait()
                final = _batch(tree, url, workdir, items)
                final.wait()
                done = len((workdir / "out.jsonl").read_text().splitlines())
                assert final.returncode == 0 and done == items, (final.returncode, done)
                counts.append(_count(record))
    return counts[0], counts[1], landed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--items", type=int, default=64)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--delay", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=53)
    args = parser.parse_args()
    straight, killed, landed = _run(args.tree, args.items, args.kills, args.delay, args.seed)
    extra = killed - straight
    print(
        f"tree {args.tree}: {args.items} items, straight {straight} calls; "
        f"{landed} kills mid-work: {killed} calls, {extra} repeated, "
        f"{extra / max(landed, 1):.1f} a kill"
    )


if __name__ == "__main__":
    main()
