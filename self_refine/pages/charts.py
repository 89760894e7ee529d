"""Small inline SVG charts: the geometry is computed here, the template draws it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["BarChart", "LineChart", "bar_chart", "line_chart"]

_WIDTH, _HEIGHT, _PAD = 320, 160, 28


@dataclass(frozen=True)
class LineChart:
    """A line of values over steps 0..n-1, scaled into an SVG box."""

    title: str
    values: list[float]
    labels: list[str]
    points: list[tuple[float, float]] = field(default_factory=list)
    width: int = _WIDTH
    height: int = _HEIGHT

    @property
    def polyline(self) -> str:
        """The points as an SVG `points` attribute."""
        return " ".join(f"{x:.1f},{y:.1f}" for x, y in self.points)


@dataclass(frozen=True)
class BarChart:
    """Named counts as horizontal bars."""

    title: str
    bars: list[tuple[str, int, float]]
    """(label, count, bar width in SVG units)."""
    width: int = _WIDTH

    @property
    def height(self) -> int:
        """Height of the SVG: one row per bar."""
        return 22 * len(self.bars) + 8


def line_chart(title: str, values: Sequence[float], *, top: float = 1.0) -> LineChart:
    """Plot `values` (0..top) at steps 0, 1, ...; labels show them as printed."""
    plot_w, plot_h = _WIDTH - 2 * _PAD, _HEIGHT - 2 * _PAD
    span = max(len(values) - 1, 1)
    points = [
        (_PAD + plot_w * k / span, _PAD + plot_h * (1 - min(max(v / top, 0.0), 1.0)))
        for k, v in enumerate(values)
    ]
    labels = [f"{v:.2f}" if top == 1.0 else f"{v:.1f}" for v in values]
    return LineChart(title, [float(v) for v in values], labels, points)


def bar_chart(title: str, counts: dict[str, int]) -> BarChart:
    """Bars for `counts`, longest for the largest count."""
    largest = max(counts.values(), default=0) or 1
    room = _WIDTH - 170
    return BarChart(title, [(k, v, room * v / largest) for k, v in counts.items()])
