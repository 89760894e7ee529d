"""Summary math: accuracy before/after, transitions, gains per iteration, and progress."""

from __future__ import annotations

import io
import random
from typing import Any

from self_refine.batch.metrics import Summary, format_summary, summarize
from self_refine.cli.progress import Progress


def _record(
    item: str,
    correct_at: list[bool | None],
    *,
    reason: str = "critic_done",
    scores: list[float | None] | None = None,
    tokens: int = 10,
) -> dict[str, Any]:
    scores = scores or [None] * len(correct_at)
    return {
        "id": item,
        "iterations": len(correct_at) - 1,
        "stop_reason": reason,
        "score": scores[-1],
        "correct_first": correct_at[0],
        "correct_final": correct_at[-1],
        "correct_at": correct_at,
        "score_at": scores,
        "usage": {"input_tokens": tokens - 2, "output_tokens": 2, "total_tokens": tokens},
    }


RECORDS = [
    _record("a", [True], reason="verified", scores=[1.0]),
    _record("b", [False, True], scores=[0.2, 0.9]),
    _record(
        "c", [False, False, False, False], reason="max_iterations", scores=[0.1, 0.2, 0.2, 0.3]
    ),
    _record("d", [True, False], scores=[0.3, 0.8]),
    _record("e", [False, False, True], scores=[0.2, 0.4, 0.9]),
    _record("f", [None, None], scores=[0.5, 0.6]),
]


def test_summary_counts_accuracy_transitions_and_the_per_step_curve() -> None:
    summary = summarize(RECORDS)
    assert summary["items"] == 6
    assert summary["judged"] == 5  # f has no verdict
    assert summary["accuracy_first"] == 0.4
    assert summary["accuracy_final"] == 0.6
    assert summary["accuracy_change"] == 0.2
    assert summary["transitions"] == {
        "incorrect->correct": 2,
        "incorrect->incorrect": 1,
        "correct->correct": 1,
        "correct->incorrect": 1,
    }
    # after k steps: a run that stopped earlier keeps its final answer
    assert summary["accuracy_by_iteration"] == [0.4, 0.4, 0.6, 0.6]
    assert summary["mean_score_by_iteration"] == [0.3833, 0.65, 0.7333, 0.75]
    assert summary["mean_score_first"] == 0.3833 and summary["mean_score_final"] == 0.75
    assert summary["mean_iterations"] == round(8 / 6, 4)
    assert summary["stop_reasons"] == {"critic_done": 4, "max_iterations": 1, "verified": 1}
    assert summary["usage"] == {"input_tokens": 48, "output_tokens": 12, "total_tokens": 60}


def test_summary_does_not_depend_on_record_order() -> None:
    shuffled = list(RECORDS)
    random.Random(7).shuffle(shuffled)
    assert summarize(shuffled) == summarize(RECORDS)


def test_summary_without_verdicts_reports_no_accuracy() -> None:
    summary = summarize([_record("f", [None, None], scores=[0.5, 0.6])])
    assert summary["judged"] == 0
    assert summary["accuracy_first"] is None and summary["accuracy_change"] is None
    assert summary["accuracy_by_iteration"] == []
    text = format_summary(summary)
    assert "accuracy" not in text
    assert "mean score: first draft 0.500 -> final 0.600" in text


def test_formatted_summary_shows_the_numbers() -> None:
    text = format_summary(summarize(RECORDS))
    assert "accuracy: first draft 40.0% -> final 60.0% (+20.0 points)" in text
    assert "incorrect->correct 2" in text and "correct->incorrect 1" in text
    assert "0: 40.0%  1: 40.0%  2: 60.0%  3: 60.0%" in text
    assert "stop reasons: critic_done 4, max_iterations 1, verified 1" in text
    assert "tokens: 60 (input 48, output 12)" in text


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_prints_plain_lines_off_a_terminal() -> None:
    out, clock = io.StringIO(), _Clock()
    progress = Progress(4, out, done_before=[RECORDS[0]], tty=False, interval=10, clock=clock)
    clock.now = 2.0
    progress.add(RECORDS[1])  # first report at once
    clock.now = 5.0
    progress.add(RECORDS[3])  # within the interval: quiet
    progress.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("progress: 2/4 items (50%), 0.50 items/s, ETA 0:04")
    assert "accuracy 50.0% -> 100.0%" in lines[0]
    assert lines[-1].startswith("progress: 3/4 items (75%), 0.40 items/s")
    assert "accuracy 66.7% -> 66.7%" in lines[-1]
    assert len(lines) == 2


def test_progress_redraws_a_bar_on_a_terminal() -> None:
    out, clock = io.StringIO(), _Clock()
    progress = Progress(2, out, tty=True, clock=clock)
    clock.now = 1.0
    progress.add(RECORDS[1])
    progress.note("item x failed: boom")
    clock.now = 2.0
    progress.add(RECORDS[2])
    progress.close()
    text = out.getvalue()
    assert text.startswith("\r[############............] 1/2 items (50%)")
    assert "\r\x1b[Kself-refine: item x failed: boom\n" in text
    assert "[########################] 2/2 items (100%)" in text and "took 0:02" in text
    assert text.endswith("\n")


def test_a_summary_built_one_record_at_a_time_equals_the_summary_of_the_list() -> None:
    summary = Summary()
    for record in RECORDS[:2]:
        summary.add(record)
    assert summary.result() == summarize(RECORDS[:2])
    for record in RECORDS[2:]:
        summary.add(record)
    assert summary.result() == summarize(RECORDS)


def _drafts(step: int, parents: list[int | None], first: int) -> dict[str, Any]:
    """A step of a run that samples or searches: its kept draft and the others, numbered."""
    drafts = [
        {"index": i, "node": first + i, "parent": p, "draft": "x", "critique": {}}
        for i, p in enumerate(parents)
    ]
    kept, *others = drafts
    return {**kept, "iteration": step, "candidate": 0, "usage": {}, "candidates": others}


def test_runs_that_sample_or_search_count_steps_and_drafts_by_kind_not_refine_steps() -> None:
    search = _record("s", [False, False, True], reason="verified")
    search["attempts"] = [
        _drafts(0, [None, None], 0),
        _drafts(1, [0, None], 2),
        _drafts(2, [2, 1], 4),
    ]
    sample = _record("p", [False, False], reason="max_iterations")
    sample["attempts"] = [_drafts(0, [None, None], 0), _drafts(1, [None, None], 2)]
    summary = summarize([search, sample])
    assert summary["mean_iterations"] is None
    assert summary["mean_steps"] == 2.5
    assert summary["mean_drafts"] == {"fresh": 3.5, "refined": 1.5}
    text = format_summary(summary)
    assert "mean steps: 2.50 (per item: 3.50 fresh drafts, 1.50 refinements)" in text
    assert "accuracy after step k: 0: 0.0%  1: 0.0%  2: 50.0%" in text
    assert "refine step" not in text
    # With runs that refine in the same summary, each kind is counted over its own items.
    both = format_summary(summarize([search, sample, RECORDS[1]]))
    assert "mean refine steps: 1.00 (items that refine)" in both
    assert "mean steps: 2.50 (per item: 3.50 fresh drafts, 1.50 refinements; items that" in both
    assert summarize(RECORDS)["mean_steps"] is None
