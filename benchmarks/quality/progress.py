"""Where a long quality run is, and the time it has left, said on stderr after each item."""

from __future__ import annotations

import sys
import time

from benchmarks.quality.reply_cache import ReplyCache

__all__ = ["Progress"]


class Progress:
    """Items done, and the time left for this set's strategy and for the whole run, on stderr.

    A phase (a set's first drafts, or one strategy on a set) not yet begun is estimated
    from the same strategy's seconds per item on an earlier set, else from the mean of
    every item so far.
    """

    def __init__(self, plan: list[tuple[str, str, int]], cache: ReplyCache | None) -> None:
        self.plan, self.cache = plan, cache
        self.started = time.perf_counter()
        self.rates: dict[str, list[float]] = {}
        self.phase = 0
        self.done = 0
        self.phase_started = self.started

    def begin(self, index: int) -> None:
        """Start phase `index` of the plan."""
        self.phase, self.done, self.phase_started = index, 0, time.perf_counter()

    def item(self) -> None:
        """One item of the phase finished: print where the run is."""
        now = time.perf_counter()
        self.done += 1
        name, strategy, total = self.plan[self.phase]
        rate = (now - self.phase_started) / self.done
        self.rates.setdefault(strategy, []).append(rate)
        here = rate * (total - self.done)
        later = sum(self._rate(s) * n for _, s, n in self.plan[self.phase + 1 :])
        cache = ""
        if self.cache is not None:
            counts = self.cache.counts()
            cache = f"; cache {counts['hits']} hits, {counts['misses']} misses"
        print(
            f"[{name}/{strategy}] {self.done}/{total} items, {rate:.0f} s/item, "
            f"~{_clock(here)} left here; {_clock(now - self.started)} so far, "
            f"~{_clock(here + later)} left in all{cache}",
            file=sys.stderr,
            flush=True,
        )

    def _rate(self, strategy: str) -> float:
        if self.rates.get(strategy):
            return self.rates[strategy][-1]
        latest = [rates[-1] for rates in self.rates.values()]
        return sum(latest) / len(latest) if latest else 0.0


def _clock(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"
