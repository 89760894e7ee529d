"""Batch input is checked per profile before any model call, each refusal with its line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from self_refine import RefineContext
from self_refine.batch.items import BatchItem, read_items
from self_refine.batch.job import BatchJob
from self_refine.batch.metrics import format_summary, summarize
from self_refine.cli.main import main
from self_refine.critics.verifiers.answer import ANSWER
from self_refine.critics.verifiers.base import NotApplicable
from self_refine.errors import ConfigError
from self_refine.state import Critique

TESTS = ["assert f(1) == 2"]


def _refusal(reference: Any, **job: Any) -> str | None:
    """Why BatchJob refuses an item with this reference, or None when it takes it."""
    _, refused = BatchJob(**job).check([BatchItem("a", "a task", reference)])
    return refused[0][1] if refused else None


def _profile(name: str) -> dict[str, Any]:
    return {"context": RefineContext(profile=name)}


@pytest.mark.parametrize(
    ("profile", "fits", "misfits", "says"),
    [
        ("math", {"answer": 29}, {"concepts": ["pencil"]}, 'answer needs reference["answer"]'),
        ("python_function", {"tests": TESTS}, {"answer": 2}, 'needs reference["tests"]'),
        (
            "constrained_generation",
            {"concepts": ["dog"]},
            {"tests": TESTS},
            'needs reference["concepts"]',
        ),
    ],
)
def test_a_reference_must_fit_the_profile_s_verifiers_though_llm_is_among_its_critics(
    profile: str, fits: dict[str, Any], misfits: dict[str, Any], says: str
) -> None:
    assert _refusal(fits, **_profile(profile)) is None
    assert _refusal(None, **_profile(profile)) is None  # no reference: the LLM critic alone
    reason = _refusal(misfits, **_profile(profile))
    assert reason is not None and says in reason and "the run's verifiers" in reason


def test_explicit_critics_are_the_ones_the_reference_must_fit() -> None:
    critics = {"context": RefineContext(critics=["concepts", "json_schema", "llm"])}
    assert _refusal({"schema": {"type": "object"}}, **critics) is None
    assert _refusal({"answer": 3}, **critics) is not None


def test_with_the_llm_critic_alone_the_reference_must_fit_a_judging_verifier() -> None:
    assert _refusal({"answer": 29}) is None
    assert _refusal({"answer": 29, "source": "gsm8k"}) is None  # extra keys beside data are fine
    reason = _refusal({"answr": 29})
    assert reason is not None
    assert "it holds nothing the verifiers that judge the batch (answer, " in reason
    assert 'did you mean "answer" for "answr"?' in reason
    assert _refusal({"answr": 29}, verifiers=()) is None  # nothing judges: nothing to fit


def test_a_custom_verifier_takes_references_of_any_shape() -> None:
    def exact(task: str, draft: str, reference: Any) -> Critique:
        return Critique(done=draft == reference)

    assert _refusal("42", critics=[exact, "llm"], verifiers=[exact]) is None


@pytest.mark.parametrize(
    ("reference", "says"),
    [
        (
            {"answer": [1, {}]},
            "must be a number, a string, true/false or a list of them, got dict inside",
        ),
        (
            {"answer": {"n": 2}},
            "must be a number, a string, true/false or a list of them, got dict",
        ),
        (
            {"answer": [[1]]},
            "must be a number, a string, true/false or a list of them, got list inside",
        ),
        ({"schema": 5}, 'reference["schema"] must be a JSON object'),
        ({"concepts": [1, 2]}, 'reference["concepts"] must be a list of strings'),
    ],
)
def test_malformed_data_is_refused_by_shape(reference: Any, says: str) -> None:
    reason = _refusal(reference)
    assert reason is not None and says in reason


def test_answer_lists_of_numbers_and_strings_are_accepted() -> None:
    assert ANSWER.prepare({"answer": ["29", 29, 29.0]}) == ["29", 29, 29.0]
    assert ANSWER.prepare({"answer": True}) is True  # a yes/no question
    with pytest.raises(NotApplicable):
        ANSWER.prepare({"answer": []})
    with pytest.raises(ConfigError):
        ANSWER.prepare({"answer": [1, {}]})


def test_a_task_that_is_not_text_says_what_it_got(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    lines = ['{"task": 42}', '{"task": ["a"]}', '{"task": "  "}', '{"id": "x"}', '{"task": "ok"}']
    path.write_text("\n".join(lines) + "\n")
    items, problems = read_items(path)
    assert [item.task for item in items] == ["ok"]
    assert [str(p) for p in problems] == [
        'line 1: "task" must be a string, the text of the task; got a number (42)',
        'line 2: "task": task block 0 must be an object such as {"type": "text", "text": "..."}',
        'line 3: "task" is empty: give the text of the task',
        'line 4: needs a "task" with the text of the task',
    ]


def test_the_printed_summary_lists_the_skipped_lines() -> None:
    summary = {**summarize([]), "failed": 0, "input_problems": [3, 7]}
    assert "skipped input lines: 3, 7 (the warnings above say why)" in format_summary(summary)
    many = {**summary, "input_problems": list(range(1, 30))}
    assert "skipped input lines: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 19 more" in format_summary(many)
    assert "skipped" not in format_summary({**summary, "input_problems": []})


def test_the_command_line_refuses_misfits_by_line_and_lists_them_in_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = tmp_path / "in.jsonl"
    rows = [
        {"id": "ok", "task": "Tom has 3 boxes of 12 pencils. How many pencils?"},
        {"id": "concepts", "task": "What is 2 + 2?", "reference": {"concepts": ["four"]}},
        {"id": "typo", "task": "What is 3 + 3?", "reference": {"answr": 6}},
        {"id": "number", "task": 7},
    ]
    items.write_text("".join(json.dumps(row) + "\n" for row in rows))
    argv = ["batch", str(items), "-o", str(tmp_path / "out.jsonl"), "--profile", "math"]
    code = main([*argv, "--model", "offline", "--db", str(tmp_path / "c.db")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f'{items} line 2: "reference": it holds nothing the run\'s verifiers (answer)' in err
    assert f"{items} line 3: " in err and 'did you mean "answer" for "answr"?' in err
    assert f'{items} line 4: "task" must be a string' in err
    assert "skipped input lines: 2, 3, 4 (the warnings above say why)" in out
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["ok"]
