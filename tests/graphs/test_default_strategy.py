"""The default strategy: "auto" becomes, once per run, the one the run's checks call for."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from self_refine import RefineContext, create_self_refine_graph
from tests.fakes import FakeChatModel, critique

TASK = "Write one sentence that uses all of these words: train, river."
REFERENCE = {"concepts": ["train", "river"]}
WRONG = "A train went by."  # misses "river": the concepts verifier fails it


def _model() -> FakeChatModel:
    return FakeChatModel(
        script={
            "generator": [WRONG],
            "refiner": [WRONG],
            "critic": [critique(["Mention the river."], score=0.5)],
        }
    )


def _drafts(result: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for attempt in result["attempts"]:
        found += [attempt, *attempt.get("candidates", [])]
    return found


def test_a_run_whose_verifier_can_judge_samples_fresh_drafts_and_keeps_that() -> None:
    model = _model()
    graph = create_self_refine_graph(model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    context = {"critics": ["concepts", "llm"], "max_iterations": 2}
    result = graph.invoke({"task": TASK, "reference": REFERENCE}, config, context=context)
    assert graph.get_state(config).values["run_context"]["strategy"] == "sample"
    assert len(_drafts(result)) == 3  # the first draft and one fresh draft per step
    assert all(d.get("parent") is None for d in _drafts(result))
    assert "refiner" not in {sent.role for sent in model.requests}


def test_a_run_the_llm_critic_alone_judges_takes_the_refine_loop() -> None:
    model = _model()
    graph = create_self_refine_graph(model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    # No reference: the concepts verifier has nothing to check, the critic alone judges.
    context = {"critics": ["concepts", "llm"], "max_iterations": 1}
    graph.invoke({"task": TASK}, config, context=context)
    assert graph.get_state(config).values["run_context"]["strategy"] == "refine"
    assert [sent.role for sent in model.requests].count("generator") == 1
    assert "refiner" in {sent.role for sent in model.requests}


def test_the_offline_stand_in_refines_and_a_vote_samples() -> None:
    from self_refine.context import DEFAULT_STRATEGY

    parts = create_self_refine_graph("offline").parts
    assert (
        parts.strategy_for(RefineContext(critics=["concepts"]), REFERENCE)
        == (DEFAULT_STRATEGY["offline"])
    )
    voting = RefineContext(model="openai:m", profile="math", select="vote")
    assert parts.strategy_for(voting, None) == DEFAULT_STRATEGY["vote"]


def test_a_named_strategy_is_kept_as_named() -> None:
    model = _model()
    graph = create_self_refine_graph(model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    context = {"critics": ["concepts", "llm"], "max_iterations": 1, "strategy": "refine"}
    graph.invoke({"task": TASK, "reference": REFERENCE}, config, context=context)
    assert graph.get_state(config).values["run_context"]["strategy"] == "refine"
    assert "refiner" in {sent.role for sent in model.requests}


def test_a_continuation_that_says_auto_keeps_the_strategy_its_run_took() -> None:
    graph = create_self_refine_graph(_model()).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    context = {"critics": ["concepts", "llm"], "max_iterations": 2}
    graph.invoke(
        {"task": TASK, "reference": REFERENCE}, config, context=context, interrupt_before=["pick"]
    )
    # What a form that shows every field sends back: "auto", the default.
    result = graph.invoke(None, config, context={"strategy": "auto"})
    assert result["stop_reason"] == "max_iterations"
    assert graph.get_state(config).values["run_context"]["strategy"] == "sample"
    assert all(d.get("parent") is None for d in _drafts(result))


@pytest.mark.parametrize("kept", [{}, {"max_iterations": 2}])
def test_a_thread_kept_before_the_strategy_setting_continues_as_the_refine_loop(
    kept: dict[str, Any],
) -> None:
    parts = create_self_refine_graph(_model()).parts
    assert parts.settings_for(None, kept).strategy == "refine"
    assert parts.settings_for({"strategy": "auto"}, kept).strategy == "refine"
    assert RefineContext.from_kept(kept).strategy == "refine"
