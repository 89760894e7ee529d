"""Parallel candidates: a draft step samples N replies as `Send` branches and keeps the best."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver

from self_refine import (
    ConfigError,
    RefineContext,
    arefine_batch,
    create_self_refine_graph,
    refine,
)
from self_refine.models.calls import candidate_model
from self_refine.models.local import LocalChatModel
from self_refine.nodes import best_candidate
from self_refine.prompts.render import FRESH_INTRO
from tests.fakes import FakeChatModel, critique, role_of

TASK = "Write about a day out using the words: dog, frisbee, park."
REFERENCE = {"concepts": ["dog", "frisbee", "park"]}
RIGHT = "A dog catches a frisbee in the park."


def _graph(model: Any, **settings: Any) -> Any:
    context = RefineContext(critics=("concepts",), **settings)
    return create_self_refine_graph(model, settings=context).compile(checkpointer=InMemorySaver())


def _config(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


def test_a_refine_step_sends_one_branch_per_candidate_and_keeps_the_one_verified() -> None:
    model = FakeChatModel(script={"refiner": ["A dog in the park.", RIGHT, "A dog and a frisbee."]})
    graph = _graph(model, candidates=3, max_iterations=2)
    steps = [
        next(iter(update))
        for update in graph.stream(
            {"task": TASK, "draft": "A dog.", "reference": REFERENCE}, _config()
        )
    ]
    result = graph.get_state(_config()).values
    assert steps == ["begin", "critique", "candidate", "candidate", "candidate", "pick", "finalize"]
    assert result["answer"] == RIGHT
    assert result["stop_reason"] == "verified"
    step = result["attempts"][1]
    others = sorted(c["draft"] for c in step["candidates"])
    assert others == ["A dog and a frisbee.", "A dog in the park."]
    assert step["candidate"] not in {c["index"] for c in step["candidates"]}
    assert len(model.requests_for("refiner")) == 3


def test_candidate_zero_edits_the_draft_and_the_others_write_afresh() -> None:
    model = FakeChatModel(script={"refiner": ["A dog in the park."]})
    refine(
        TASK,
        model=model,
        draft="A dog.",
        reference=REFERENCE,
        critics=["concepts"],
        candidates=3,
        max_iterations=1,
    )
    sent = model.requests_for("refiner")
    edits = [s for s in sent if any(m.text == "A dog." for m in s.messages)]
    fresh = [s for s in sent if FRESH_INTRO in s.prompt and "A dog." not in s.prompt]
    assert len(edits) == 1 and len(fresh) == 2
    assert fresh[0].messages == fresh[1].messages
    assert 'Use the word "frisbee".' in fresh[0].prompt and TASK in fresh[0].prompt


def _scored(messages: list[BaseMessage]) -> dict[str, Any]:
    """A critic that likes parks better than frisbees: the score depends on the draft."""
    draft = messages[-1].text
    return critique(["Say more."], score=0.9 if "park" in draft else 0.3)


def test_when_the_verifiers_tie_the_critics_score_picks() -> None:
    model = FakeChatModel(
        script={
            "refiner": ["A dog sleeps in the park.", "A dog chews a frisbee."],
            "critic": [_scored],
        }
    )
    result = refine(
        TASK,
        model=model,
        draft="A dog.",
        reference={"concepts": ["dog", "cat"]},
        critics=["concepts", "llm"],
        candidates=2,
        max_iterations=1,
    )
    assert result["attempts"][1]["draft"] == "A dog sleeps in the park."


def test_a_candidate_the_verifiers_score_higher_wins_over_a_critics_praise() -> None:
    first = {"index": 0, "draft": "a", "critique": {"score": 1.0}, "usage": {}}
    second = {"index": 1, "draft": "b", "critique": {"score": 0.2}, "usage": {}}
    chosen = best_candidate(
        [{**first, "verified": False, "checked": 0.5}, {**second, "verified": True, "checked": 1.0}]  # type: ignore[list-item]
    )
    assert chosen is not None and chosen["draft"] == "b"
    tied = best_candidate(
        [
            {**first, "verified": None, "checked": None},
            {**second, "verified": None, "checked": None},
        ]  # type: ignore[list-item]
    )
    assert tied is not None and tied["draft"] == "a"


def test_when_every_candidate_is_rejected_the_previous_draft_stays() -> None:
    model = FakeChatModel(script={"refiner": ["A dog."]})
    result = refine(
        TASK,
        model=model,
        draft="A dog.",
        reference=REFERENCE,
        critics=["concepts"],
        candidates=3,
        max_iterations=2,
    )
    step = result["attempts"][1]
    assert step["draft"] == "A dog."
    assert "candidate" not in step
    assert [c["rejected"]["reason"] for c in step["candidates"]] == ["unchanged"] * 3
    assert result["stop_reason"] == "unchanged"


def test_best_of_n_samples_the_first_draft_n_times_and_never_refines() -> None:
    model = FakeChatModel(script={"generator": ["A dog.", RIGHT, "A park."]})
    result = refine(
        TASK,
        model=model,
        reference=REFERENCE,
        critics=["concepts"],
        candidates=3,
        max_iterations=0,
    )
    assert result["answer"] == RIGHT
    assert result["iterations"] == 0
    assert len(result["attempts"]) == 1 and len(result["attempts"][0]["candidates"]) == 2
    assert not model.requests_for("refiner")


def test_best_of_n_keeps_the_best_when_none_passes() -> None:
    model = FakeChatModel(script={"generator": ["A dog.", "A dog in the park.", "A park."]})
    result = refine(
        TASK,
        model=model,
        reference=REFERENCE,
        critics=["concepts"],
        candidates=3,
        max_iterations=0,
    )
    assert result["answer"] == "A dog in the park."
    assert result["stop_reason"] == "max_iterations"


def test_max_iterations_zero_critiques_one_first_draft_and_stops() -> None:
    model = FakeChatModel(script={"generator": ["A dog."]})
    result = refine(TASK, model=model, reference=REFERENCE, critics=["concepts"], max_iterations=0)
    assert [a["iteration"] for a in result["attempts"]] == [0]
    assert result["stop_reason"] == "max_iterations"
    assert not model.requests_for("refiner")


def test_an_empty_first_step_when_every_first_reply_is_rejected() -> None:
    model = FakeChatModel(script={"generator": [""], "refiner": [RIGHT]})
    result = refine(
        TASK,
        model=model,
        reference=REFERENCE,
        critics=["concepts"],
        candidates=2,
        max_iterations=1,
    )
    assert result["attempts"][0]["draft"] == ""
    assert result["attempts"][0]["critique"]["feedback"]
    assert result["answer"] == RIGHT


def test_candidate_zero_is_the_model_as_it_is_and_the_others_are_draws_of_their_own() -> None:
    model = LocalChatModel(model_path="unused.gguf", temperature=0.2, seed=0)
    config: Any = {"metadata": {"iteration": 1}}
    assert candidate_model(model, 0, config) is model
    drawn = [candidate_model(model, index, config).kwargs for index in (1, 2)]
    assert all(kwargs["temperature"] > 0.2 for kwargs in drawn)
    assert drawn[0]["seed"] != drawn[1]["seed"]


class _Gauge(BaseChatModel):
    """Replies after a pause, counting how many of its calls are in flight at most."""

    in_flight: int = 0
    most: int = 0

    @property
    def _llm_type(self) -> str:
        return "gauge"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise AssertionError("only async calls are expected")

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0.05)
        self.in_flight -= 1
        text = json.dumps(critique(score=0.5)) if role_of(messages) == "critic" else "A dog."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


async def test_a_batchs_call_limit_counts_every_candidates_call() -> None:
    model = _Gauge()
    await arefine_batch(
        [TASK, TASK], model=model, concurrency=2, candidates=4, max_iterations=0, critics=["llm"]
    )
    assert model.most == 2


def test_the_human_critic_is_refused_with_several_candidates() -> None:
    with pytest.raises(ConfigError, match="human critic answers one draft at a time"):
        refine(TASK, model="offline", critics=["human"], candidates=2)


@pytest.mark.parametrize("value", [0, 17, 1.5, True])
def test_candidates_must_be_a_whole_number_in_range(value: Any) -> None:
    with pytest.raises(ConfigError, match="candidates must be"):
        RefineContext(candidates=value)


def test_a_failed_branch_is_asked_again_on_resume_and_the_finished_ones_are_not() -> None:
    calls: list[str] = []
    failed = threading.Event()

    def reply(messages: list[BaseMessage]) -> Any:
        calls.append("refiner")
        if not failed.is_set():
            failed.set()
            time.sleep(0.5)  # the other branches finish, and are saved, first
            return RuntimeError("the server went away")
        return "A dog in the park."

    model = FakeChatModel(script={"refiner": [reply]})
    graph = _graph(model, candidates=3, max_iterations=1)
    with pytest.raises(RuntimeError, match="went away"):
        graph.invoke({"task": TASK, "draft": "A dog.", "reference": REFERENCE}, _config())
    assert len(calls) == 3
    result = graph.invoke(None, _config())
    assert len(calls) == 4
    assert len(result["attempts"][1]["candidates"]) == 2
