"""Wall and CPU time of alternating runs, and the medians the tables compare."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

from benchmarks.report import median

__all__ = ["Clock", "Timed", "alternate"]

Timed = tuple[float, float]
"""(wall seconds, CPU seconds of all the process's threads)."""


class Clock:
    """Wall and CPU seconds (all threads of the process) since it was started."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def read(self) -> Timed:
        """Seconds since the start: (wall, CPU)."""
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def alternate(runs: dict[str, Callable[[], Timed]], repeats: int) -> dict[str, Timed]:
    """Run each measurement once to warm up, then `repeats` times in turn; the medians.

    Alternating spreads other people's load on a shared machine over every
    variant alike, so the ratios of the medians stay fair when the times do not.
    """
    for run in runs.values():
        run()
    times: dict[str, list[Timed]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            gc.collect()
            times[name].append(run())
    return {
        name: (median([w for w, _ in got]), median([c for _, c in got]))
        for name, got in times.items()
    }
