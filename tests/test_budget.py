"""Budgets that hold: a step starts only if what a reply of it is expected to cost fits in
what is left of `max_tokens_total`, so a run overshoots its budget by one reply at most."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from self_refine import RefineContext, Roles, create_self_refine_graph
from self_refine.state import Attempt
from self_refine.stopping import (
    StopView,
    TokenBudget,
    critique_cost,
    critique_short,
    reply_cost,
    step_width,
)
from tests.fakes import FakeChatModel, critique

TASK = "Write one sentence that uses the words: lamp, storm, gull, rope."


def _attempt(iteration: int, tokens: int, candidates: int = 0) -> Attempt:
    others: list[Any] = [{"usage": {"total_tokens": 0}}] * candidates
    usage: Any = {"input_tokens": 0, "output_tokens": 0, "total_tokens": tokens}
    return {
        "iteration": iteration,
        "draft": "d",
        "critique": {},
        "usage": usage,
        "candidates": others,
    }


def test_a_reply_costs_what_a_reply_of_the_later_steps_cost_else_the_first_steps() -> None:
    assert reply_cost([]) is None
    assert reply_cost([_attempt(0, 448)]) == 448
    # A step of four candidates that cost 400 in all: 100 a reply; the first step's 448
    # no longer counts once a later step says what a later reply costs.
    assert reply_cost([_attempt(0, 448), _attempt(1, 400, candidates=3)]) == 100
    assert reply_cost([_attempt(0, 448), _attempt(1, 400, 3), _attempt(2, 600)]) == 200


def test_a_step_is_as_wide_as_the_budget_left_holds() -> None:
    assert step_width(8, None, 10_000, 100.0) == 8  # no budget: every candidate
    assert step_width(8, 1000, 0, None) == 1  # nothing written yet: one reply, cost unknown
    assert step_width(8, 1000, 300, 100.0) == 7
    assert step_width(8, 1000, 300, 50.0) == 8
    assert step_width(8, 1000, 900, 100.0) == 1
    assert step_width(8, 1000, 990, 100.0) == 0  # not even one fits


def test_a_critique_is_expected_to_cost_what_the_run_s_critiques_cost_else_the_draft() -> None:
    first: Any = {**_attempt(0, 448), "critique_usage": {"total_tokens": 248}}
    verified: Any = {**_attempt(1, 325), "critique_usage": {"total_tokens": 0}}
    assert critique_cost([]) is None and critique_cost([_attempt(0, 448)]) is None
    assert critique_cost([first, verified]) == 248  # a verifier's free verdict says nothing
    assert critique_short(None, -5, 200, None) is None  # no budget: always asked
    assert critique_short(1000, 200, 200, None) is None  # before any: about the draft's 200
    why = critique_short(1000, 199, 200, None)
    assert why is not None and "199 tokens" in why and "about 200 tokens" in why
    assert critique_short(1000, 247, 200, 248.0) is not None
    assert critique_short(1000, 0, 0, None) is None  # a given draft: nothing to estimate from


def test_the_budget_policy_stops_when_not_one_more_reply_fits() -> None:
    usage: Any = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 448}
    policy = TokenBudget(600)
    assert policy(StopView([_attempt(0, 448)], 0, usage)) == "token_budget"  # 152 left
    assert TokenBudget(896)(StopView([_attempt(0, 448)], 0, usage)) is None  # one fits
    assert TokenBudget(900)(StopView([_attempt(0, 448)], 0, usage)) is None  # 452 left


def _costed_graph() -> tuple[Any, FakeChatModel, FakeChatModel]:
    """A first draft of 200 tokens, critiques of 248, refinements of 325."""
    writer = FakeChatModel(
        script={"generator": ["The lamp in the storm."]}, input_tokens=180, output_tokens=20
    )
    critic = FakeChatModel(
        script={"critic": [critique(["Add the gull and the rope."], score=0.3)]},
        input_tokens=200,
        output_tokens=48,
    )
    refiner = FakeChatModel(
        script={"refiner": ["A gull on a rope."]}, input_tokens=300, output_tokens=25
    )
    graph = create_self_refine_graph(writer, roles=Roles(critic=critic, refiner=refiner))
    return graph.compile(), critic, refiner


def test_the_reported_run_stops_before_a_refine_step_it_cannot_pay_for() -> None:
    """The run the issue reports: 600 tokens, 8 candidates, the refine strategy; the first
    step (draft and critique) cost 448, and with 152 left a refine step of 573 (refine
    request and critique) started anyway, 1,021 in all."""
    graph, _, refiner = _costed_graph()
    settings = RefineContext(max_tokens_total=600, candidates=8, critics=("llm",))
    result = graph.invoke({"task": TASK}, context=settings)

    assert [a["usage"]["total_tokens"] for a in result["attempts"]] == [448]
    assert result["stop_reason"] == "token_budget"
    assert result["usage"]["total_tokens"] == 448
    assert refiner.requests == []  # the refine step it could not pay for never started


def test_the_quality_guide_and_the_budget_page_state_the_rule_the_library_applies() -> None:
    """Both name the expected cost of a reply (`reply_cost`, not the mean of every reply so
    far) and say that a step whose reply would not fit is not started."""
    from benchmarks.quality.budget_page import markdown

    document: dict[str, Any] = {
        "model": {"name": "m", "model": "m"},
        "date": "2026-11-28",
        "command": "python -m benchmarks.quality.spend",
        "machine": {"cores": 2, "python": "3.12"},
        "budgets": [1, 2, 4, 8],
        "max_tokens": 256,
        "candidates": 3,
        "resamples": 10_000,
        "seed": 0,
        "results": {},
    }
    page = markdown(document)
    guide = (Path(__file__).parents[1] / "docs" / "guides" / "quality.md").read_text()
    row = next(line for line in guide.splitlines() if line.startswith("| `refine+candidates` |"))
    for text in (page, row):
        assert "`reply_cost`" in text
        assert "a step starts only when one reply fits" in text
        assert "mean cost of a reply so far" not in text


def _unchanged_refiner(budget: int) -> tuple[dict[str, Any], FakeChatModel]:
    """A first step of 30 tokens; each refiner reply costs 40 and is the draft unchanged."""
    writer = FakeChatModel(script={"generator": ["The lamp."]})
    critic = FakeChatModel(script={"critic": [critique(["Use the word storm."], score=0.3)]})
    refiner = FakeChatModel(script={"refiner": ["The lamp."]}, input_tokens=30, output_tokens=10)
    graph = create_self_refine_graph(writer, roles=Roles(critic=critic, refiner=refiner))
    settings = RefineContext(max_tokens_total=budget, critics=("llm",), strategy="refine")
    return graph.compile().invoke({"task": TASK}, context=settings), refiner


def test_a_rejected_refine_reply_is_asked_again_only_when_the_budget_holds_another() -> None:
    short, refiner = _unchanged_refiner(100)  # 30 + 40 spent; another 40 would make 110
    assert len(refiner.requests) == 1
    (problem,) = short["attempts"][1]["problems"]
    assert problem.endswith("the previous draft was kept (no budget left to ask again)")
    assert short["usage"]["total_tokens"] == 70
    enough, refiner = _unchanged_refiner(110)
    assert len(refiner.requests) == 2
    assert enough["attempts"][1]["problems"][-1].endswith("the previous draft was kept")


def test_a_budget_of_about_one_draft_answers_the_draft_without_critiquing_it() -> None:
    graph, critic, _ = _costed_graph()
    settings = RefineContext(max_tokens_total=300, critics=("llm",), strategy="refine")
    result = graph.invoke({"task": TASK}, context=settings)

    assert critic.requests == []  # 100 tokens left cannot hold a critique of about 200
    assert result["stop_reason"] == "token_budget"
    assert result["answer"] == "The lamp in the storm."
    assert result["usage"]["total_tokens"] == 200
    (attempt,) = result["attempts"]
    assert attempt["critique"]["feedback"] == [
        "The critic was not asked: the token budget left, 100 tokens, "
        "cannot hold a critique of about 200 tokens."
    ]
    assert attempt["critique"]["score"] is None and attempt["critique"]["source"] == "budget"


async def test_the_free_checks_still_judge_a_draft_the_critic_is_not_asked_about() -> None:
    graph, critic, _ = _costed_graph()
    settings = RefineContext(max_tokens_total=300, critics=("concepts", "llm"), strategy="refine")
    reference = {"concepts": ["lamp", "storm", "gull", "rope"]}
    result = await graph.ainvoke({"task": TASK, "reference": reference}, context=settings)

    assert critic.requests == [] and result["stop_reason"] == "token_budget"
    judged = result["attempts"][0]["critique"]
    assert judged["verified"] is False  # the words verifier ran: it costs no tokens
    assert judged["source"] == "concepts+budget"
    assert any(item.startswith("[concepts]") and "gull" in item for item in judged["feedback"])
    assert judged["feedback"][-1].startswith("[budget] The critic was not asked")


def test_an_unjudged_refinement_does_not_outrank_the_scored_draft_before_it() -> None:
    """900 tokens: the first step costs 448 (draft and critique), and with 452 left a
    refinement (about 448) starts; it costs 325, and the 127 left cannot hold a critique of
    about 248 (the run's critiques so far), so it is not critiqued: the scored first draft
    answers, not the unjudged one that came last."""
    graph, critic, _ = _costed_graph()
    settings = RefineContext(max_tokens_total=900, critics=("llm",), strategy="refine")
    result = graph.invoke({"task": TASK}, context=settings)

    assert len(critic.requests) == 1
    assert result["stop_reason"] == "token_budget"
    assert [a["draft"] for a in result["attempts"]] == [
        "The lamp in the storm.",
        "A gull on a rope.",
    ]
    assert "about 248 tokens" in result["attempts"][1]["critique"]["feedback"][0]
    assert result["answer"] == "The lamp in the storm."
    assert result["usage"]["total_tokens"] == 448 + 325
    last = graph.invoke({"task": TASK}, context=dataclasses.replace(settings, select="last"))
    assert last["answer"] == "A gull on a rope."


async def test_a_sampling_run_does_not_critique_a_sample_it_cannot_pay_to_critique() -> None:
    graph, critic, _ = _costed_graph()
    settings = RefineContext(max_tokens_total=300, critics=("llm",), strategy="sample")
    result = await graph.ainvoke({"task": TASK}, context=settings)

    assert critic.requests == [] and result["stop_reason"] == "token_budget"
    assert result["answer"] == "The lamp in the storm."
    assert result["attempts"][0]["critique"]["source"] == "budget"


def test_a_critique_that_fits_is_asked_and_its_cost_kept_apart() -> None:
    graph, critic, _ = _costed_graph()
    settings = RefineContext(max_tokens_total=400, critics=("llm",), strategy="refine")
    result = graph.invoke({"task": TASK}, context=settings)  # 200 left holds about 200

    assert len(critic.requests) == 1
    assert result["attempts"][0]["critique_usage"]["total_tokens"] == 248
    assert result["attempts"][0]["usage"]["total_tokens"] == 448
