"""The hand audit's draw: each distinct answer of the reported items once, graded as the
regrade grades it, drawn the same way for the same seed, and the page counts the
auditor against the grader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.quality.audit import audit_key, blind_todo, draw, excluding, page, population

WORDS = ["guitar", "helmet", "pillow", "bridge"]
TASK = "Write one or two natural sentences that use all of these words: " + ", ".join(WORDS) + "."
GAMED = "Guitar helmet on pillow next to bridge."
RIGHT = "A guitar and a helmet rest on the pillow by the bridge."


def _run(path: Path, item_id: str) -> Path:
    records = [
        {
            "set": "constrained",
            "strategy": "first",
            "id": item_id,
            "task": TASK,
            "answer": GAMED,
            "correct_first": True,
        },
        {
            "set": "constrained",
            "strategy": "sample",
            "id": item_id,
            "task": TASK,
            "grade": {"concepts": WORDS},
            "budgets": [
                {"multiple": 1, "answer": None, "correct": False},
                {"multiple": 2, "answer": GAMED, "correct": True},
                {"multiple": 4, "answer": RIGHT, "correct": True},
            ],
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def test_each_answer_of_a_reported_item_counts_once_graded_as_today(tmp_path: Path) -> None:
    reported = _run(tmp_path / "reported.records.jsonl", "constrained-082")
    tuning = _run(tmp_path / "tuning.records.jsonl", "constrained-002")

    answers, readings = population([reported, tuning])

    assert readings == 3  # the reading with no answer is left out; tuning items are not drawn
    assert [(a.answer, a.right) for a in answers] == [(RIGHT, True), (GAMED, False)]
    assert answers[1].why == ("no verb",)
    assert answers[1].where == ("reported first", "reported sample 2x")


def test_the_same_seed_draws_the_same_answers_and_the_page_counts_disagreements(
    tmp_path: Path,
) -> None:
    answers, readings = population([_run(tmp_path / "r.records.jsonl", "constrained-082")])
    drawn = draw(answers, 5, seed=2026)
    assert drawn == draw(answers, 5, seed=2026) and len(drawn) == 2
    verdicts = {audit_key(a.id, a.answer): {"verdict": "wrong", "note": "a note"} for a in drawn}

    shown = "\n".join(page(drawn, verdicts, total=len(answers), readings=readings, how="here"))

    assert "**Agreement 1 of 2; disagreements 1** (1 passed that the auditor fails" in shown
    assert f"{RIGHT!r}: grader right, auditor wrong: a note" in shown


def test_a_second_audit_draws_only_what_the_first_did_not_judge_and_lists_it_blind(
    tmp_path: Path,
) -> None:
    answers, _ = population([_run(tmp_path / "r.records.jsonl", "constrained-082")])
    first = {audit_key("constrained-082", GAMED): {"verdict": "wrong", "note": ""}}

    drawn = draw(excluding(answers, first), 100, seed=2027)
    todo = blind_todo(drawn, {})

    assert [a.answer for a in drawn] == [RIGHT]  # all that is left, fewer than asked
    assert list(todo.values()) == [
        {
            "id": "constrained-082",
            "concepts": WORDS,
            "task": TASK,
            "answer": RIGHT,
            "verdict": "",
            "note": "",
        }
    ]  # no grader's verdict for the auditor to see
    assert blind_todo(drawn, {audit_key("constrained-082", RIGHT): {"verdict": "right"}}) == {}


def test_excluding_an_audit_of_other_runs_is_refused(tmp_path: Path) -> None:
    answers, _ = population([_run(tmp_path / "r.records.jsonl", "constrained-082")])
    elsewhere = {audit_key("constrained-050", RIGHT): {"verdict": "right"}}

    with pytest.raises(SystemExit, match="answers the population lacks"):
        excluding(answers, elsewhere)
