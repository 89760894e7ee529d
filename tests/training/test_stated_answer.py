"""The `stated_answer` check: an arithmetic answer counts only where the last line states it."""

from __future__ import annotations

import pytest

from self_refine.training import refine_rollout, verifier_reward
from self_refine.training.checks import STATED_ANSWER, stated_answer
from tests.training.example import train_grpo


@pytest.mark.parametrize(
    ("reply", "key"),
    [
        # the two refinements that passed the old reward by where the last number fell
        ("The task is to subtract 28 from 14.", -14),
        ("The task is to subtract 28 from 14.", 14),
        ("28 - 14 = 14", 14),  # worked, but no statement of the answer
        ("The answer is 14.\nSo 28 - 14 = 14", 14),  # the statement is not the last line
        ("The answer is 14, I think.", 14),  # something after the statement
        ("The answer is 14 - 0.", 14),  # an expression, not one number
        ("The answer is 15.", 14),  # stated, and wrong
        ("\\boxed{28 - 14}", 14),
        ("", 14),
    ],
)
def test_a_reply_that_states_no_right_answer_in_its_last_line_fails(reply: str, key: int) -> None:
    verdict = STATED_ANSWER("What is 28 - 14?", reply, {"answer": key})
    assert not verdict.done
    assert verdict.feedback  # the refiner is told what to fix


@pytest.mark.parametrize(
    "reply",
    [
        "28 - 14 = 14.\nThe answer is 14.",
        "The answer is 14",
        "28 - 14 = 14, so the answer is: 14.",
        "**Final answer:** 14",
        "Answer: 14",
        "the answer is 14.\n\n  ",
        "$\\boxed{14}$",
        "28 - 14 = \\boxed{14}.",
    ],
)
def test_a_last_line_that_states_the_right_number_passes(reply: str) -> None:
    assert STATED_ANSWER("What is 28 - 14?", reply, {"answer": 14}).done
    assert stated_answer(reply) == "14"


def test_negative_and_grouped_numbers_are_read_whole() -> None:
    assert STATED_ANSWER("t", "The answer is -14.", {"answer": -14}).done
    assert STATED_ANSWER("t", "The answer is \u221214.", {"answer": -14}).done
    assert STATED_ANSWER("t", "The answer is 1,000.", {"answer": 1000}).done
    assert not STATED_ANSWER("t", "The answer is 14.", {"answer": -14}).done


def test_the_feedback_asks_for_the_form_the_prompt_asks_for() -> None:
    (feedback,) = STATED_ANSWER("t", "28 - 14 = 14", {"answer": 14}).feedback
    assert 'end your reply with a last line "The answer is <number>."' in feedback


def test_the_reward_and_the_rollout_read_the_check_by_its_name() -> None:
    reward = verifier_reward("stated_answer")
    assert reward.__name__ == "verifier_stated_answer"
    prompts = ["What is 28 - 14?"] * 3
    replies = ["The task is to subtract 28 from 14.", "28 - 14 = 14\nThe answer is 14.", "14"]
    assert reward(prompts, replies, reference=[{"answer": 14}] * 3) == [0.0, 1.0, 0.0]
    rollout = refine_rollout(
        [{"prompt": prompts[0], "reference": {"answer": 14}}], verifiers=["stated_answer"]
    )
    assert rollout.verifiers == [STATED_ANSWER]  # the one function turn 1 and turn 2 judge by


def test_the_arithmetic_tasks_prompt_asks_for_the_form_the_check_reads() -> None:
    example = train_grpo()
    task = example.TASKS["arithmetic"]
    assert (task.check, task.critic) == ("stated_answer", None)  # it judges, rewards, critiques
    (row,) = task.rows(1, seed=0)
    prompt = row["prompt"][0]["content"]
    form = prompt.split("End your reply with: ")[1]
    assert form == "The answer is <number>."
    following = form.replace("<number>", str(row["reference"]["answer"]))
    assert STATED_ANSWER(prompt, f"Let me work it out.\n{following}", row["reference"]).done
