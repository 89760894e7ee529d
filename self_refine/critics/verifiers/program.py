"""The `program` verifier: the draft's own program, run sandboxed, prints its final answer.

Needs no reference: the check is that a solution agrees with itself. The draft's
program (its longest ```python block, as `python_tests` reads it) runs in the sandbox
as a script's body; the last number it prints (read as the `answer` verifier reads a
final answer) must equal the final answer the rest of the draft states (a \\boxed{},
"####" or "The answer is ..." line outside the program). Every failure
says what to change: no program, no final answer, the program's error or stop, no
number printed, or the two values that disagree.

The program runs as a module's body, so a `main()` behind `if __name__ == "__main__":`
is not called; the `math_program` profile asks for a block that prints the result.
"""

from __future__ import annotations

from typing import Any

from self_refine.critics.sandbox.host import (
    CodeTest,
    SandboxLimits,
    require_sandbox,
    run_python_tests,
)
from self_refine.critics.verifiers.answer import (
    answers_match,
    extract_answer,
    unreadable_number,
)
from self_refine.critics.verifiers.base import BuiltinVerifier
from self_refine.critics.verifiers.python_tests import extract_code
from self_refine.state import Critique

__all__ = ["PROGRAM", "program_verifier", "stated_answer", "without_program"]

_RUN = [CodeTest("pass", counts=False)]
"""What runs after the program: nothing to test, its output is the result."""

_NOT_STATED = "the last number"
"""Where `extract_answer` found a value no line states as the answer: not a final answer."""

_ADD_PROGRAM = (
    "The draft has no program: add one ```python block that computes the result from the "
    'task\'s numbers and prints it, then end with one line "The answer is <answer>."'
)


def without_program(draft: str) -> str:
    """The draft without its program (its longest ```python block), as a reader reads its
    prose: a `print("The answer is", x)` inside the program states no answer."""
    code = extract_code(draft)
    return draft.replace(code, "") if code != draft else draft


def stated_answer(draft: str) -> tuple[str, str] | None:
    """The final answer the draft states outside its program, and where it was found, read
    as the `answer` verifier reads one (`extract_answer`)."""
    return extract_answer(without_program(draft))


def _prepare(reference: Any) -> None:
    """Nothing to read from the reference; the sandbox must be available."""
    require_sandbox()


def _failed(why: str) -> Critique:
    return Critique(feedback=[why], score=0.0)


def _judge(draft: str, limits: SandboxLimits | None) -> Critique:
    code = extract_code(draft)
    if code == draft or not code.strip():
        return _failed(_ADD_PROGRAM)
    stated = stated_answer(draft)
    if stated is None or stated[1] == _NOT_STATED:
        return _failed('No final answer found: end with "The answer is <answer>."')
    run = run_python_tests(code, _RUN, limits=limits)
    if run.problem:
        return _failed(
            f"Your program was stopped: {run.problem}. Compute the result directly and print it."
        )
    if run.load_error:
        return _failed(
            f"Your program fails: {run.load_error}. Fix it so that it prints the result."
        )
    printed = extract_answer(run.stdout)
    if printed is None:
        return _failed("Your program prints no number: end it with print(<the result>).")
    if unreadable_number(stated[0]):
        return _failed(
            f'Your final answer "{stated[0]}" is not one number: write it with digits alone, '
            "as your program prints it."
        )
    if not answers_match(printed[0], stated[0]):
        return _failed(
            f"Your program prints {printed[0]} but your answer says {stated[0]}: find which "
            "calculation is wrong, fix it, and make the final answer the value the program "
            "prints."
        )
    return Critique(score=1.0, done=True)


def program_verifier(limits: SandboxLimits | None = None) -> BuiltinVerifier:
    """A `program` verifier whose sandbox uses `limits`."""
    return BuiltinVerifier(
        name="program",
        summary="the draft's ```python block, run sandboxed, prints its stated final answer "
        "(no reference needed)",
        prepare=_prepare,
        judge=lambda task, draft, _: _judge(draft, limits),
    )


PROGRAM = program_verifier()
