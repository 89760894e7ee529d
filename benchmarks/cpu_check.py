"""CPU per model call of the library's batch doors over a plain asyncio loop, in one run.

    python -m benchmarks.cpu_check [ROUNDS] [ITEMS]

Target 3's batch (ITEMS items x 8 calls through the real `ChatOpenAI` client to
the stand-in server) through `self-refine batch`, `arefine_batch` and the plain
asyncio loop over the same client (`batch_runs.py`), each in a fresh process
against a fresh server, alternating for ROUNDS rounds (default 5 rounds of 48
items, about two minutes). CPU time is the batch process's own (all its
threads) over the calls the server served, so the machine's other work slows
it less than wall time; it still does (caches, frequency), so each way's best
round is compared, and the load average is printed beside the figures.
Prints each way's best and median CPU per call and the doors' ratio over the
plain loop; the target is <= 1.2x (issue 25, part 4). A benchmark, not a test:
it never fails.
"""

from __future__ import annotations

import os
import sys

from benchmarks.report import median
from benchmarks.t3_batch import PLAIN_CPU_TARGET, measure

TARGET = PLAIN_CPU_TARGET
WAYS = ("library", "api", "plain")
NAMES = {"library": "self-refine batch", "api": "arefine_batch", "plain": "plain asyncio loop"}


def cpu_per_call(rounds: int, items: int) -> dict[str, list[float]]:
    """Each way's CPU ms per model call, one figure per round, the ways alternating."""
    got: dict[str, list[float]] = {way: [] for way in WAYS}
    for _ in range(rounds):
        for way in WAYS:
            got[way].append(measure(way, items)["cpu_per_call"])
    return got


def main(argv: list[str] | None = None) -> int:
    """Measure the doors and the plain loop, alternating; print best, median and ratios."""
    args = sys.argv[1:] if argv is None else argv
    rounds = int(args[0]) if args else 5
    items = int(args[1]) if len(args) > 1 else 48
    load = os.getloadavg()[0]
    got = cpu_per_call(rounds, items)
    best = {way: min(values) for way, values in got.items()}
    for way, values in got.items():
        ratio = best[way] / best["plain"]
        print(
            f"{NAMES[way]:<20} CPU per call best {best[way]:.2f} ms, median "
            f"{median(values):.2f} ms  ({ratio:.2f}x the plain loop's best)"
        )
    print(
        f"{rounds} rounds of {items} items; target <= {TARGET}x; load average (1 min) "
        f"{load:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
