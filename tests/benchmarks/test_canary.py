"""Nothing graded reaches a benchmark run: the canary that every hidden test and grading
reference carries never appears in a model request, nor in a reference the library is
given, in the budget benchmark under the feedback settings that stand for what a user has,
nor in the quality runner's conditions. Under the answer-key setting (the labelled upper
bound) it does: the check can fail."""

from __future__ import annotations

import json
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
