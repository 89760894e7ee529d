"""The example's code task: graded by every test, critiqued by the examples the prompt shows.

Runs generated code in the sandbox (Linux), a fraction of a second a program.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from self_refine.critics import VERIFIERS
from self_refine.training import refine_rollout, verifier_reward
from self_refine.training.checks import VISIBLE_TESTS
from tests.training.example import train_grpo

SOLUTIONS = {
    # the start of each problem's words: a right solution, k written in
    "the sum of the numbers": "return sum(x for x in xs if x > K)",
    "how many numbers": "return sum(x % K == 0 for x in xs)",
    "the list xs with every number multiplied": "return [x * K for x in xs]",
    "the {k} largest": "return sorted(xs, reverse=True)[:K]",
    "the index of the first": "return next((i for i, x in enumerate(xs) if x > K), -1)",
    "the list xs with every number below": "return [max(x, K) for x in xs]",
}


@pytest.fixture(scope="module")
def example() -> Any:
    return train_grpo()


def _solution(task: str) -> str:
    return _problem(task)[1]


def _problem(task: str) -> tuple[str, str]:
    """The problem's key in SOLUTIONS and a right solution to it."""
    words = re.search(r"returns (.*?)\. For example", task)
    assert words, task
    k = re.search(r"\d+", words[1])
    assert k, task
    for start, body in SOLUTIONS.items():
        if words[1].startswith(start.replace("{k}", k[0])):
            return start, f"```python\ndef solve(xs):\n    {body.replace('K', k[0])}\n```"
    raise AssertionError(f"no solution written for {task!r}")


def test_every_problem_is_graded_by_its_cases_and_shows_two(example: Any) -> None:
    rows = example.code_rows(20, seed=3)
    graded = VERIFIERS["python_tests"]
    problems = set()
    for row in rows:
        task, reference = row["prompt"][0]["content"], row["reference"]
        assert len(reference["tests"]) == 5 and reference["visible"] == reference["tests"][:2]
        for shown in reference["visible"]:
            assert shown.removeprefix("assert ") in task  # the prompt shows what the critic runs
        problem, solution = _problem(task)
        problems.add(problem)
        assert graded(task, solution, reference).done, task
    assert problems == set(SOLUTIONS)  # every kind of problem drawn, each graded right


def test_the_critic_tells_what_the_code_returned_on_the_shown_examples_only(
    example: Any,
) -> None:
    (row,) = example.code_rows(1, seed=5)
    task, reference = row["prompt"][0]["content"], row["reference"]
    wrong = "```python\ndef solve(xs):\n    return 'nothing'\n```"
    feedback = VISIBLE_TESTS(task, wrong, reference).feedback
    assert len(feedback) == 2 and all("returned 'nothing'" in item for item in feedback)
    hidden = [t.removeprefix("assert ") for t in reference["tests"][2:]]
    assert not any(case in item for case in hidden for item in feedback)


def test_code_that_only_fits_the_shown_examples_earns_no_reward(example: Any) -> None:
    (row,) = example.code_rows(1, seed=5)
    task, reference = row["prompt"][0]["content"], row["reference"]
    cases = [t.removeprefix("assert ").split(" == ") for t in reference["visible"]]
    table = ", ".join(f"{call.removeprefix('solve(')[:-1]!r}: {out}" for call, out in cases)
    fitted = f"```python\ndef solve(xs):\n    return {{{table}}}[repr(xs)]\n```"
    assert VISIBLE_TESTS(task, fitted, reference).done  # it passes what it was shown
    reward = verifier_reward("python_tests")
    assert reward([task], [fitted], reference=[reference]) == [0.0]
    assert reward([task], [_solution(task)], reference=[reference]) == [1.0]


def test_the_task_is_wired_with_its_critic(example: Any) -> None:
    task = example.TASKS["code"]
    assert (task.check, task.profile, task.critic) == (
        "python_tests",
        "python_function",
        "visible_tests",
    )
    rows = example.code_rows(2, seed=0)
    rollout = refine_rollout(rows, verifiers=[task.check], critics=[task.critic])
    assert rollout.critics == [VISIBLE_TESTS]
