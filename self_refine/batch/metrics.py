"""The numbers of a batch: accuracy before and after, transitions, gains per iteration.

Everything is computed from result records (the lines of a batch output), in
an order-independent way, so a resumed run and an uninterrupted one agree.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from self_refine.cli.safe_text import terminal_safe

__all__ = ["TRANSITIONS", "format_summary", "summarize"]

TRANSITIONS = (
    "incorrect->correct",
    "incorrect->incorrect",
    "correct->correct",
    "correct->incorrect",
)


def _label(correct: bool) -> str:
    return "correct" if correct else "incorrect"


def _mean(values: Sequence[float]) -> float | None:
    return round(math.fsum(values) / len(values), 4) if values else None


def _at(series: Sequence[Any], k: int) -> Any:
    """The value after k refine steps: a run that stopped earlier keeps its last value."""
    return series[min(k, len(series) - 1)]


def _curve(series: list[Sequence[Any]]) -> list[float]:
    """Mean value after k = 0, 1, ... refine steps, over runs with a value at every step."""
    full = [[float(v) for v in s] for s in series if s and all(v is not None for v in s)]
    depth = max((len(s) for s in full), default=0)
    return [round(math.fsum(_at(s, k) for s in full) / len(full), 4) for k in range(depth)]


def summarize(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Summarize result records.

    Accuracy and transitions count the items judged at both ends
    (`correct_first` and `correct_final` not None); `accuracy_by_iteration[k]`
    is the accuracy had every run stopped after at most k refine steps.
    """
    rows = sorted(records, key=lambda r: str(r.get("id")))
    judged = [
        r for r in rows if r.get("correct_first") is not None and r.get("correct_final") is not None
    ]
    transitions = Counter(
        f"{_label(r['correct_first'])}->{_label(r['correct_final'])}" for r in judged
    )
    first = _mean([float(r["correct_first"]) for r in judged])
    final = _mean([float(r["correct_final"]) for r in judged])
    scored = [
        (first_score, float(r["score"]))
        for r in rows
        if (first_score := _first_score(r)) is not None and r.get("score") is not None
    ]
    usage = {
        key: sum(int((r.get("usage") or {}).get(key, 0)) for r in rows)
        for key in ("input_tokens", "output_tokens", "total_tokens")
    }
    reasons = Counter(str(r.get("stop_reason")) for r in rows)
    return {
        "items": len(rows),
        "judged": len(judged),
        "accuracy_first": first,
        "accuracy_final": final,
        "accuracy_change": None if first is None or final is None else round(final - first, 4),
        "transitions": {name: transitions.get(name, 0) for name in TRANSITIONS},
        "accuracy_by_iteration": _curve([r.get("correct_at") or [] for r in judged]),
        "mean_score_first": _mean([first for first, _ in scored]),
        "mean_score_final": _mean([final for _, final in scored]),
        "mean_score_by_iteration": _curve([r.get("score_at") or [] for r in rows]),
        "mean_iterations": _mean([float(r.get("iterations") or 0) for r in rows]),
        "stop_reasons": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        "usage": usage,
    }


def _first_score(record: dict[str, Any]) -> float | None:
    series = record.get("score_at") or [None]
    value = series[0]
    return None if value is None else float(value)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as a few lines of text for a terminal."""
    lines = [f"items: {summary['items']}  (judged by a verifier: {summary['judged']})"]
    if summary["judged"]:
        change = 100 * (summary["accuracy_change"] or 0.0)
        lines.append(
            f"accuracy: first draft {_percent(summary['accuracy_first'])} -> final "
            f"{_percent(summary['accuracy_final'])} ({change:+.1f} points)"
        )
        lines.append(
            "transitions: " + ", ".join(f"{k} {v}" for k, v in summary["transitions"].items())
        )
        curve = summary["accuracy_by_iteration"]
        lines.append(
            "accuracy after k refine steps: "
            + "  ".join(f"{k}: {_percent(v)}" for k, v in enumerate(curve))
        )
    if summary["mean_score_first"] is not None:
        lines.append(
            f"mean score: first draft {summary['mean_score_first']:.3f} -> final "
            f"{summary['mean_score_final']:.3f}"
        )
    if summary["mean_iterations"] is not None:
        lines.append(f"mean refine steps: {summary['mean_iterations']:.2f}")
    # A stop reason is any text a person or a Studio edit set: shown, never acted on.
    reasons = ", ".join(f"{terminal_safe(k)} {v}" for k, v in summary["stop_reasons"].items())
    lines.append(f"stop reasons: {reasons or '-'}")
    usage = summary["usage"]
    lines.append(
        f"tokens: {usage['total_tokens']:,} (input {usage['input_tokens']:,}, "
        f"output {usage['output_tokens']:,})"
    )
    skipped = summary.get("input_problems") or []
    if skipped:
        shown = ", ".join(str(line) for line in skipped[:_SKIPPED_SHOWN])
        more = f" and {len(skipped) - _SKIPPED_SHOWN} more" if len(skipped) > _SKIPPED_SHOWN else ""
        lines.append(f"skipped input lines: {shown}{more} (the warnings above say why)")
    return "\n".join(lines)


_SKIPPED_SHOWN = 10
