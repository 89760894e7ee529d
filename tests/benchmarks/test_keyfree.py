"""The key-free arithmetic settings: the vote is the library's critic-free run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.quality import keyfree
from self_refine import refine
from tests.fakes import FakeChatModel

TASK = "Pens cost 7 dollars each. Hugo buys 5 pens and pays with 100 dollars. What change?"


def test_the_vote_setting_samples_four_drafts_and_asks_no_critic() -> None:
    answers = iter(["70", "65", "65", "60"])

    def draft(messages: Any) -> str:
        return f"Five pens cost 35 dollars. The answer is {next(answers)}."

    model = FakeChatModel(script={"generator": [draft]})
    result = refine(TASK, model=model, **keyfree._RUNS["vote"])
    assert [sent.role for sent in model.requests] == ["generator"] * 4
    assert result["answer"].endswith("The answer is 65.")
    assert {a["critique"]["source"] for a in result["attempts"]} == {"none"}


def test_an_answer_is_graded_with_the_items_key_which_the_run_never_holds() -> None:
    from benchmarks.quality.sets import make_set

    item = make_set("arithmetic", 1, seed=2026)[0]
    key = item["grade"]["answer"]
    assert item["reference"] == {}  # the run has no key: grading reads `grade`
    assert keyfree._right(item, f"Two steps: 3 + 4 = 7. The answer is {key}.")
    assert not keyfree._right(item, f"Two steps: 3 + 4 = 7. The answer is {int(key) + 1}.")
    program = f"```python\nprint({key})\n```\nThe answer is {int(key) + 1}."
    assert not keyfree._right(item, program)  # the prose answers, not the program


def test_the_script_refuses_reported_items() -> None:

    assert {item["split"] for item in keyfree._items("0-29")} == {"tune"}
    with pytest.raises(SystemExit, match="arithmetic-030"):
        keyfree._items("25-34")


def test_the_summary_grades_every_answer_again_with_the_items_grade(
    tmp_path: Any, capsys: Any
) -> None:
    item = keyfree._items("0-0")[0]
    key = item["grade"]["answer"]
    out = tmp_path / "runs.jsonl"
    said = {"tokens": 100, "drafts": 1, "stop_reason": None, "seconds": 1.0, "id": item["id"]}
    rows = [
        {**said, "setting": "first", "answer": f"The answer is {key}.", "right": False},
        {**said, "setting": "vote", "answer": f"The answer is {int(key) + 1}.", "right": True},
    ]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    keyfree._summary(out, ["vote"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split()[:3] == ["first", "1/1", "100%"]
    assert lines[3].split()[:3] == ["vote", "0/1", "0%"]
    rows[0]["task"] = "What is 2 + 2?"  # a run of a task the set no longer holds
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(SystemExit, match="another task"):
        keyfree._summary(out, ["vote"])
