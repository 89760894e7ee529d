"""The critic's fallbacks, with the replies a small local model gave (issue 54, item 5).

Feedback items are problems of the draft: a critique's `score: 5` or `done: false`
line is never one; a message names what was wrong with a reply, never a class of
this package; a critique that says the draft does not address the task is no pass.
"""

from __future__ import annotations

import json

import pytest

from self_refine import refine
from self_refine.critics.parse import read_critique
from tests.fakes import FakeChatModel, critique

TASK = "Write one sentence using the words: dog, frisbee, park, sunset."
FIX = "Use the word frisbee."
NOT_ADDRESSED = (
    "The draft does not address the task: it uses none of the four words. "
    "The draft does not need any change."
)


@pytest.mark.parametrize(
    "text",
    [
        f"- {FIX}\n- score: 5\n- done: false",
        f"- {FIX}\n- **Score**: 5\n- **Done**: false",
        f"- {FIX}\n- Score 5\n- done false",
        f"- {FIX}\n- score - 5/10\n- Done = False.",
        json.dumps({"feedback": [FIX, "score: 5", "done: false"]}),
        json.dumps({"feedback": [FIX, "Score: 0.5", "Done: False"], "score": 0.5, "done": False}),
    ],
)
def test_score_and_done_lines_are_never_feedback_items(text: str) -> None:
    read, problems = read_critique(text)
    assert read.feedback == [FIX]
    assert read.done is False
    assert any("field names" in problem for problem in problems)


def test_a_plain_critique_without_bullets_keeps_its_prose_and_drops_its_field_lines() -> None:
    read, _ = read_critique(f"{FIX} It is missing.\nscore: 5\ndone: false")
    assert read.feedback == [f"{FIX} It is missing."]
    assert read.score == pytest.approx(0.5)


def test_score_and_done_lines_never_reach_the_refiner_or_the_result() -> None:
    model = FakeChatModel(
        script={
            "generator": ["A dog ran."],
            "critic": [f"- {FIX}\n- score: 5\n- done: false", critique(score=1, done=True)],
            "refiner": ["A dog caught a frisbee in the park at sunset."],
        },
        structured="unsupported",
    )
    result = refine(TASK, model=model, critics=["llm"])
    first = result["attempts"][0]
    assert first["critique"]["feedback"] == [FIX]
    prompt = model.requests_for("refiner")[0].prompt
    assert FIX in prompt and "score: 5" not in prompt and "done: false" not in prompt


def test_an_unreadable_structured_reply_is_said_without_class_names() -> None:
    model = FakeChatModel(
        script={
            "generator": ["A dog ran."],
            "critic": ['{"feedback": ["unterminated', f"- {FIX}", critique(score=1, done=True)],
            "refiner": ["A dog caught a frisbee in the park at sunset."],
        },
    )
    result = refine(TASK, model=model, critics=["llm"])
    problems = result["attempts"][0]["problems"]
    assert problems == [
        "the critic's structured reply was unreadable (its JSON was cut off before its "
        "first complete item); asked again in plain text",
        "the critique was not JSON; read it as plain text",
    ]
    assert result["attempts"][0]["critique"]["feedback"] == [FIX]


@pytest.mark.parametrize(
    "reply",
    [
        critique([NOT_ADDRESSED], score=1, done=True),
        NOT_ADDRESSED + "\nscore: 1\ndone: true",
    ],
    ids=["json", "plain"],
)
def test_a_critique_saying_the_task_is_not_addressed_does_not_end_the_run(reply: object) -> None:
    model = FakeChatModel(
        script={
            "generator": ["Cats like to sleep in the sun."],
            "critic": [reply, critique(score=1, done=True)],
            "refiner": ["A dog caught a frisbee in the park at sunset."],
        },
        structured="json" if isinstance(reply, dict) else "unsupported",
    )
    result = refine(TASK, model=model, critics=["llm"])
    first = result["attempts"][0]
    assert first["critique"]["done"] is False
    assert first["critique"]["score"] == 0
    assert any("does not address the task" in problem for problem in first["problems"])
    assert result["answer"] == "A dog caught a frisbee in the park at sunset."
    assert len(result["attempts"]) == 2


@pytest.mark.parametrize(
    "item",
    [
        "The draft does not address the task's last word, sunset.",
        "The draft does not fully address the task.",
        "Good: the draft addresses the task.",
    ],
)
def test_a_partial_or_positive_remark_keeps_the_verdict(item: str) -> None:
    read, problems = read_critique(json.dumps({"feedback": [item], "score": 0.9, "done": True}))
    assert read.done is True and read.score == pytest.approx(0.9)
    assert not any("does not address" in problem for problem in problems)
