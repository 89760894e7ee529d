"""Every stop reason, the iteration cap, and which attempt becomes the answer."""

from __future__ import annotations

from typing import Any

import pytest

from self_refine import RefineContext, create_self_refine_graph, refine
from self_refine.stopping import (
    CriticDone,
    NoImprovement,
    ScoreThreshold,
    StopView,
    TokenBudget,
    Unchanged,
)
from tests.fakes import FakeChatModel, critique

DRAFTS = [f"draft {n}" for n in range(8)]


def scripted(*critiques: dict[str, Any], refiner: list[Any] | None = None) -> FakeChatModel:
    """A model whose critic says `critiques` in order, writing "draft 0", "draft 1", ..."""
    return FakeChatModel(
        script={
            "generator": [DRAFTS[0]],
            "critic": list(critiques),
            "refiner": refiner if refiner is not None else DRAFTS[1:],
        }
    )


def drafts_of(result: Any) -> list[str]:
    return [attempt["draft"] for attempt in result["attempts"]]


def test_critic_done_stops_the_loop() -> None:
    model = scripted(critique(["Add a title."], score=0.5), critique(score=0.9, done=True))
    result = refine("task", model=model, max_iterations=5)
    assert result["stop_reason"] == "critic_done"
    assert result["iterations"] == 1
    assert drafts_of(result) == ["draft 0", "draft 1"]
    assert result["answer"] == "draft 1"
    assert len(model.requests_for("refiner")) == 1


def test_score_threshold_stops_at_or_above_the_threshold() -> None:
    model = scripted(
        critique(["a"], score=0.3), critique(["b"], score=0.79), critique(["c"], score=0.8)
    )
    result = refine("task", model=model, max_iterations=5, score_threshold=0.8)
    assert result["stop_reason"] == "score_threshold"
    assert result["iterations"] == 2
    assert result["score"] == 0.8
    assert result["answer"] == "draft 2"


def test_no_improvement_stops_after_patience_rounds_without_a_better_score() -> None:
    model = scripted(
        critique(["a"], score=0.5),
        critique(["b"], score=0.6),
        critique(["c"], score=0.55),
        critique(["d"], score=0.6),
    )
    result = refine("task", model=model, max_iterations=6, patience=2)
    assert result["stop_reason"] == "no_improvement"
    assert result["iterations"] == 3
    assert result["answer"] == "draft 1", "ties go to the earlier attempt"
    assert result["best"] is not None and result["best"]["iteration"] == 1


def test_unchanged_stops_when_the_refiner_returns_the_same_draft() -> None:
    model = scripted(critique(["Say more."], score=0.4), refiner=["  draft 0  "])
    result = refine("task", model=model, max_iterations=5)
    assert result["stop_reason"] == "unchanged"
    assert result["iterations"] == 1
    assert len(model.requests_for("critic")) == 1, "an unchanged draft is not critiqued again"


def test_max_iterations_caps_the_loop_whatever_the_critic_says() -> None:
    model = scripted(critique(["Never good enough."], score=0.1))
    result = refine("task", model=model, max_iterations=2)
    assert result["stop_reason"] == "max_iterations"
    assert result["iterations"] == 2
    assert drafts_of(result) == ["draft 0", "draft 1", "draft 2"]
    assert len(model.requests_for("refiner")) == 2
    assert len(model.requests_for("critic")) == 3


def test_default_cap_is_three_refine_steps() -> None:
    result = refine("task", model=scripted(critique(["x"], score=0.1)))
    assert (result["stop_reason"], result["iterations"]) == ("max_iterations", 3)


def test_cap_holds_with_an_empty_custom_policy_list() -> None:
    model = scripted(critique(score=1.0, done=True))
    result = refine("task", model=model, stop=[], max_iterations=2)
    assert result["stop_reason"] == "max_iterations", "stop=[] drops critic_done, not the cap"
    assert result["iterations"] == 2


def test_first_matching_policy_names_the_reason() -> None:
    verdict = critique(score=0.9, done=True)
    threshold_first = refine(
        "task", model=scripted(verdict), stop=[ScoreThreshold(0.5), CriticDone()]
    )
    done_first = refine("task", model=scripted(verdict), stop=[CriticDone(), ScoreThreshold(0.5)])
    assert threshold_first["stop_reason"] == "score_threshold"
    assert done_first["stop_reason"] == "critic_done"


def test_critic_done_wins_over_the_cap_at_the_last_iteration() -> None:
    model = scripted(critique(["x"], score=0.2), critique(score=1.0, done=True))
    result = refine("task", model=model, max_iterations=1)
    assert (result["stop_reason"], result["iterations"]) == ("critic_done", 1)


def test_a_single_policy_callable_is_accepted() -> None:
    model = scripted(critique(["x"], score=0.2), refiner=["draft 0"])
    result = refine("task", model=model, stop=Unchanged(), max_iterations=4)
    assert result["stop_reason"] == "unchanged"


def test_token_budget_stops_when_the_budget_is_spent() -> None:
    model = scripted(critique(["x"], score=0.2))
    # Each fake call costs 15 tokens: generate + critique = 30, each round adds 30.
    result = refine("task", model=model, stop=[TokenBudget(60)], max_iterations=5)
    assert result["stop_reason"] == "token_budget"
    assert result["usage"]["total_tokens"] == 60
    assert result["iterations"] == 1


def test_policy_objects_reject_bad_settings() -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        ScoreThreshold(1.5)
    with pytest.raises(ValueError, match="patience must be >= 1"):
        NoImprovement(0)


class TestAnswerSelection:
    SCORES = (0.4, 0.8, 0.6)

    def model(self, *scores: float | None) -> FakeChatModel:
        return scripted(*(critique([f"fix {n}"], score=s) for n, s in enumerate(scores)))

    def test_best_scoring_attempt_is_the_answer(self) -> None:
        result = refine("task", model=self.model(*self.SCORES), max_iterations=2)
        assert result["answer"] == "draft 1"
        assert result["score"] == 0.8
        assert result["best"] is not None and result["best"]["draft"] == "draft 1"
        assert result["last"] is not None and result["last"]["draft"] == "draft 2"
        assert result["stop_reason"] == "max_iterations"

    def test_select_last_forces_the_last_attempt(self) -> None:
        result = refine("task", model=self.model(*self.SCORES), max_iterations=2, select="last")
        assert result["answer"] == "draft 2"
        assert result["score"] == 0.6
        assert result["best"] is not None and result["best"]["draft"] == "draft 1"

    def test_ties_go_to_the_earlier(self) -> None:
        # A later draft must score higher to be preferred: growth never wins a tie.
        result = refine("task", model=self.model(0.7, 0.7, 0.5), max_iterations=2)
        assert result["answer"] == "draft 0"

    def test_without_scores_the_last_attempt_is_the_answer(self) -> None:
        result = refine("task", model=self.model(None, None, None), max_iterations=2)
        assert result["answer"] == "draft 2"
        assert result["score"] is None

    def test_select_can_be_chosen_per_run(self) -> None:
        graph = create_self_refine_graph(
            self.model(*self.SCORES), settings=RefineContext(max_iterations=2)
        ).compile()
        # A dict names the settings it changes: the graph's two iterations hold.
        result = graph.invoke({"task": "task"}, context={"select": "last"})
        assert result["answer"] == "draft 2"


def test_output_carries_every_attempt_and_token_totals() -> None:
    model = scripted(critique(["a"], score=0.2), critique(score=1.0, done=True))
    result = refine("task", model=model)
    assert set(result) >= {
        "answer",
        "best",
        "last",
        "attempts",
        "iterations",
        "stop_reason",
        "score",
        "usage",
    }
    assert [a["iteration"] for a in result["attempts"]] == [0, 1]
    assert result["attempts"][0]["critique"] == {
        "feedback": ["a"],
        "score": 0.2,
        "done": False,
        "source": "llm",
        "verified": None,
    }
    # generate, critique, refine, critique: four calls of 10 + 5 tokens.
    assert result["usage"] == {"input_tokens": 40, "output_tokens": 20, "total_tokens": 60}
    assert result["attempts"][0]["usage"]["total_tokens"] == 30


def test_an_empty_rewrite_is_retried_once_then_counts_as_unchanged() -> None:
    model = scripted(critique(["Say more."], score=0.4), refiner=["", "   "])
    result = refine("task", model=model, max_iterations=5)
    assert result["stop_reason"] == "unchanged"
    assert drafts_of(result) == ["draft 0", "draft 0"]
    assert len(model.requests_for("refiner")) == 2


def test_an_empty_first_draft_is_asked_for_again() -> None:
    model = FakeChatModel(
        script={"generator": ["", "draft 0"], "critic": [critique(score=1.0, done=True)]}
    )
    result = refine("task", model=model)
    assert result["answer"] == "draft 0"
    assert len(model.requests_for("generator")) == 2


def test_unchanged_passes_over_a_step_of_a_tree() -> None:
    """A step of a run that samples or searches whose best draft is one the run had is no
    end (another branch may do better); the policy says so itself, for every strategy's
    policies are the same."""
    usage: Any = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    first: Any = {"iteration": 0, "draft": "same", "critique": {}, "usage": usage}
    again: Any = {**first, "iteration": 1}
    assert Unchanged()(StopView([first, again], 1, usage)) == "unchanged"
    node: Any = {**again, "node": 3, "parent": None}
    assert Unchanged()(StopView([first, node], 1, usage)) is None
    rejected: Any = {**again, "candidates": [{"index": 0, "node": 4, "draft": ""}]}
    assert Unchanged()(StopView([first, rejected], 1, usage)) is None  # every reply rejected
