"""The program verifier: the draft's own program, run sandboxed, must print its stated answer."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from langchain_core.messages import BaseMessage

from self_refine import refine, refine_batch
from self_refine.critics import VERIFIERS
from self_refine.critics.sandbox.host import SandboxLimits
from self_refine.critics.verifiers import program_verifier
from tests.fakes import FakeChatModel, critique

program = VERIFIERS["program"]
TASK = "Pens cost 7 dollars and notebooks 3. Nora buys 2 of each and pays 50. Her change?"


def _draft(code: str, answer: str = "30") -> str:
    return f"2 pens cost 14, 2 notebooks 6.\n```python\n{code}\n```\nThe answer is {answer}."


RIGHT = _draft("cost = 2 * 7 + 2 * 3\nprint(50 - cost)")


def test_a_program_that_prints_the_stated_answer_passes_with_no_reference() -> None:
    verdict = program(TASK, RIGHT, None)
    assert verdict.done and verdict.score == 1.0 and verdict.feedback == []
    assert program(TASK, _draft('print("change:", 50 - 20)', "$30"), {"answer": "31"}).done


def test_a_mismatch_names_both_values_for_the_refiner() -> None:
    verdict = program(TASK, _draft("print(50 - 2 * 7 + 2 * 3)"), None)
    assert not verdict.done and verdict.score == 0.0
    assert verdict.feedback[0].startswith("Your program prints 42 but your answer says 30:")


@pytest.mark.parametrize(
    ("draft", "says"),
    [
        ("2 pens cost 14, 2 notebooks 6, so the change is 30. The answer is 30.", "no program"),
        (_draft("print(50 - 20)").replace("The answer is 30.", "Done."), "No final answer"),
        ("```python\nprint(30)\n```", "No final answer found"),
        (_draft("cost = 2 * 7 + 2 * 3"), "prints no number: end it with print("),
        (_draft("print(50 / 0)"), "fails: ZeroDivisionError: division by zero (line 1"),
        (_draft("print(50 -)"), "fails: SyntaxError"),
    ],
)
def test_each_failure_says_what_to_change(draft: str, says: str) -> None:
    verdict = program(TASK, draft, None)
    assert not verdict.done and verdict.score == 0.0
    assert says in verdict.feedback[0]


def test_a_program_that_runs_too_long_is_stopped_and_told_so() -> None:
    quick = program_verifier(SandboxLimits(timeout=1.0, cpu_seconds=2))
    verdict = quick(TASK, _draft("while True:\n    pass"), None)
    assert not verdict.done
    assert verdict.feedback[0].startswith("Your program was stopped: ")
    assert "timed out after 1 s" in verdict.feedback[0] or "CPU" in verdict.feedback[0]


def test_its_feedback_reaches_the_refiner_and_a_fixed_draft_ends_the_run() -> None:
    wrong = _draft("print(50 - 2 * 7 + 2 * 3)")
    model = FakeChatModel(
        script={"generator": [wrong], "refiner": [RIGHT], "critic": [critique(score=0.2)]}
    )
    result = refine(TASK, model=model, profile="math_program", max_iterations=2, strategy="refine")
    assert result["stop_reason"] == "verified" and result["answer"] == RIGHT
    (request,) = model.requests_for("refiner")
    assert "Your program prints 42 but your answer says 30" in request.prompt


def test_the_math_program_profile_asks_for_a_program_that_prints_the_result() -> None:
    model = FakeChatModel(script={"generator": [RIGHT]})
    refine(TASK, model=model, profile="math_program", critics=["program"])
    (request,) = model.requests_for("generator")
    assert "```python block that computes the final value" in request.prompt
    assert "prints it" in request.prompt


def test_sampling_stops_at_the_first_draft_whose_program_agrees() -> None:
    drafts = iter([_draft("print(42)"), RIGHT, _draft("print(7)", "7")])

    def draft(messages: Sequence[BaseMessage]) -> str:
        return next(drafts)

    model = FakeChatModel(script={"generator": [draft]})
    result = refine(
        TASK,
        model=model,
        profile="math_program",
        critics=["program"],
        strategy="sample",
        max_iterations=3,
    )
    assert result["stop_reason"] == "verified" and result["answer"] == RIGHT
    assert len(model.requests_for("generator")) == 2


def test_a_batch_s_grade_never_runs_the_program_check() -> None:
    model = FakeChatModel(script={"generator": ["2 + 2 = 4. The answer is 4."]})
    result = refine_batch(
        ["What is 2 + 2?"],
        model=model,
        references=[{"answer": "4"}],
        profile="math",
        critics=["answer"],
        refine_only_incorrect=False,
    )
    (record,) = result.records
    assert record is not None and record["correct_final"] is True


def test_a_stated_answer_in_grouped_thousands_agrees_with_the_program() -> None:
    assert program(TASK, _draft("print(12345)", "12 345"), None).done
    assert program(TASK, _draft("print(2.5)", "2,5"), None).done
    verdict = program(TASK, _draft("print(10000)", "1 0000"), None)
    assert not verdict.done and '"1 0000" is not one number' in verdict.feedback[0]
    assert "0000 but" not in verdict.feedback[0] and "says 0000" not in verdict.feedback[0]
