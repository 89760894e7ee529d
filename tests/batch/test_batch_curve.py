"""A batch's per-step curve picks each step's answer as the run itself picked its answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from self_refine import arefine_batch
from self_refine.nodes.ranking import best_attempt
from self_refine.state import Critique
from tests.fakes import FakeChatModel

TASK = "A box holds 15 cookies. Ben buys 3 boxes and eats 5. How many cookies are left?"
ANSWERS = ["40", "40", "35"]  # the vote says 40 (right); the last draft says 35 (wrong)


def _model(answers: Sequence[str] = ANSWERS) -> FakeChatModel:
    """Drafts stating `answers` in turn; no critic is scripted (none is asked)."""
    stated = iter(answers)

    def draft(messages: Sequence[BaseMessage]) -> str:
        return f"15 times 3, less the 5 eaten. The answer is {next(stated)}."

    return FakeChatModel(script={"generator": [draft]})


def _says_40(task: str, draft: str, reference: Any) -> Critique:
    """The batch's judge: the key stays out of the run, so nothing in the run checks drafts."""
    right = draft.rstrip(".").endswith("40")
    return Critique(feedback=[] if right else ["The answer is not 40."], done=right)


async def _default_run(model: FakeChatModel, **settings: Any) -> Any:
    """A batch of TASK with the default strategy, judged by `_says_40`, two refine steps."""
    return await arefine_batch(
        [TASK],
        model=model,
        verifiers=[_says_40],
        refine_only_incorrect=False,
        profile="math",
        max_iterations=2,
        **settings,
    )


async def test_a_run_that_took_the_vote_by_default_draws_its_curve_by_the_vote() -> None:
    model = _model()
    result = await _default_run(model)
    record = result.records[0]
    assert record is not None
    # No verifier of the run could judge, no critic was named: "auto" took the vote.
    assert {sent.role for sent in model.requests} == {"generator"}
    assert record["answer"].endswith("The answer is 40.")
    assert [a["correct"] for a in record["attempts"]] == [True, True, False]
    # "best" over unscored drafts would take the last one, which is wrong.
    chosen = best_attempt(record["attempts"])
    assert chosen is not None and chosen["correct"] is False
    assert record["correct_final"] is True
    assert record["correct_at"] == [True, True, True]
    assert result.summary["accuracy_by_iteration"][-1] == result.summary["accuracy_final"] == 1.0


async def _vote_over_candidates(answers: list[str]) -> dict[str, Any]:
    """The record of a default run of three steps of three drafts stating `answers` in turn."""
    model = _model(answers)
    result = await _default_run(model, candidates=3, concurrency=1)
    record = result.records[0]
    assert record is not None
    assert len(model.requests) == 9 and {sent.role for sent in model.requests} == {"generator"}
    return record


def _kept(record: dict[str, Any]) -> list[str]:
    """The answer each step's kept draft states (the step's first: nothing scores them)."""
    return [a["draft"][-3:-1] for a in record["attempts"]]


async def test_a_vote_over_candidates_draws_its_curve_from_every_draft_as_the_run_does() -> None:
    # Each step keeps a draft saying 35, beside two saying 40: the run's vote counts every
    # draft, so it answers 40, and so does each step's point of the curve.
    record = await _vote_over_candidates(["35", "40", "40"] * 3)
    assert _kept(record) == ["35", "35", "35"]
    assert record["answer"].endswith("The answer is 40.") and record["correct_final"] is True
    assert record["correct_at"] == [True, True, True]


async def test_a_step_s_answer_that_only_a_candidate_states_is_judged_too() -> None:
    # After the first step the vote says 35, stated by two drafts the step did not keep.
    record = await _vote_over_candidates(["41", "35", "35", *["40"] * 6])
    assert _kept(record) == ["41", "40", "40"]
    assert record["correct_final"] is True
    assert record["correct_at"] == [False, True, True]
