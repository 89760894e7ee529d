"""refine_batch(): the Python API a training loop calls, against the local OpenAI server."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from self_refine import RefineContext, arefine_batch, refine_batch
from self_refine.errors import ConfigError
from self_refine.models.offline import OfflineModel
from self_refine.models.resolve import resolve_model
from tests.batch_support import MathDataset, MathResponder, expected, math_dataset
from tests.openai_server import OpenAIServer


@pytest.fixture
def dataset() -> MathDataset:
    return math_dataset(per_kind=2)


@pytest.fixture
def server(dataset: MathDataset) -> Iterator[OpenAIServer]:
    with OpenAIServer(responder=MathResponder(dataset)) as running:
        yield running


def _model(server: OpenAIServer) -> Any:
    return resolve_model("test-model", base_url=server.base_url)


def _columns(dataset: MathDataset) -> dict[str, list[Any]]:
    return {
        "tasks": [item["task"] for item in dataset.items],
        "references": [item["reference"] for item in dataset.items],
        "ids": [item["id"] for item in dataset.items],
    }


def _tasks_seen(server: OpenAIServer, role: str) -> list[str]:
    found = []
    for request in server.chat_requests(role):
        match = re.search(r"<task>\n(.*?)\n</task>", request.text, flags=re.S)
        found.append(match.group(1) if match else "")
    return found


def test_refining_everything_gives_the_scripted_accuracy_and_transitions(
    dataset: MathDataset, server: OpenAIServer
) -> None:
    columns = _columns(dataset)
    result = refine_batch(
        columns["tasks"],
        model=_model(server),
        references=columns["references"],
        ids=columns["ids"],
        refine_only_incorrect=False,
        concurrency=4,
    )
    want = expected(dataset)
    summary = result.summary
    for key in ("items", "accuracy_first", "accuracy_final", "transitions", "mean_iterations"):
        assert summary[key] == want[key], key
    assert summary["accuracy_by_iteration"] == want["accuracy_by_iteration"]
    assert summary["stop_reasons"] == want["stop_reasons"]
    assert summary["failed"] == 0 and not result.errors
    # answers come back in input order, one per task
    for item, answer, record in zip(dataset.items, result.answers, result.records, strict=True):
        assert record is not None and record["id"] == item["id"] and record["answer"] == answer
        kind = dataset.kinds[item["id"]]
        right = item["reference"]["answer"]
        assert (answer == f"The answer is {right}.") == (kind in ("cc", "ic1", "ic2"))


def test_known_correct_answers_come_back_untouched_without_model_calls(
    dataset: MathDataset, server: OpenAIServer, tmp_path: Path
) -> None:
    columns = _columns(dataset)
    firsts = [f"The answer is {dataset.scripts[t].first}." for t in columns["tasks"]]
    correct = [dataset.kinds[i] in ("cc", "ci") for i in columns["ids"]]
    log = tmp_path / "logs" / "refine.jsonl"
    result = refine_batch(
        columns["tasks"],
        model=_model(server),
        answers=firsts,
        correct=correct,
        references=columns["references"],
        log=log,
    )
    seen = set(_tasks_seen(server, ""))
    seen |= {t for role in ("critic", "refiner", "generator") for t in _tasks_seen(server, role)}
    for task, first, right, answer in zip(
        columns["tasks"], firsts, correct, result.answers, strict=True
    ):
        if right:
            assert answer == first
            assert task not in seen
        else:
            assert task in seen
    assert not _tasks_seen(server, "generator")  # the policy's answers are the first drafts
    summary = result.summary
    assert summary["accuracy_first"] == 0.4 and summary["accuracy_final"] == 0.8
    assert summary["transitions"]["correct->correct"] == 4
    assert summary["transitions"]["correct->incorrect"] == 0
    assert summary["stop_reasons"]["verified"] == 4
    for record, right in zip(result.records, correct, strict=True):
        assert record is not None
        assert (record["thread_id"] is None) == right  # no thread for untouched answers
        if right:
            assert record["attempts"][0]["critique"]["source"] == "caller"
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["id"] for r in logged] == [str(n) for n in range(len(firsts))]
    again = refine_batch(columns["tasks"][:2], model=_model(server), answers=firsts[:2], log=log)
    assert not again.errors
    assert len(log.read_text().splitlines()) == len(firsts) + 2  # appended, not replaced


def test_generated_drafts_that_pass_the_judge_are_never_critiqued(
    dataset: MathDataset, server: OpenAIServer
) -> None:
    columns = _columns(dataset)
    result = refine_batch(
        columns["tasks"],
        model=_model(server),
        references=columns["references"],
        ids=columns["ids"],
        concurrency=3,
    )
    critiqued = _tasks_seen(server, "critic")
    generated = _tasks_seen(server, "generator")
    for item in dataset.items:
        kind = dataset.kinds[item["id"]]
        assert generated.count(item["task"]) == 1
        assert (item["task"] in critiqued) == (kind not in ("cc", "ci")), kind
    assert result.summary["transitions"] == {
        "incorrect->correct": 4,
        "incorrect->incorrect": 2,
        "correct->correct": 4,
        "correct->incorrect": 0,
    }
    verified = [r for r in result.records if r and r["stop_reason"] == "verified"]
    assert len(verified) == 4
    assert all(
        r["iterations"] == 0
        and r["attempts"][0]["critique"]["source"] == "answer"
        and r["attempts"][0]["critique"]["verified"] is True
        for r in verified
    )


def test_bad_arguments_fail_before_any_model_call(server: OpenAIServer) -> None:
    model = _model(server)
    with pytest.raises(ConfigError, match="answers has 1 entries but tasks has 2"):
        refine_batch(["a", "b"], model=model, answers=["x"])
    with pytest.raises(ConfigError, match="wrap it in"):
        refine_batch("one task", model=model)
    with pytest.raises(ConfigError, match="ids must be unique"):
        refine_batch(["a", "b"], model=model, ids=["same", "same"])
    with pytest.raises(ConfigError, match=r"tasks\[1\] is empty"):
        refine_batch(["a", " "], model=model)
    with pytest.raises(ConfigError, match="pass answers too"):
        refine_batch(["a"], model=model, correct=[True])
    with pytest.raises(ConfigError, match="concurrency"):
        refine_batch(["a"], model=model, concurrency=0)
    with pytest.raises(ConfigError, match="human critic asks a person about every draft"):
        refine_batch(["a"], model=model, critics=["human"])  # every item would pause
    with pytest.raises(ConfigError, match="human critic"):
        refine_batch(["a"], model=model, context=RefineContext(critics=["human"]))
    assert server.chat_requests() == []


class _FailingModel(OfflineModel):
    """The offline model, except that it fails on tasks that mention 'explode'."""

    def respond(self, messages: Any) -> str:
        if "explode" in messages[-1].text:
            raise RuntimeError("the model server fell over")
        return super().respond(messages)


async def test_a_failing_item_keeps_its_answer_and_the_rest_finish() -> None:
    tasks = [
        "Write a sentence using the words: dog, park.",
        "Write a sentence using the words: explode, cake.",
        "Write a sentence using the words: cat, sofa.",
    ]
    result = await arefine_batch(
        tasks, model=_FailingModel(), answers=["a dog.", "a cake.", "a cat."]
    )
    assert list(result.errors) == [1]
    assert "fell over" in result.errors[1]
    assert result.answers[1] == "a cake."
    assert result.records[1] is None
    assert "park" in result.answers[0] and "sofa" in result.answers[2]
    assert result.summary["failed"] == 1 and result.summary["items"] == 2


async def test_the_blocking_call_works_inside_a_running_event_loop() -> None:
    result = refine_batch(["Write a sentence using the words: dog, park."], model="offline")
    assert result.records[0] is not None
    assert result.records[0]["stop_reason"] == "critic_done"
    assert "park" in result.answers[0]


def test_a_malformed_reference_fails_before_any_model_call(server: OpenAIServer) -> None:
    with pytest.raises(ConfigError, match=r"references\[1\]: reference\[\"answer\"\]"):
        refine_batch(
            ["What is 1 + 1?", "What is 2 + 2?"],
            model=_model(server),
            references=[{"answer": "2"}, {"answer": {"value": 4}}],
        )
    assert server.chat_requests() == []


def test_without_verifiers_nothing_is_judged_and_everything_is_refined(
    dataset: MathDataset, server: OpenAIServer
) -> None:
    columns = _columns(dataset)
    result = refine_batch(
        columns["tasks"], model=_model(server), references=columns["references"], verifiers=()
    )
    assert result.summary["judged"] == 0 and result.summary["accuracy_first"] is None
    assert all(r is not None and r["correct_first"] is None for r in result.records)
    assert len(set(_tasks_seen(server, "critic"))) == len(columns["tasks"])
    assert "verified" not in result.summary["stop_reasons"]
