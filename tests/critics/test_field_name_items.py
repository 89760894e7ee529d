"""A critique's feedback items that are only a field name of its schema are no feedback."""

from __future__ import annotations

import json
import re

import pytest

from self_refine import refine
from self_refine.critics.parse import read_critique
from tests.fakes import FakeChatModel, critique

KITE = "Use the word kite."


@pytest.mark.parametrize(
    "names",
    [
        ["score", "done"],
        ["Score:", " DONE. "],
        ["feedback"],
        ['"Feedback"', "score -"],
    ],
)
def test_field_names_in_a_json_feedback_list_are_dropped(names: list[str]) -> None:
    text = json.dumps({"feedback": [KITE, *names], "score": 0.4, "done": False})
    read, problems = read_critique(text)
    assert read.feedback == [KITE]
    assert read.score == pytest.approx(0.4) and read.done is False
    assert any("field names" in problem for problem in problems)


def test_field_names_as_bullets_of_a_plain_critique_are_dropped() -> None:
    read, problems = read_critique(f"- {KITE}\n- score\n- Done\n- feedback:")
    assert read.feedback == [KITE]
    assert any("field names" in problem for problem in problems)


def test_a_feedback_item_that_uses_the_word_is_kept() -> None:
    items = [KITE, "Raise the score of the sentence by naming the kite.", "Say when it is done."]
    text = json.dumps({"feedback": items, "score": 0.4, "done": False})
    read, problems = read_critique(text)
    assert read.feedback == items
    assert not any("field names" in problem for problem in problems)


@pytest.mark.parametrize(
    ("item", "dropped"),
    [
        ("f.e.e.d.b.a.c.k", True),
        ("-- F_E_E_D_B_A_C_K --", True),
        ("*** " + "." * 300 + " done " + "!" * 300, True),
        ("feedbacks", False),
        ("f.e.e.d.b.a.c.k.s", False),
        ("score " + "." * 300 + " 1", False),
    ],
)
def test_a_field_name_among_any_punctuation_is_dropped_and_one_letter_more_is_kept(
    item: str, dropped: bool
) -> None:
    text = json.dumps({"feedback": [KITE, item], "score": 0.4, "done": False})
    read, problems = read_critique(text)
    assert read.feedback == ([KITE] if dropped else [KITE, item])
    assert any("field names" in problem for problem in problems) is dropped


def _bare_lines(prompt: str) -> set[str]:
    return {re.sub(r"[\W_]+", "", line).lower() for line in prompt.splitlines()}


@pytest.mark.parametrize("structured", ["json", "unsupported"])
def test_field_names_never_reach_the_refine_request(structured: str) -> None:
    model = FakeChatModel(
        script={
            "generator": ["A bird flew."],
            "critic": [critique([KITE, "score", "done"], score=0.4), critique(score=1, done=True)],
            "refiner": ["A kite flew."],
        },
        structured=structured,  # type: ignore[arg-type]
    )
    result = refine("Write a sentence about a kite.", model=model, critics=["llm"])
    first = result["attempts"][0]
    assert first["critique"]["feedback"] == [KITE]
    assert any("field names" in problem for problem in first["problems"])
    prompt = model.requests_for("refiner")[0].prompt
    assert KITE in prompt
    assert not {"score", "done"} & _bare_lines(prompt)
