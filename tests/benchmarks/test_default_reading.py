"""The default strategy's reading off a budget run's records (`default_reading.py`)."""

from __future__ import annotations

import pytest

from benchmarks.quality.default_reading import markdown, readings


def _run(strategy: str, item: str, verifier: str | None, right: list[bool]) -> dict:
    return {
        "set": "humaneval",
        "strategy": strategy,
        "id": item,
        "run_checks": {"verifier": verifier, "reference": {}},
        "budgets": [
            {"multiple": m, "correct": r, "output_tokens": 10 * m}
            for m, r in zip([1, 2], right, strict=True)
        ],
    }


def _records() -> list[dict]:
    first = [
        {"set": "humaneval", "strategy": "first", "id": i, "correct_first": False}
        for i in ("a", "b", "c")
    ]
    return [
        *first,
        # a and b show examples: the default samples; c has the critic alone: it refines.
        _run("sample", "a", "python_tests", [False, True]),
        _run("sample", "b", "python_tests", [False, False]),
        _run("sample", "c", None, [False, False]),
        _run("refine", "a", "python_tests", [False, False]),
        _run("refine", "b", "python_tests", [True, True]),
        _run("refine", "c", None, [False, True]),
    ]


def test_each_item_takes_the_strategy_its_checks_call_for() -> None:
    read = readings(_records(), "humaneval")
    assert read["rows"] == {"verifier": 2, "critic": 1}
    at_2x = read["budgets"][1]
    # a: sample's verdict (right); b: sample's (wrong, though refine was right); c: refine's.
    assert at_2x["default"] == [True, False, True]
    assert at_2x["sample"] == [True, False, False]
    page = markdown(read)
    assert "| 2x | 2/3 | 1/3 | 1 / 0, p = 1.000 |" in page
    assert "the default points above sample, not significant" in page


def test_a_run_stopped_before_the_strategy_the_default_needs_is_refused() -> None:
    records = [r for r in _records() if r["strategy"] != "refine"]
    with pytest.raises(SystemExit, match="no refine run of humaneval"):
        readings(records, "humaneval")
