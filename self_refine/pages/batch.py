"""The data of a batch page: the summary, its charts, and one row per item."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from self_refine.batch.metrics import curve_label, steps_lines, summarize
from self_refine.pages.charts import bar_chart, line_chart
from self_refine.pages.thread import thread_view

__all__ = ["OUTCOMES", "batch_view", "outcome"]

OUTCOMES = ("improved", "broken", "still wrong", "still right", "unjudged")
"""What refinement did to an item, as the filters name it."""


def outcome(record: dict[str, Any]) -> str:
    """What refinement did to the item: improved, broken, still wrong, still right, unjudged."""
    first, final = record.get("correct_first"), record.get("correct_final")
    if first is None or final is None:
        return "unjudged"
    if first == final:
        return "still right" if final else "still wrong"
    return "improved" if final else "broken"


def _charts(summary: dict[str, Any]) -> list[Any]:
    charts: list[Any] = []
    accuracy = summary["accuracy_by_iteration"]
    if accuracy:
        charts.append(
            line_chart(curve_label("accuracy (%)", summary), [100 * v for v in accuracy], top=100)
        )
    elif summary["mean_score_by_iteration"]:
        charts.append(
            line_chart(curve_label("mean score", summary), summary["mean_score_by_iteration"])
        )
    if summary["judged"]:
        charts.append(bar_chart("transitions (first -> final)", summary["transitions"]))
    charts.append(bar_chart("stop reasons", summary["stop_reasons"]))
    return charts


def _candidates_per_step(record: dict[str, Any]) -> int:
    """The most candidates a step of the item's run sampled (1: one reply per step)."""
    return max(
        (len(a.get("candidates") or []) + 1 for a in record.get("attempts") or []), default=1
    )


def batch_view(records: Sequence[dict[str, Any]], *, title: str) -> dict[str, Any]:
    """The whole batch page's data; the numbers are `batch.metrics.summarize`'s."""
    summary = summarize(records)
    rows = sorted(records, key=lambda r: str(r.get("id")))
    items = [
        {
            "id": str(record.get("id")),
            "outcome": outcome(record),
            "stop_reason": str(record.get("stop_reason")),
            "iterations": int(record.get("iterations") or 0),
            "score": record.get("score"),
            "tokens": int((record.get("usage") or {}).get("total_tokens", 0)),
            "candidates": _candidates_per_step(record),
            "thread": thread_view(record, title=str(record.get("id"))),
        }
        for record in rows
    ]
    counts = {name: sum(1 for i in items if i["outcome"] == name) for name in OUTCOMES}
    return {
        "title": title,
        "summary": summary,
        "steps": [line.split(": ", 1) for line in steps_lines(summary)],
        "charts": _charts(summary),
        "items": items,
        "outcomes": {k: v for k, v in counts.items() if v},
        "stop_reasons": list(summary["stop_reasons"]),
    }
