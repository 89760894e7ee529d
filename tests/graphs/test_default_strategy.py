"""The default strategy: "auto" becomes, once per run, the one the run's checks call for."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from self_refine import RefineContext, create_self_refine_graph
from self_refine.settings.call import from_kept, resolve
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


def _row(parts: Any, settings: RefineContext, reference: Any) -> str | None:
    """The row of `DEFAULT_STRATEGY` the door's `resolve` takes for a new run on `reference`."""
    return resolve(parts, settings, None, {"reference": reference}).row


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

    parts = create_self_refine_graph("offline").parts
    assert _row(parts, RefineContext(critics=["concepts"]), REFERENCE) == "offline"
    voting = RefineContext(model="openai:m", profile="math", select="vote")
    assert _row(parts, voting, None) == "vote"


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
    assert resolve(parts, None, kept).settings.strategy == "refine"
    assert resolve(parts, {"strategy": "auto"}, kept).settings.strategy == "refine"
    assert from_kept(kept).strategy == "refine"


SUM = "Tom has 3 apples and buys 4 more. How many apples does he have?"


def _math_model() -> FakeChatModel:
    return FakeChatModel(
        script={
            "generator": ["3 + 4 = 7. The answer is 7.", "3 + 4 = 8. The answer is 8."]
            + ["3 + 4 = 7. The answer is 7."] * 4,
            "refiner": ["3 + 4 = 7. The answer is 7."],
            "critic": [critique(["Check the sum."], score=0.5)],
        }
    )


def test_drafts_with_a_final_answer_no_verifier_checks_take_the_critic_free_vote() -> None:
    model = _math_model()
    graph = create_self_refine_graph(model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    # No answer in the reference: the answer verifier has nothing to check.
    result = graph.invoke({"task": SUM}, config, context={"profile": "math", "max_iterations": 2})
    kept = graph.get_state(config).values["run_context"]
    assert (kept["strategy"], kept["select"], tuple(kept["critics"])) == (
        "sample",
        "vote",
        ("none",),
    )
    assert {sent.role for sent in model.requests} == {"generator"}  # no critic, no refiner
    assert len(_drafts(result)) == 3
    assert result["answer"] == "3 + 4 = 7. The answer is 7."


def test_a_continuation_saying_auto_keeps_the_vote_its_run_took() -> None:
    graph = create_self_refine_graph(_math_model()).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    context = {"profile": "math", "max_iterations": 2}
    graph.invoke({"task": SUM}, config, context=context, interrupt_before=["pick"])
    graph.invoke(None, config, context=RefineContext(strategy="auto", profile="math"))
    kept = graph.get_state(config).values["run_context"]
    assert (kept["strategy"], kept["select"], tuple(kept["critics"])) == (
        "sample",
        "vote",
        ("none",),
    )


def test_drafts_with_a_final_answer_and_the_llm_critic_named_refine() -> None:
    model = _math_model()
    graph = create_self_refine_graph(model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    context = {"profile": "math", "max_iterations": 1, "critics": ["llm"]}
    graph.invoke({"task": SUM}, config, context=context)
    assert graph.get_state(config).values["run_context"]["strategy"] == "refine"
    assert {"critic", "refiner"} <= {sent.role for sent in model.requests}


def test_drafts_with_a_final_answer_and_select_named_take_the_critic_row() -> None:
    from self_refine.settings.call import DEFAULT_STRATEGY

    model = _math_model()
    graph = create_self_refine_graph(model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    context = {"profile": "math", "max_iterations": 1, "select": "best"}
    graph.invoke({"task": SUM}, config, context=context)
    kept = graph.get_state(config).values["run_context"]
    assert (kept["strategy"], kept["select"]) == (DEFAULT_STRATEGY["critic"][0], "best")
    assert {"critic", "refiner"} <= {sent.role for sent in model.requests}


def test_a_verifier_that_can_check_the_answer_still_samples_with_its_critics() -> None:

    parts = create_self_refine_graph("openai:m").parts
    math = RefineContext(profile="math")
    assert _row(parts, math, {"answer": "7"}) == "verifier"
    assert _row(parts, math, None) == "answer"
    assert _row(parts, RefineContext(profile="general"), None) == "critic"


def test_a_typed_answer_with_a_final_answer_profile_does_not_take_the_vote() -> None:
    # The vote reads the last number of a text draft; a typed answer's drafts are JSON.
    schema = {"type": "object", "properties": {"value": {"type": "integer"}}}
    parts = create_self_refine_graph("openai:m", response_format=schema).parts
    assert _row(parts, RefineContext(profile="math"), None) == "critic"
