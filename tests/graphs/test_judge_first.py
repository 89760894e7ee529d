"""The judge in front of a run's critic: a right first draft is answered as it is."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from self_refine import ConfigError, create_self_refine_graph
from tests.fakes import FakeChatModel, critique

TASK = "What is 6 * 7? End with: The answer is <answer>."
RIGHT = "6 * 7 = 42. The answer is 42."
WRONG = "6 * 7 = 41. The answer is 41."


def _roles(model: FakeChatModel) -> list[str]:
    return [sent.role for sent in model.requests]


def _model(first: str) -> FakeChatModel:
    return FakeChatModel(
        script={
            "generator": [first],
            "critic": [critique(["Recompute 6 * 7."], score=0.2), critique(score=1.0, done=True)],
            "refiner": [RIGHT],
        }
    )


def test_a_first_draft_the_judge_passes_is_answered_without_a_critique() -> None:
    model = _model(RIGHT)
    graph = create_self_refine_graph(model, critics=["llm"], judge=["answer"]).compile()
    result = graph.invoke({"task": TASK, "reference": {"answer": "42"}})
    assert result["stop_reason"] == "verified" and result["answer"] == RIGHT
    (attempt,) = result["attempts"]
    assert attempt["critique"]["source"] == "answer" and attempt["critique"]["verified"]
    assert _roles(model) == ["generator"]  # no critic, no refiner


def test_a_wrong_first_draft_is_critiqued_and_refined_as_without_a_judge() -> None:
    model = _model(WRONG)
    graph = create_self_refine_graph(model, critics=["llm"], judge=["answer"]).compile()
    result = graph.invoke({"task": TASK, "reference": {"answer": "42"}})
    assert result["answer"] == RIGHT
    assert _roles(model) == ["generator", "critic", "refiner", "critic"]
    # Only the first draft meets the judge: the refined draft is the run's critic's.
    assert [a["critique"]["source"] for a in result["attempts"]] == ["llm", "llm"]


def test_the_run_s_context_names_a_judge_or_none() -> None:
    model = _model(RIGHT)
    graph = create_self_refine_graph(model, critics=["llm"]).compile()
    named = graph.invoke({"task": TASK, "reference": {"answer": "42"}}, context={"judge": "answer"})
    assert named["stop_reason"] == "verified" and _roles(model) == ["generator"]

    model = _model(RIGHT)
    judged = create_self_refine_graph(model, critics=["llm"], judge=["answer"]).compile()
    unjudged = judged.invoke({"task": TASK, "reference": {"answer": "42"}}, context={"judge": []})
    assert unjudged["stop_reason"] != "verified" and "critic" in _roles(model)


def test_an_unknown_judge_is_refused_before_any_model_call() -> None:
    model = _model(RIGHT)
    with pytest.raises(ConfigError, match="spelling"):
        create_self_refine_graph(model, judge=["spelling"])
    graph = create_self_refine_graph(model, critics=["llm"]).compile()
    with pytest.raises(ConfigError, match="spelling"):
        graph.invoke({"task": TASK}, context={"judge": ["spelling"]})
    assert _roles(model) == []


def test_the_human_critic_s_one_draft_rule_holds_when_a_resume_asks_for_candidates() -> None:
    graph = create_self_refine_graph("offline", critics=["human"]).compile(
        checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "t"}}
    first = graph.invoke({"task": TASK}, config)
    assert first["__interrupt__"]
    from langgraph.types import Command

    with pytest.raises(ConfigError, match="one draft at a time"):
        graph.invoke(Command(resume="Say 42."), config, context={"candidates": 3})
    assert graph.get_state(config).next == ("critique",)  # still waiting, nothing written
    assert graph.invoke(Command(resume={"done": True}), config)["stop_reason"] == "critic_done"
