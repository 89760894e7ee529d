"""The constrained runs graded by hand: each reading takes its answer's hand verdict and
today's grader's, a reading with no answer is wrong, the page pairs each strategy with
the first draft and sample, and a verdicts file that leaves an answer unjudged stops the
page with the keys to judge."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from benchmarks.quality import byhand
from benchmarks.quality.audit import audit_key, population

WORDS = ["guitar", "helmet", "pillow", "bridge"]
TASK = "Write one or two natural sentences that use all of these words: " + ", ".join(WORDS) + "."
NONSENSE = "The guitar wears a helmet and the bridge sleeps on the pillow."
RIGHT = "A guitar and a helmet rest on the pillow by the bridge."


def _records(item_id: str, first: str, sample: list[str | None]) -> list[dict[str, object]]:
    return [
        {"set": "constrained", "strategy": "first", "id": item_id, "task": TASK, "answer": first},
        {
            "set": "constrained",
            "strategy": "sample",
            "id": item_id,
            "task": TASK,
            "grade": {"concepts": WORDS},
            "budgets": [
                {"multiple": 2**i, "answer": answer, "correct": True}
                for i, answer in enumerate(sample)
            ],
        },
    ]


def test_each_reading_takes_the_hand_verdict_of_its_answer() -> None:
    # two reported items; the grader passes both answers, the reader only one
    records = _records("constrained-082", NONSENSE, [None, NONSENSE, RIGHT]) + _records(
        "constrained-083", RIGHT, [RIGHT, RIGHT, RIGHT]
    )
    hand = {
        audit_key("constrained-082", NONSENSE): False,
        audit_key("constrained-082", RIGHT): True,
        audit_key("constrained-083", RIGHT): True,
    }
    grader = dict.fromkeys(hand, True)

    found = byhand.by_hand(records, hand, grader)

    assert found["first"] == {
        "hand": {"constrained-082": False, "constrained-083": True},
        "grader": {"constrained-082": True, "constrained-083": True},
    }
    sample = found["strategies"]["sample"]
    assert sample[1]["hand"] == {"constrained-082": False, "constrained-083": True}
    assert sample[1]["grader"]["constrained-082"] is False  # no answer: wrong both ways
    assert sample[4]["hand"] == {"constrained-082": True, "constrained-083": True}
    lines = byhand.page("run", found)
    assert "First draft: by hand 50% (1/2), by today's grader 100% (2/2)." in lines
    assert "| sample | 4x | 100% (2/2) | 100% (2/2) | 1/0, p = 1.000 | - |" in lines


def test_an_answer_without_a_hand_verdict_is_not_counted_wrong_silently() -> None:
    records = _records("constrained-082", NONSENSE, [RIGHT])
    hand = {audit_key("constrained-082", NONSENSE): False}

    with pytest.raises(KeyError):
        byhand.by_hand(
            records, hand, dict.fromkeys(hand, True) | {audit_key("constrained-082", RIGHT): True}
        )


def test_two_readers_agreement_lists_each_answer_they_judge_differently() -> None:
    mine = {"constrained-082:a": True, "constrained-083:b": False, "constrained-084:c": False}
    other = {"constrained-082:a": True, "constrained-083:b": True, "constrained-085:d": True}

    lines = byhand.agreement(mine, other, {"constrained-083:b": "The text."})

    assert lines[0] == "2 answers judged by both; agree on 1."
    assert "| this page's reader: wrong | 1 | 0 |" in lines
    assert any(
        line.startswith(
            "- constrained-083: 'The text.': this page's reader wrong, the other reader right"
        )
        for line in lines
    )


def test_the_page_stops_on_a_verdicts_file_that_leaves_answers_unjudged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "budget-local-x.records.jsonl"
    records = _records("constrained-082", NONSENSE, [RIGHT]) + _records(
        "constrained-083", RIGHT, [RIGHT]
    )
    run.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    monkeypatch.setattr(byhand, "reported_runs", lambda: [run])
    answers, _ = population([run])
    judged = {a.key: {"verdict": "right", "note": "", "answer": a.answer} for a in answers}
    verdicts = tmp_path / "verdicts.json"
    missing = audit_key("constrained-083", RIGHT)
    verdicts.write_text(json.dumps({"verdicts": {k: v for k, v in judged.items() if k != missing}}))
    monkeypatch.setattr(sys, "argv", ["byhand", "--verdicts", str(verdicts)])

    with pytest.raises(
        SystemExit, match=f"judges 2 of the 3 answers; judge these first: {missing}"
    ):
        byhand.main()

    verdicts.write_text(json.dumps({"verdicts": judged}))
    byhand.main()
    out = capsys.readouterr().out
    assert "3 distinct answers from 4 readings" in out
    assert "First draft: by hand 100% (2/2)" in out
