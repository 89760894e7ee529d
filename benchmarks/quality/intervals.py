"""95% intervals: of one accuracy (Wilson), of a difference over the same items (bootstrap);
the exact McNemar test of a paired comparison (items gained and lost), and the words a
page says it in (`compared`: "beats" only where p < 0.05)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "SIGNIFICANT",
    "Interval",
    "PairedBootstrap",
    "compared",
    "mcnemar",
    "p_text",
    "paired_counts",
    "wilson",
]

SIGNIFICANT = 0.05
"""The exact McNemar p below which a page says one strategy beats (or falls below) another."""

_Z = 1.959963984540054
"""The standard normal's 97.5% quantile: two-sided 95%."""


@dataclass(frozen=True)
class Interval:
    """An estimate and its 95% interval."""

    value: float
    low: float
    high: float

    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of 0."""
        return self.low > 0 or self.high < 0

    def as_dict(self) -> dict[str, float]:
        """The interval as JSON writes it."""
        return {"value": self.value, "low": self.low, "high": self.high}


def wilson(right: int, n: int) -> Interval:
    """The share right of n with its Wilson score interval (sound at 0% and 100% too)."""
    if n <= 0:
        return Interval(0.0, 0.0, 1.0)
    share = right / n
    denominator = 1 + _Z**2 / n
    centre = (share + _Z**2 / (2 * n)) / denominator
    spread = _Z * math.sqrt(share * (1 - share) / n + _Z**2 / (4 * n * n)) / denominator
    low = 0.0 if right == 0 else max(0.0, centre - spread)
    high = 1.0 if right == n else min(1.0, centre + spread)
    return Interval(share, low, high)


class PairedBootstrap:
    """Differences of two strategies over the same items, resampled together.

    The items are drawn with replacement `resamples` times from a seeded generator;
    every comparison of a set uses the same draws, so its intervals are paired over
    items and the same seed gives the same intervals.
    """

    def __init__(self, items: int, *, resamples: int = 10_000, seed: int = 2026) -> None:
        rng = random.Random(seed)
        self.items = items
        self.resamples = resamples
        self._draws = [[rng.randrange(items) for _ in range(items)] for _ in range(resamples)]

    def difference(self, a: Sequence[float], b: Sequence[float]) -> Interval:
        """Mean of a - b over the items, with its 95% percentile interval."""
        if len(a) != self.items or len(b) != self.items:
            raise ValueError(f"both need {self.items} items, got {len(a)} and {len(b)}")
        if not self.items:
            return Interval(0.0, 0.0, 0.0)
        gaps = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
        means = sorted(sum(gaps[i] for i in draw) / self.items for draw in self._draws)
        last = len(means) - 1
        return Interval(
            sum(gaps) / self.items,
            means[round(0.025 * last)],
            means[round(0.975 * last)],
        )


def paired_counts(a: Sequence[bool], b: Sequence[bool]) -> tuple[int, int]:
    """Items a gets right and b wrong (gained), and the other way round (lost)."""
    if len(a) != len(b):
        raise ValueError(f"a paired comparison needs the same items, got {len(a)} and {len(b)}")
    gained = sum(bool(x) and not bool(y) for x, y in zip(a, b, strict=True))
    lost = sum(bool(y) and not bool(x) for x, y in zip(a, b, strict=True))
    return gained, lost


def mcnemar(gained: int, lost: int) -> float:
    """The exact two-sided McNemar p of `gained` against `lost` discordant items.

    Under the null each discordant item falls either way with probability 1/2: p is twice
    the binomial tail of the smaller count (at most 1). 4 gained, 0 lost: 0.125.
    """
    if gained < 0 or lost < 0:
        raise ValueError(f"counts must be >= 0, got {gained} and {lost}")
    n = gained + lost
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(gained, lost) + 1))
    return min(1.0, 2 * tail / 2**n)


def p_text(p: float) -> str:
    """An exact p as pages write it: three decimals, or in scientific form below 0.001."""
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def compared(mine: str, other: str, gained: int, lost: int, n: int) -> str:
    """A paired comparison in words, with its test: `mine` "beats" `other` only where the
    exact McNemar p is below `SIGNIFICANT` (or "falls below" it); otherwise it "points
    above" or "points below" it, said not to be significant, or the two tie.

    `gained` counts items `mine` gets right and `other` wrong, `lost` the other way, of
    `n` items both answered.
    """
    p = mcnemar(gained, lost)
    test = f"n = {n}, {gained} gained / {lost} lost, exact McNemar p = {p_text(p)}"
    if gained == lost:
        return f"{mine} ties with {other} ({test})"
    if p < SIGNIFICANT:
        return f"{mine} {'beats' if gained > lost else 'falls below'} {other} ({test})"
    way = "points above" if gained > lost else "points below"
    return f"{mine} {way} {other}, not significant ({test})"
