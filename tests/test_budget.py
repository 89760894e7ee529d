"""Budgets that hold: a step starts only if what a reply of it is expected to cost fits in
what is left of `max_tokens_total`, so a run overshoots its budget by one reply at most."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from self_refine import RefineContext, Roles, create_self_refine_graph
from self_refine.state import Attempt
from self_refine.stopping import StopView, TokenBudget, reply_cost, step_width
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


def test_the_budget_policy_stops_when_not_one_more_reply_fits() -> None:
    usage: Any = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 448}
    policy = TokenBudget(600)
    assert policy(StopView([_attempt(0, 448)], 0, usage)) == "token_budget"  # 152 left
    assert TokenBudget(896)(StopView([_attempt(0, 448)], 0, usage)) is None  # one fits
    assert TokenBudget(900)(StopView([_attempt(0, 448)], 0, usage)) is None  # 452 left


def test_the_reported_run_stops_before_a_refine_step_it_cannot_pay_for() -> None:
    """The run the issue reports: 600 tokens, 8 candidates, the refine strategy; the first
    step (draft and critique) cost 448, and with 152 left a refine step of 573 (refine
    request and critique) started anyway, 1,021 in all."""
    writer = FakeChatModel(script={"generator": ["The lamp."]}, input_tokens=180, output_tokens=20)
    critic = FakeChatModel(
        script={"critic": [critique(["Use the word storm."], score=0.3)]},
        input_tokens=200,
        output_tokens=48,
    )
    refiner = FakeChatModel(
        script={"refiner": ["The lamp in the storm."]}, input_tokens=300, output_tokens=25
    )
    graph = create_self_refine_graph(writer, roles=Roles(critic=critic, refiner=refiner))
    settings = RefineContext(max_tokens_total=600, candidates=8, critics=("llm",))
    result = graph.compile().invoke({"task": TASK}, context=settings)

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
