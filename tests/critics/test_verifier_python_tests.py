"""The python_tests verifier: code extraction, test formats, and the feedback it gives."""

from __future__ import annotations

import pytest

from self_refine.critics import VERIFIERS, NotApplicable
from self_refine.critics.sandbox.host import CodeTest, IOTest, SandboxLimits
from self_refine.critics.verifiers import extract_code, python_tests_verifier
from self_refine.critics.verifiers.python_tests import parse_tests
from self_refine.errors import ConfigError

python_tests = VERIFIERS["python_tests"]
ADD_TESTS = {"tests": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]}


@pytest.mark.parametrize(
    ("draft", "code"),
    [
        ("def f():\n    return 1\n", "def f():\n    return 1\n"),
        ("Here:\n```python\nx = 1\n```\nDone.", "x = 1\n"),
        ("```py\nx = 1\n```", "x = 1\n"),
        ("```\nx = 1\n```", "x = 1\n"),
        (
            "```python\ndef add(a, b):\n    return a + b\n```\nUse it:\n```python\nadd(1, 2)\n```",
            "def add(a, b):\n    return a + b\n",
        ),
        ("```text\nnot code\n```\n```python\ny = 2\n```", "y = 2\n"),
    ],
)
def test_extract_code(draft: str, code: str) -> None:
    assert extract_code(draft) == code


def test_parse_tests_reads_asserts_blocks_and_io_pairs() -> None:
    parsed = parse_tests(
        [
            "import math\nassert add(1, 2) == 3\nassert add(0, 0) == 0",
            "def check(candidate):\n    assert candidate(1, 1) == 2\n\ncheck(add)",
            {"input": "1 2", "output": "3"},
            {"input": 5, "expected": 25},
        ]
    )
    assert parsed == [
        CodeTest("import math", counts=False),
        CodeTest("assert add(1, 2) == 3"),
        CodeTest("assert add(0, 0) == 0"),
        CodeTest("def check(candidate):\n    assert candidate(1, 1) == 2", counts=False),
        CodeTest("check(add)"),
        IOTest("1 2", "3"),
        IOTest("5", "25"),
    ]


@pytest.mark.parametrize(
    ("tests", "message"),
    [
        (["assert add(1, 2) == "], r'reference\["tests"\]\[0\] is not valid Python'),
        ([{"stdin": "1"}], r'reference\["tests"\]\[0\] must be Python source or'),
        (42, r'reference\["tests"\] must be a list'),
        (["import os"], "holds no test"),
    ],
)
def test_parse_tests_refuses_malformed_tests(tests: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_tests(tests)


def test_passing_code_is_done() -> None:
    draft = "```python\ndef add(a, b):\n    return a + b\n```"
    critique = python_tests("Write add.", draft, ADD_TESTS)
    assert critique.done and critique.score == 1.0 and critique.feedback == []


def test_failing_tests_are_listed_with_the_wrong_value_or_the_error() -> None:
    draft = (
        "def add(a, b):\n"
        "    if a < 0:\n"
        "        raise ValueError('negative')\n"
        "    return a + b + 1\n"
    )
    critique = python_tests("Write add.", draft, ADD_TESTS)
    assert not critique.done and critique.score == 0.0
    assert critique.feedback == [
        "Test `assert add(1, 2) == 3` failed: add(1, 2) returned 4, expected 3.",
        "Test `assert add(-1, 1) == 0` failed: ValueError: negative (line 3 of the code).",
    ]


def test_partial_pass_scores_the_fraction_passed() -> None:
    critique = python_tests("t", "def add(a, b):\n    return abs(a) + b\n", ADD_TESTS)
    assert critique.score == 0.5
    assert critique.feedback == [
        "Test `assert add(-1, 1) == 0` failed: add(-1, 1) returned 2, expected 0."
    ]


def test_assert_messages_and_non_equality_asserts() -> None:
    tests = {"tests": ["assert is_even(3) is False, 'three is odd'", "assert is_even(4)"]}
    critique = python_tests("t", "def is_even(n):\n    return True\n", tests)
    assert critique.feedback == [
        "Test `assert is_even(3) is False, 'three is odd'` failed: assertion failed: three is odd."
    ]


def test_humaneval_style_check_block() -> None:
    tests = {"tests": ["def check(candidate):\n    assert candidate(2, 3) == 5\n\ncheck(add)"]}
    assert python_tests("t", "def add(a, b):\n    return a + b\n", tests).done
    wrong = python_tests("t", "def add(a, b):\n    return a * b\n", tests)
    assert wrong.feedback == ["Test `check(add)` failed: assertion failed."]


def test_io_pairs_run_the_code_as_a_program() -> None:
    reference = {
        "tests": [{"input": "3\n1 2 3\n", "output": "6"}, {"input": "1\n5", "output": "5\n"}]
    }
    program = "input()\nprint(sum(map(int, input().split())))\n"
    assert python_tests("t", f"```python\n{program}```", reference).done
    wrong = python_tests("t", "print(0)\n", reference)
    assert wrong.feedback == [
        "Test 1 (input '3\\n1 2 3\\n') failed: expected output '6', got '0\\n'.",
        "Test 2 (input '1\\n5') failed: expected output '5\\n', got '0\\n'.",
    ]


def test_code_that_does_not_run_is_reported_once() -> None:
    critique = python_tests("t", "def add(a, b)\n    return a + b\n", ADD_TESTS)
    assert critique.feedback == ["The code does not run: SyntaxError: expected ':' (line 1)."]
    critique = python_tests("t", "import numpyy\n", ADD_TESTS)
    assert critique.feedback == [
        "The code does not run: ModuleNotFoundError: No module named 'numpyy' (line 1 of the code)."
    ]
    assert critique.score == 0.0


def test_a_draft_without_code() -> None:
    critique = python_tests("t", "   ", ADD_TESTS)
    assert critique.feedback == [
        "The draft contains no Python code: put the program in a ```python block."
    ]


def test_containment_failures_become_feedback() -> None:
    verifier = python_tests_verifier(SandboxLimits(timeout=1))
    draft = "def add(a, b):\n    while a:\n        pass\n    return a + b\n"
    critique = verifier(
        "t",
        draft,
        {"tests": ["assert add(0, 1) == 1", "assert add(1, 2) == 3", "assert add(0, 0) == 0"]},
    )
    assert critique.feedback == [
        "Test `assert add(1, 2) == 3` did not finish: timed out after 1 s.",
        "1 more test(s) did not run because the run was stopped.",
    ]
    assert critique.score == pytest.approx(1 / 3, abs=0.001)


def test_memory_limit_is_named_in_the_feedback() -> None:
    draft = "def add(a, b):\n    return len(bytearray(8 * 2**30))\n"
    critique = python_tests("t", draft, ADD_TESTS)
    assert (
        critique.feedback[0]
        == "Test `assert add(1, 2) == 3` failed: memory limit exceeded (512 MB)."
    )


def test_python_tests_needs_reference_tests() -> None:
    with pytest.raises(NotApplicable, match=r'needs reference\["tests"\]'):
        python_tests("t", "x = 1", {"answer": 1})
