"""The `python_tests` verifier: run the draft's code against the reference's tests, sandboxed.

reference["tests"] is a list whose items are either Python source (assert
statements, or a block such as HumanEval's `def check(candidate): ...` followed
by `check(fn)`) or {"input": ..., "output": ...} pairs, for which the code runs
as a program reading standard input.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from self_refine.critics.sandbox.host import (
    CodeTest,
    IOTest,
    SandboxLimits,
    SandboxRun,
    TestOutcome,
    require_sandbox,
    run_python_tests,
)
from self_refine.critics.verifiers.base import BuiltinVerifier, reference_field
from self_refine.errors import ConfigError
from self_refine.state import Critique

__all__ = ["PYTHON_TESTS", "extract_code", "parse_tests", "python_tests_verifier"]

_FENCE = re.compile(r"```[ \t]*+([\w+-]*+)(?:[^\n`]|`(?!``))*+\n(.*?)```", re.S)
"""A fenced block: its language, its body. An opening line ends before the next ``` (so a
line of many fences is read once, not once per fence)."""
_SETUP = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_MAX_ITEMS = 8


def extract_code(draft: str) -> str:
    """The program in the draft: the longest ```python block, else the whole text."""
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(draft)]
    tagged = [body for lang, body in blocks if lang in ("python", "py", "python3")]
    candidates = tagged or [body for lang, body in blocks if not lang]
    return max(candidates, key=len) if candidates else draft


def _statements(source: str, where: str) -> list[CodeTest]:
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise ConfigError(
            f"{where} is not valid Python: {error.msg} (line {error.lineno})"
        ) from None
    return [
        CodeTest(
            ast.get_source_segment(source, node) or ast.unparse(node), not isinstance(node, _SETUP)
        )
        for node in tree.body
    ]


def parse_tests(tests: Any) -> list[CodeTest | IOTest]:
    """Read reference["tests"]: Python source, or {"input", "output"} pairs."""
    items = [tests] if isinstance(tests, str | dict) else tests
    if not isinstance(items, list):
        raise ConfigError(
            'reference["tests"] must be a list of assert statements or {"input", "output"} pairs'
        )
    parsed: list[CodeTest | IOTest] = []
    for n, item in enumerate(items):
        where = f'reference["tests"][{n}]'
        if isinstance(item, str):
            parsed.extend(_statements(item, where))
        elif (
            isinstance(item, dict) and "input" in item and ("output" in item or "expected" in item)
        ):
            expected = item.get("output", item.get("expected"))
            parsed.append(IOTest(str(item["input"]), str(expected)))
        else:
            raise ConfigError(
                f'{where} must be Python source or {{"input": ..., "output": ...}}, '
                f"got {item!r:.80}"
            )
    if not any(not isinstance(t, CodeTest) or t.counts for t in parsed):
        raise ConfigError('reference["tests"] holds no test: add assert statements')
    return parsed


def _one_line(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _item(number: int, outcome: TestOutcome, problem: str | None) -> str:
    test = outcome.test
    if isinstance(test, IOTest):
        name = f"Test {number} (input {_one_line(repr(test.stdin), 60)})"
    else:
        name = f"{'Test' if test.counts else 'Setup'} `{_one_line(test.source)}`"
    verdict = "did not finish" if outcome.detail == problem else "failed"
    return f"{name} {verdict}: {outcome.detail}."


def _counts(outcome: TestOutcome) -> bool:
    return not isinstance(outcome.test, CodeTest) or outcome.test.counts


def critique_run(run: SandboxRun) -> Critique:
    """Turn a sandboxed run into a critique: one item per failed test, then what did not run."""
    counted = [o for o in run.outcomes if _counts(o)]
    passed = sum(o.passed for o in counted)
    score = round(passed / len(counted), 3) if counted else float(run.passed)
    if run.load_error:
        return Critique(feedback=[f"The code does not run: {run.load_error}."], score=0.0)
    failed = [(n, o) for n, o in enumerate(run.outcomes, 1) if o.ran and not o.passed]
    feedback = [_item(n, o, run.problem) for n, o in failed[:_MAX_ITEMS]]
    if len(failed) > _MAX_ITEMS:
        feedback.append(f"... and {len(failed) - _MAX_ITEMS} more tests failed.")
    not_run = sum(not o.ran for o in run.outcomes)
    if run.problem and not any(o.detail == run.problem for o in run.outcomes):
        feedback.append(f"The run was stopped: {run.problem}.")
    if not_run:
        feedback.append(f"{not_run} more test(s) did not run because the run was stopped.")
    return Critique(feedback=feedback, score=score, done=run.passed)


def _prepare(reference: Any) -> list[CodeTest | IOTest]:
    tests = parse_tests(reference_field(reference, "tests", '["assert add(2, 3) == 5"]'))
    require_sandbox()
    return tests


def python_tests_verifier(limits: SandboxLimits | None = None) -> BuiltinVerifier:
    """A `python_tests` verifier whose sandbox uses `limits`."""

    def judge(task: str, draft: str, tests: list[CodeTest | IOTest]) -> Critique:
        code = extract_code(draft)
        if not code.strip():
            return Critique(
                feedback=[
                    "The draft contains no Python code: put the program in a ```python block."
                ],
                score=0.0,
            )
        return critique_run(run_python_tests(code, tests, limits=limits))

    return BuiltinVerifier(
        name="python_tests",
        summary='the code passes reference["tests"] (asserts or input/output pairs), sandboxed',
        prepare=_prepare,
        judge=judge,
    )


PYTHON_TESTS = python_tests_verifier()
