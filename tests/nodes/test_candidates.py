"""Parallel candidates: a draft step samples N replies as `Send` branches and keeps the best."""

from __future__ import annotations

import asyncio
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
    arefine,
    refine,
)
from self_refine.models.calls import candidate_model
from self_refine.models.cancel import calls_cancelled, check_cancelled
from self_refine.models.local import LocalChatModel
from self_refine.nodes import best_candidate
from self_refine.nodes.candidates import DRAFT_TASK
from self_refine.nodes.ranking import why_kept
from self_refine.prompts.render import FRESH_INTRO
from tests.fakes import FakeChatModel, critique
from tests.nodes.candidate_runs import REFERENCE, RIGHT, TASK, concepts_graph, refined, thread


def test_a_refine_step_sends_one_branch_per_candidate_and_keeps_the_one_verified() -> None:
    model = FakeChatModel(script={"refiner": ["A dog in the park.", RIGHT, "A dog and a frisbee."]})
    graph = concepts_graph(model, candidates=3, max_iterations=2, first_verified=False)
    steps = [
        next(iter(update))
        for update in graph.stream(
            {"task": TASK, "draft": "A dog.", "reference": REFERENCE}, thread()
        )
    ]
    result = graph.get_state(thread()).values
    # each branch's reply comes in as its own task's update, before its critique's
    assert steps.count(DRAFT_TASK) == 3
    steps = [step for step in steps if step != DRAFT_TASK]
    assert steps == ["begin", "critique", "candidate", "candidate", "candidate", "pick", "finalize"]
    assert result["answer"] == RIGHT
    assert result["stop_reason"] == "verified"
    step = result["attempts"][1]
    others = sorted(step["candidates"], key=lambda c: c["draft"])
    assert [c["draft"] for c in others] == ["A dog and a frisbee.", "A dog in the park."]
    assert sorted([step["candidate"], *(c["index"] for c in others)]) == [0, 1, 2]
    # Each kept candidate is judged, and the step's usage covers all three replies.
    assert all(c["verified"] is False and c["checked"] is not None for c in others)
    assert all('Use the word "' in " ".join(c["critique"]["feedback"]) for c in others)
    assert step["usage"]["output_tokens"] == 3 * model.output_tokens
    assert len(model.requests_for("refiner")) == 3


def test_candidate_zero_edits_the_draft_and_the_others_write_afresh() -> None:
    model = FakeChatModel(script={"refiner": ["A dog in the park."]})
    refined(
        model,
        draft="A dog.",
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
    draft = messages[-1].text.split("<draft>", 1)[1].split("</draft>", 1)[0]
    return critique(["Say more."], score=0.9 if "park" in draft else 0.3)


def _by_form(messages: list[BaseMessage]) -> str:
    """Candidate 0 (the edit request) writes about a frisbee, the fresh ones about a park."""
    fresh = FRESH_INTRO in messages[-1].text
    return "A dog sleeps in the park." if fresh else "A dog chews a frisbee."


def test_when_the_verifiers_tie_the_critics_score_picks_even_a_later_candidate() -> None:
    model = FakeChatModel(script={"refiner": [_by_form], "critic": [_scored]})
    result = refine(
        TASK,
        model=model,
        draft="A dog.",
        reference={"concepts": ["dog", "cat"]},
        critics=["concepts", "llm"],
        candidates=2,
        max_iterations=1,
        strategy="refine",
    )
    step = result["attempts"][1]
    assert step["draft"] == "A dog sleeps in the park." and step["candidate"] == 1
    assert [c["draft"] for c in step["candidates"]] == ["A dog chews a frisbee."]


def _candidate(index: int, **fields: Any) -> Any:
    return {"index": index, "draft": f"reply {index}", "critique": {}, "usage": {}, **fields}


@pytest.mark.parametrize(
    ("first", "second", "why"),
    [
        # Each level decides although every later one points the other way.
        (
            {"verified": False, "checked": 0.9, "critique": {"score": 1.0}},
            {"verified": True, "checked": 0.8, "critique": {"score": 0.1}},
            "the verifiers passed it",
        ),
        (
            {"verified": False, "checked": 0.5, "critique": {"score": 1.0}},
            {"verified": False, "checked": 0.75, "critique": {"score": 0.0}},
            "the verifiers scored it higher",
        ),
        (
            {"verified": None, "checked": None, "critique": {"score": 0.2}},
            {"verified": None, "checked": None, "critique": {"score": 0.9}},
            "the critic scored it higher",
        ),
        (
            {"verified": None, "checked": None, "critique": {}},
            {"verified": None, "checked": 0.1, "critique": {}},
            "only it was scored",
        ),
    ],
)
def test_the_pick_order_verified_then_verifier_score_then_critic_score(
    first: dict[str, Any], second: dict[str, Any], why: str
) -> None:
    candidates = [_candidate(0, **first), _candidate(1, **second)]
    for order in (candidates, candidates[::-1]):
        chosen = best_candidate(order)
        assert chosen is not None and chosen["index"] == 1, why


def test_a_tie_goes_to_the_lower_index_and_a_rejected_reply_never_wins() -> None:
    tied = [_candidate(2, verified=True, checked=1.0), _candidate(1, verified=True, checked=1.0)]
    chosen = best_candidate(tied)
    assert chosen is not None and chosen["index"] == 1
    rejected = _candidate(0, draft="", verified=None, checked=None)
    chosen = best_candidate([rejected, _candidate(3, verified=False, checked=0.0)])
    assert chosen is not None and chosen["index"] == 3
    assert best_candidate([rejected]) is None


def test_when_every_candidate_is_rejected_the_previous_draft_stays() -> None:
    model = FakeChatModel(script={"refiner": ["A dog."]})
    result = refined(
        model,
        draft="A dog.",
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
    result = refined(
        model,
        candidates=3,
        max_iterations=0,
    )
    assert result["answer"] == RIGHT
    assert result["iterations"] == 0
    assert len(result["attempts"]) == 1 and len(result["attempts"][0]["candidates"]) == 2
    assert not model.requests_for("refiner")


def test_best_of_n_keeps_the_best_when_none_passes() -> None:
    model = FakeChatModel(script={"generator": ["A dog.", "A dog in the park.", "A park."]})
    result = refined(
        model,
        candidates=3,
        max_iterations=0,
    )
    assert result["answer"] == "A dog in the park."
    assert result["stop_reason"] == "max_iterations"


def test_max_iterations_zero_critiques_one_first_draft_and_stops() -> None:
    model = FakeChatModel(script={"generator": ["A dog."]})
    result = refined(model, max_iterations=0)
    assert [a["iteration"] for a in result["attempts"]] == [0]
    assert result["stop_reason"] == "max_iterations"
    assert not model.requests_for("refiner")


def test_an_empty_first_step_when_every_first_reply_is_rejected() -> None:
    model = FakeChatModel(script={"generator": [""], "refiner": [RIGHT]})
    result = refined(
        model,
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


def test_the_human_critic_is_refused_with_several_candidates_before_any_call() -> None:
    model = FakeChatModel(script={"*": ["A dog."]})
    with pytest.raises(ConfigError, match="human critic answers one draft at a time"):
        refine(TASK, model=model, critics=["human"], candidates=2, checkpointer=InMemorySaver())
    assert model.requests == []


@pytest.mark.parametrize("value", [0, 17, 1.5, True])
def test_candidates_must_be_a_whole_number_in_range(value: Any) -> None:
    with pytest.raises(ConfigError, match="candidates must be"):
        RefineContext(candidates=value)


def _right_first_then_slow(messages: list[BaseMessage]) -> str:
    """The first request is answered at once and right; the others a moment later, wrong."""
    with _CALLS_LOCK:
        _CALLS.append(1)
        first = len(_CALLS) == 1
    if first:
        return RIGHT
    time.sleep(0.5)
    return "A dog in the park."


_CALLS: list[int] = []
_CALLS_LOCK = threading.Lock()


@pytest.mark.parametrize("first_verified", [True, False])
def test_a_step_ends_at_its_first_verified_candidate_unless_asked_to_wait(
    first_verified: bool,
) -> None:
    _CALLS.clear()
    model = FakeChatModel(script={"generator": [_right_first_then_slow], "critic": ["unused"]})
    result = refine(
        TASK,
        model=model,
        reference=REFERENCE,
        critics=["concepts", "llm"],
        profile="constrained_generation",  # a word list settles its tasks
        candidates=3,
        max_iterations=0,
        first_verified=first_verified,
    )
    assert result["answer"] == RIGHT and result["stop_reason"] == "verified"
    others = result["attempts"][0]["candidates"]
    if first_verified:
        assert [c["rejected"]["reason"] for c in others] == ["stopped", "stopped"]
        assert model.requests_for("critic") == [], "no critique for a stopped candidate"
        # A draft that had come in is kept with what it cost; one never asked cost nothing.
        kept = {(c["rejected"]["reply"], c["usage"]["output_tokens"]) for c in others}
        assert kept <= {("A dog in the park.", model.output_tokens), ("", 0)}
        asked = len(model.requests_for("generator"))
        assert result["attempts"][0]["usage"]["output_tokens"] == asked * model.output_tokens
    else:
        assert all("rejected" not in c and c["verified"] is False for c in others)
        assert len(model.requests_for("critic")) == 2


async def test_an_async_step_ends_at_its_first_verified_candidate_too() -> None:
    _CALLS.clear()
    model = FakeChatModel(script={"generator": [_right_first_then_slow], "critic": ["unused"]})
    result = await arefine(
        TASK,
        model=model,
        reference=REFERENCE,
        critics=["concepts", "llm"],
        profile="constrained_generation",
        candidates=3,
        max_iterations=0,
    )
    assert result["answer"] == RIGHT
    others = result["attempts"][0]["candidates"]
    assert [c["rejected"]["reason"] for c in others] == ["stopped", "stopped"]
    assert model.requests_for("critic") == []


class _StoppedInsideTheCall(BaseChatModel):
    """A model whose first call answers right at once and whose others are stopped inside
    the call, as the local model's are (its writing ends, then the call raises)."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "stopped-inside"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        raise NotImplementedError

    async def _agenerate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.calls += 1
        if self.calls > 1:
            while not calls_cancelled():
                await asyncio.sleep(0.01)
            check_cancelled()
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=RIGHT))])


async def test_a_call_stopped_inside_an_async_model_is_a_stopped_candidate_not_an_error() -> None:
    # LangChain's async generate reads `.generations` of a BaseException raised inside
    # the model; the stop must still reach the branch as a stop.
    model = _StoppedInsideTheCall()
    result = await arefine(
        TASK,
        model=model,
        reference=REFERENCE,
        critics=["concepts"],
        candidates=3,
        max_iterations=0,
    )
    assert result["answer"] == RIGHT and result["stop_reason"] == "verified"
    others = result["attempts"][0]["candidates"]
    assert [c["rejected"]["reason"] for c in others] == ["stopped", "stopped"]


def _judged(index: int, *, verified: bool = False, checked: float = 0.5, score: float = 0.5) -> Any:
    critique = {"feedback": [], "score": score, "verified": verified}
    return {"index": index, "draft": f"draft {index}", "critique": critique, "usage": {},
            "verified": verified, "checked": checked}  # fmt: skip


def _stopped(index: int) -> Any:
    rejected = {"reason": "stopped", "reply": "", "detail": ""}
    return {"index": index, "draft": "", "critique": {}, "usage": {}, "verified": None,
            "checked": None, "rejected": rejected}  # fmt: skip


@pytest.mark.parametrize(
    ("candidates", "why"),
    [
        ([_judged(0), _judged(1, verified=True, checked=1.0), _stopped(2)],
         "the verifiers passed it first; 1 other was stopped"),
        ([_judged(0), _judged(1, verified=True, checked=1.0)],
         "the verifiers passed it, and no other"),
        ([_judged(0, checked=0.5), _judged(1, checked=0.75)],
         "the verifiers scored it highest (0.75)"),
        ([_judged(0, score=0.2), _judged(1, score=0.9)], "the critic scored it highest (0.90)"),
        ([_judged(0), _judged(1)], "it ties with candidate 1; ties go to the lower index"),
        ([_judged(0), _stopped(1)], "the only usable reply (the others were rejected)"),
    ],
)  # fmt: skip
def test_a_step_says_which_rule_kept_its_candidate(candidates: list[Any], why: str) -> None:
    kept = best_candidate(candidates)
    assert kept is not None and why_kept(kept, candidates) == why
