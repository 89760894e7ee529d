"""The critique: structured output first, plain text when that fails; never a lost run."""

from __future__ import annotations

from typing import Any

import pytest

from self_refine import Critique, refine
from self_refine.critics import parse_critique_text
from self_refine.critics.parse import CUT_JSON, read_critique, salvage_cut_json
from tests.fakes import FakeChatModel, critique

PROSE = """The draft has two problems:

- It never mentions the park.
* The last sentence has no verb.
1. Drop the word "very".

Score: 7/10
"""


def model_with_critic(*replies: object, structured: str = "json") -> FakeChatModel:
    return FakeChatModel(
        script={
            "generator": ["draft 0"],
            "critic": list(replies),
            "refiner": ["draft 1", "draft 2", "draft 3"],
        },
        structured=structured,  # type: ignore[arg-type]
    )


def test_critic_requests_use_structured_output_when_the_model_supports_it() -> None:
    model = model_with_critic(critique(["Add detail."], score=0.4), critique(score=1, done=True))
    result = refine("t", model=model)
    critic_requests = model.requests_for("critic")
    assert [s.structured for s in critic_requests] == [True, True]
    assert result["attempts"][0]["critique"]["feedback"] == ["Add detail."]


def test_model_without_structured_output_gets_plain_text_critiques() -> None:
    model = model_with_critic(
        critique(["Add detail."], score=0.4), critique(score=1, done=True), structured="unsupported"
    )
    result = refine("t", model=model)
    assert [s.structured for s in model.requests_for("critic")] == [False, False]
    assert result["stop_reason"] == "critic_done"
    assert result["attempts"][0]["critique"] == {
        "feedback": ["Add detail."],
        "score": 0.4,
        "done": False,
        "source": "llm",
        "verified": None,
    }


def test_malformed_json_is_asked_again_in_plain_text() -> None:
    model = model_with_critic(
        '{"feedback": ["unterminated',
        critique(["Name the dog."], score=0.5),
        critique(score=1.0, done=True),
    )
    result = refine("t", model=model)
    critic_requests = model.requests_for("critic")
    assert [s.structured for s in critic_requests][:2] == [True, False]
    assert result["attempts"][0]["critique"]["feedback"] == ["Name the dog."]
    assert result["stop_reason"] == "critic_done"


def test_malformed_json_twice_still_does_not_end_the_run() -> None:
    model = model_with_critic('{"feedback": [', '{"score": ')
    result = refine("t", model=model, max_iterations=2)
    assert result["stop_reason"] == "max_iterations"
    assert result["iterations"] == 2
    assert result["answer"] == "draft 2"


def test_incomplete_json_keeps_what_it_has() -> None:
    model = model_with_critic('{"feedback": ["Add an example."]}', critique(score=1, done=True))
    result = refine("t", model=model)
    first = result["attempts"][0]["critique"]
    assert first["feedback"] == ["Add an example."]
    assert first["score"] is None and first["done"] is False
    assert len(model.requests_for("critic")) == 2, "no second ask for a readable reply"


def test_prose_with_bullets_and_a_score_out_of_ten() -> None:
    model = model_with_critic(PROSE, critique(score=1, done=True), structured="unsupported")
    result = refine("t", model=model)
    first = result["attempts"][0]["critique"]
    assert first["feedback"] == [
        "It never mentions the park.",
        "The last sentence has no verb.",
        'Drop the word "very".',
    ]
    assert first["score"] == pytest.approx(0.7)
    assert first["done"] is False
    refine_prompt = model.requests_for("refiner")[0].prompt
    assert "- It never mentions the park." in refine_prompt


def test_a_failing_structured_call_falls_back_to_plain_text() -> None:
    model = model_with_critic(
        ValueError("could not parse tool call"),
        critique(["Be brief."], score=0.3),
        critique(score=1, done=True),
    )
    result = refine("t", model=model)
    assert result["attempts"][0]["critique"]["feedback"] == ["Be brief."]
    assert [s.structured for s in model.requests_for("critic")] == [True, False, True]


@pytest.mark.parametrize(
    ("text", "feedback", "score", "done"),
    [
        ('{"feedback": ["a", "b"], "score": 0.25, "done": false}', ["a", "b"], 0.25, False),
        ('```json\n{"feedback": [], "score": 1, "done": true}\n```', [], 1.0, True),
        ('Here you go: {"feedback": "one item", "score": 8}', ["one item"], 0.8, False),
        ('{"feedback": ["x"], "done": "yes"}', ["x"], None, True),
        ("- fix the title\n- add a date\nscore: 0.6", ["fix the title", "add a date"], 0.6, False),
        ("Score: 85/100. No changes needed.", [], 0.85, True),
        ("Looks fine but a bit long.", ["Looks fine but a bit long."], None, False),
    ],
)
def test_parse_critique_text(
    text: str, feedback: list[str], score: float | None, done: bool
) -> None:
    parsed = parse_critique_text(text, source="llm")
    assert parsed.feedback == feedback
    assert parsed.score == (pytest.approx(score) if score is not None else None)
    assert parsed.done is done


def test_critique_scores_are_clamped_and_rescaled() -> None:
    assert Critique(score=7).score == pytest.approx(0.7)
    assert Critique(score=85).score == pytest.approx(0.85)
    assert Critique(score=-1).score == 0.0
    assert Critique(score=float("nan")).score is None
    assert Critique(score=True).score is None
    one: Any = "one"
    assert Critique(feedback=one).feedback == ["one"]
    assert Critique(feedback=["a", " ", ""]).feedback == ["a"]


def test_a_bare_structured_reply_is_read_as_the_chains_parsers_would() -> None:
    from langchain_core.messages import AIMessage

    from self_refine.critics.llm import _as_structured

    fenced = AIMessage('```json\n{"feedback": ["Add a verb."], "score": 0.4, "done": false}\n```')
    read = _as_structured(fenced)
    assert read["raw"] is fenced and read["parsing_error"] is None
    assert read["parsed"].feedback == ["Add a verb."] and read["parsed"].score == 0.4
    broken = _as_structured(AIMessage('{"feedback": ["Add a ver'))
    assert broken["parsed"] is None and broken["parsing_error"] is not None
    whole = {"raw": fenced, "parsed": None, "parsing_error": None}
    assert _as_structured(whole) is whole


REPEATING = (
    '{"feedback": ["Use the word \\"compass\\".", "Keep it to one sentence.", '
    '"Keep it to one sentence.", "Keep it to one sentence.", "Keep it to'
)


def test_a_critique_cut_off_while_repeating_keeps_its_complete_items_once() -> None:
    model = model_with_critic(REPEATING, critique(score=1, done=True))
    result = refine("t", model=model)
    first = result["attempts"][0]
    assert first["critique"]["feedback"] == ['Use the word "compass".', "Keep it to one sentence."]
    assert first["problems"][0] == CUT_JSON
    assert len(model.requests_for("critic")) == 2, "no second ask: the complete items are read"


def test_a_cut_off_critique_with_nothing_complete_is_still_asked_again() -> None:
    assert salvage_cut_json('{"feedback": ["unterminated') is None
    assert salvage_cut_json('{"feedback": [') is None
    assert salvage_cut_json('{"feedback": ["a"], "score": 0.4, "done": fal') == {
        "feedback": ["a"],
        "score": 0.4,
    }


def test_repeated_feedback_items_count_once() -> None:
    model = model_with_critic(critique(["Add a verb.", "Add a verb.", "Name the dog."], score=0.2))
    result = refine("t", model=model, max_iterations=1)
    assert result["attempts"][0]["critique"]["feedback"] == ["Add a verb.", "Name the dog."]


def test_bullets_that_state_the_score_or_done_are_no_feedback_items() -> None:
    text = "- Use the word river.\n- score]: 0.5\n- done]: true\n* Score: 4/10"
    critique, _ = read_critique(text)
    assert critique.feedback == ["Use the word river."]
    assert critique.score == pytest.approx(0.5)
