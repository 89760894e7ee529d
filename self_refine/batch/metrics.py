"""The numbers of a batch: accuracy before and after, transitions, gains per iteration.

Everything is computed from result records (the lines of a batch output), in
an order-independent way, so a resumed run and an uninterrupted one agree.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from self_refine.redact import terminal_safe
from self_refine.tree import is_tree, replies_by_kind

__all__ = [
    "TRANSITIONS",
    "Summary",
    "curve_label",
    "format_summary",
    "only_steps",
    "steps_lines",
    "summarize",
]

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


class _Curve:
    """Mean value after k = 0, 1, ... refine steps, over runs with a value at every step.

    Kept as the values themselves (a few floats per run), so that the means are
    exact sums whatever order the runs come in; a run that stopped earlier keeps
    its last value for the later steps.
    """

    def __init__(self) -> None:
        self.at: list[array[float]] = []  # at[k]: the values at step k of runs that reached it
        self.tails: dict[int, array[float]] = {}  # by length: the last values of those runs

    def add(self, series: Sequence[Any]) -> None:
        if not series or any(v is None for v in series):
            return
        values = [float(v) for v in series]
        for k, value in enumerate(values):
            if k == len(self.at):
                self.at.append(array("d"))
            self.at[k].append(value)
        self.tails.setdefault(len(values), array("d")).append(values[-1])

    def means(self) -> list[float]:
        runs = len(self.at[0]) if self.at else 0
        means = []
        for k, reached in enumerate(self.at):
            stopped = [v for length, last in self.tails.items() if length <= k for v in last]
            means.append(round(math.fsum([*reached, *stopped]) / runs, 4))
        return means


class Summary:
    """The summary of result records, built one record at a time (memory: a few numbers each).

    `summarize` is this over a list; a batch adds each record as it is read or
    written, so the records themselves need not stay in memory.
    """

    def __init__(self) -> None:
        self.items = self.judged = self.first_right = self.final_right = 0
        self.transitions: Counter[str] = Counter()
        self.accuracy = _Curve()
        self.scores = _Curve()
        self.first_scores: array[float] = array("d")
        self.final_scores: array[float] = array("d")
        self.iterations = self.refine_runs = 0
        # Runs that sample or search: their steps, and their replies of each kind.
        self.tree_runs = self.steps = self.fresh = self.refined = 0
        self.reasons: Counter[str] = Counter()
        self.usage = dict.fromkeys(("input_tokens", "output_tokens", "total_tokens"), 0)

    def add(self, record: dict[str, Any]) -> None:
        """Count one result record."""
        self.items += 1
        first, final = record.get("correct_first"), record.get("correct_final")
        if first is not None and final is not None:
            self.judged += 1
            self.first_right += bool(first)
            self.final_right += bool(final)
            self.transitions[f"{_label(first)}->{_label(final)}"] += 1
            self.accuracy.add(record.get("correct_at") or [])
        first_score = _first_score(record)
        if first_score is not None and record.get("score") is not None:
            self.first_scores.append(first_score)
            self.final_scores.append(float(record["score"]))
        self.scores.add(record.get("score_at") or [])
        attempts = record.get("attempts") or []
        if is_tree(attempts):
            self.tree_runs += 1
            self.steps += len(attempts)
            fresh, refined = replies_by_kind(attempts)
            self.fresh += fresh
            self.refined += refined
        else:
            self.refine_runs += 1
            self.iterations += int(record.get("iterations") or 0)
        self.reasons[str(record.get("stop_reason"))] += 1
        usage = record.get("usage") or {}
        for key in self.usage:
            self.usage[key] += int(usage.get(key, 0))

    def result(self) -> dict[str, Any]:
        """The summary of the records added so far."""
        first = self._share(self.first_right)
        final = self._share(self.final_right)
        return {
            "items": self.items,
            "judged": self.judged,
            "accuracy_first": first,
            "accuracy_final": final,
            "accuracy_change": None if first is None or final is None else round(final - first, 4),
            "transitions": {name: self.transitions.get(name, 0) for name in TRANSITIONS},
            "accuracy_by_iteration": self.accuracy.means(),
            "mean_score_first": _mean(self.first_scores),
            "mean_score_final": _mean(self.final_scores),
            "mean_score_by_iteration": self.scores.means(),
            "mean_iterations": _per(self.iterations, self.refine_runs),
            "mean_steps": _per(self.steps, self.tree_runs),
            "mean_drafts": (
                {
                    "fresh": _per(self.fresh, self.tree_runs),
                    "refined": _per(self.refined, self.tree_runs),
                }
                if self.tree_runs
                else None
            ),
            "stop_reasons": dict(sorted(self.reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
            "usage": dict(self.usage),
        }

    def _share(self, right: int) -> float | None:
        return round(right / self.judged, 4) if self.judged else None


def _per(total: int, runs: int) -> float | None:
    return round(total / runs, 4) if runs else None


def summarize(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Summarize result records.

    Accuracy and transitions count the items judged at both ends
    (`correct_first` and `correct_final` not None); `accuracy_by_iteration[k]`
    is the accuracy had every run stopped after at most k refine steps (in runs that
    sample or search, after step k). `mean_iterations` counts the refine steps of the
    runs that refine; `mean_steps` and `mean_drafts` (fresh and refined replies per run)
    the steps of those that sample or search (None when there are none).
    """
    summary = Summary()
    for record in records:
        summary.add(record)
    return summary.result()


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
            f"{curve_label('accuracy', summary)}: "
            + "  ".join(f"{k}: {_percent(v)}" for k, v in enumerate(curve))
        )
    if summary["mean_score_first"] is not None:
        lines.append(
            f"mean score: first draft {summary['mean_score_first']:.3f} -> final "
            f"{summary['mean_score_final']:.3f}"
        )
    lines.extend(steps_lines(summary))
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


def only_steps(summary: dict[str, Any]) -> bool:
    """Whether every run of a summary sampled or searched (none refined step by step)."""
    return summary.get("mean_iterations") is None and summary.get("mean_steps") is not None


def curve_label(measure: str, summary: dict[str, Any]) -> str:
    """What a per-step curve plots: "accuracy after k refine steps", or "accuracy after
    step k" when every run sampled or searched (each of its steps is a step of drafts),
    or both when the summary holds runs of both kinds."""
    if only_steps(summary):
        return f"{measure} after step k"
    if summary.get("mean_steps") is not None:
        return f"{measure} after k refine steps (after step k, items that sample or search)"
    return f"{measure} after k refine steps"


def steps_lines(summary: dict[str, Any]) -> list[str]:
    """The mean steps of the runs, by kind: "mean refine steps: 2.33" for runs that refine,
    "mean steps: 4.00 (per item: 13.00 fresh drafts, 3.00 refinements)" for those that
    sample or search; both, each with its count of items, when a summary holds both."""
    refine, steps = summary.get("mean_iterations"), summary.get("mean_steps")
    both = refine is not None and steps is not None
    lines = []
    if refine is not None:
        lines.append(f"mean refine steps: {refine:.2f}" + (" (items that refine)" if both else ""))
    if steps is not None:
        drafts = summary.get("mean_drafts") or {}
        lines.append(
            f"mean steps: {steps:.2f} (per item: {drafts.get('fresh', 0):.2f} fresh drafts, "
            f"{drafts.get('refined', 0):.2f} refinements"
            + ("; items that sample or search)" if both else ")")
        )
    return lines
