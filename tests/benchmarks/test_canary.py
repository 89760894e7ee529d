"""Nothing graded reaches a benchmark run: the canary that every hidden test and grading
reference carries never appears in a model request, nor in a reference the library is
given, in the budget benchmark under the feedback settings that stand for what a user has,
nor in the quality runner's conditions. Under the answer-key setting (the labelled upper
bound) it does: the check can fail.

The canary is a string; a leak need not carry it. So the values are searched too: every
answer key (made distinctive here, so that no task or draft holds it by chance) and
every hidden test's body without its message, in every request and every reference
given; and every answer a budget run reports is the library's own pick (the run's answer
at the run's budget). Three mutants of the benchmark, each a leak the canary alone lets
through, make these checks fail (tests of the test)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from benchmarks.quality.sets import CANARY
from benchmarks.quality.spend import arguments, run
from tests.fakes import FakeChatModel, critique

DRAFT = "```python\ndef nothing(*args):\n    return None\n```\nThe answer is 1."
REFINED = "```python\ndef nothing(value):\n    return 0\n```\nThe answer is 2."


def _recording(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeChatModel, list[str]]:
    """A scripted model recording its requests, and the references the library is given."""
    import self_refine

    given: list[str] = []
    library = self_refine.arefine_batch

    async def recording(*args: Any, **kwargs: Any) -> Any:
        given.append(json.dumps(kwargs.get("references"), default=str))
        return await library(*args, **kwargs)

    monkeypatch.setattr(self_refine, "arefine_batch", recording)
    model = FakeChatModel(
        script={
            "generator": [DRAFT],
            "critic": [critique(["Handle the empty case."], score=0.3)],
            "refiner": [REFINED],
        }
    )
    return model, given


def _sent(model: FakeChatModel, given: list[str]) -> list[str]:
    sent = ["\n".join(m.text for m in request.messages) for request in model.requests]
    assert sent and given, "the benchmark ran no model call"
    return sent


async def _benchmark(
    feedback: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], list[str]]:
    """Two reported items of every set under every strategy, as spend.py drives the
    library; returns the text of every model request and of every reference given."""
    model, given = _recording(monkeypatch)
    options = ["--n", "2", "--no-cache", "--resamples", "100", "--budgets", "1,4"]
    await run(arguments([*options, "--feedback", feedback, "--out", str(tmp_path)]), model)
    return _sent(model, given), given


@pytest.mark.parametrize("feedback", ["task", "critic"])
async def test_no_graded_data_reaches_a_run(
    feedback: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent, given = await _benchmark(feedback, tmp_path, monkeypatch)
    assert not [text for text in sent if CANARY in text], "a model request holds grading data"
    assert not [text for text in given if CANARY in text], "a run was given grading data"


async def test_the_upper_bound_setting_is_seen_leaking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent, given = await _benchmark("key", tmp_path, monkeypatch)
    # The hidden tests' failures are fed back to the model; every answer key is given.
    assert any(CANARY in text for text in sent)
    assert all(CANARY in text for text in given)


async def test_no_graded_data_reaches_the_quality_runners_conditions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.quality import run as quality
    from tests.benchmarks.test_quality import _args

    model, given = _recording(monkeypatch)
    args = _args(
        out=tmp_path,
        k=1,
        sets=["constrained", "arithmetic", "code"],
        conditions=list(quality.CONDITIONS),
        best_of=2,
        best_of_given=True,
    )
    await quality.run(args, chat_model=model)
    sent = _sent(model, given)
    assert not [text for text in sent if CANARY in text], "a model request holds grading data"
    assert not [text for text in given if CANARY in text], "a run was given grading data"


KEYS = {"arithmetic-030": "918273", "arithmetic-031": "546372"}
"""Answer keys that no task, template or scripted draft holds: a value found is a leak."""


def _hidden_bodies(item: dict[str, Any]) -> list[str]:
    """An item's hidden tests as they would read without their canary message."""
    shown = set(item["reference"].get("tests") or [])
    return [
        test.removesuffix(f", {CANARY!r}")
        for test in item["grade"].get("tests") or []
        if test not in shown
    ]


async def _valued_benchmark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], list[str], list[dict[str, Any]], list[dict[str, Any]]]:
    """Two reported items of every set, their answer keys made distinctive; returns the
    requests, the references given, the items and the run's records."""
    from benchmarks.quality import run as quality_run
    from benchmarks.quality import spend

    load = quality_run.load_items
    items: list[dict[str, Any]] = []

    def distinctive(name: str, n: int | None, part: str = "report") -> list[dict[str, Any]]:
        found = load(name, n, part)
        for item in found:
            if item["id"] in KEYS:
                item["grade"] = {**item["grade"], "answer": KEYS[item["id"]]}
        items.extend(i for i in found if i["id"] not in {j["id"] for j in items})
        return found

    monkeypatch.setattr(spend, "load_items", distinctive)
    model, given = _recording(monkeypatch)
    options = ["--n", "2", "--no-cache", "--resamples", "100", "--budgets", "1,4"]
    _, records, _ = await run(arguments([*options, "--out", str(tmp_path)]), model)
    return _sent(model, given), given, items, records


def _leaks(texts: list[str], items: list[dict[str, Any]]) -> list[str]:
    """Every answer key and hidden test body found in the texts."""
    found = []
    for item in items:
        key = item["grade"].get("answer")
        if key and any(re.search(rf"(?<!\d){re.escape(key)}(?!\d)", t) for t in texts):
            found.append(f"{item['id']}: the answer key {key}")
        for body in _hidden_bodies(item):
            if any(body in t for t in texts):
                found.append(f"{item['id']}: the hidden test {body}")
    return found


def _not_the_librarys_pick(records: list[dict[str, Any]]) -> list[str]:
    """The reported answers (at the largest budget, the run's own) that are not the run's."""
    return [
        f"{r['set']}/{r['strategy']}/{r['id']}"
        for r in records
        if r["strategy"] != "first"
        and r["budgets"][-1]["answer"] is not None
        and r["budgets"][-1]["answer"] != r["answer"]
    ]


async def test_no_key_value_or_hidden_test_body_reaches_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent, given, items, records = await _valued_benchmark(tmp_path, monkeypatch)
    assert {i["id"] for i in items} >= set(KEYS) and any(_hidden_bodies(i) for i in items)
    assert not _leaks(sent, items), "a model request holds grading data"
    assert not _leaks(given, items), "a run was given grading data"
    assert not _not_the_librarys_pick(records), "a reported answer is not the run's own"


def _key_value_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutant: the arithmetic run is given its key's value (no canary beside it)."""
    from benchmarks.quality import spend
    from benchmarks.quality.feedback import RunChecks, run_checks

    def leaky(name: str, item: dict[str, Any], feedback: str) -> RunChecks:
        if name == "arithmetic":
            return RunChecks("answer", {"answer": item["grade"]["answer"]})
        return run_checks(name, item, feedback)

    monkeypatch.setattr(spend, "run_checks", leaky)


def _bodies_without_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutant: the code run checks the hidden tests too, their canary message cut off."""
    from benchmarks.quality import spend
    from benchmarks.quality.feedback import RunChecks, run_checks

    def leaky(name: str, item: dict[str, Any], feedback: str) -> RunChecks:
        if name == "code":
            tests = [*item["reference"]["tests"], *_hidden_bodies(item)]
            return RunChecks("python_tests", {"tests": tests})
        return run_checks(name, item, feedback)

    monkeypatch.setattr(spend, "run_checks", leaky)


def _grader_picks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutant: the answer reported is the grader's pick among the run's drafts."""
    from benchmarks.quality import spend

    reading = spend._reading

    def picked(
        item: dict[str, Any], attempts: list[dict[str, Any]], budget: int, grader: Any, *rest: Any
    ) -> Any:
        # the newest draft the grader passes, else the newest draft: read as the only one
        right = [a for a in attempts if grader(item, str(a["draft"])) is True]
        chosen = dict((right or attempts)[-1], iteration=0)
        return reading(item, [chosen], budget, grader, *rest)

    monkeypatch.setattr(spend, "_reading", picked)


@pytest.mark.parametrize("mutant", [_key_value_only, _bodies_without_message, _grader_picks])
async def test_each_leak_the_canary_misses_fails_the_checks(
    mutant: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mutant(monkeypatch)
    sent, given, items, records = await _valued_benchmark(tmp_path, monkeypatch)
    assert not [t for t in sent + given if CANARY in t]  # the canary alone sees nothing
    caught = _leaks(sent, items) + _leaks(given, items) + _not_the_librarys_pick(records)
    assert caught, f"{mutant.__name__} went unseen"
