"""Critic lists are checked once, the same way, wherever they are given."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from self_refine import ConfigError, RefineContext, create_self_refine_graph, refine, refine_batch
from self_refine.critics import resolve_critics
from tests.fakes import FakeChatModel, critique

TASK = "Write one sentence using the words: dog, frisbee, park."
CONCEPTS = {"concepts": ["dog", "frisbee", "park"]}
GOOD = "A dog catches a frisbee in the park."

BAD_LISTS = [
    (["human", "concepts"], "the human critic works alone"),
    (["llm", "human"], "the human critic works alone"),
    (["concepts", "llm", "llm"], "name one explaining critic, not 2"),
    (["concepts", "psychic"], "unknown critic 'psychic'"),
    ([42], "a critic must be a name"),
]


@pytest.fixture
def model() -> FakeChatModel:
    return FakeChatModel(
        script={"generator": ["d"], "critic": [critique(score=1, done=True)], "refiner": ["d"]}
    )


@pytest.mark.parametrize(("critics", "says"), BAD_LISTS)
def test_the_factory_refuses_a_list_the_graph_could_not_run(
    model: FakeChatModel, critics: list[Any], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        create_self_refine_graph(model, critics=critics)
    assert model.requests == []


@pytest.mark.parametrize(("critics", "says"), BAD_LISTS[:4])
def test_a_run_context_refuses_it_too_before_anything_is_written(
    model: FakeChatModel, critics: list[str], says: str
) -> None:
    graph = create_self_refine_graph(model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    for given in (RefineContext(critics=critics), {"critics": ",".join(critics)}):
        with pytest.raises(ConfigError, match=says):
            graph.invoke({"task": TASK}, config, context=given)
    assert model.requests == []
    assert not graph.get_state(config).values


@pytest.mark.parametrize(("critics", "says"), BAD_LISTS[:4])
def test_a_batch_refuses_it_before_any_call(
    model: FakeChatModel, critics: list[str], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        refine_batch([TASK], model=model, references=[CONCEPTS], critics=critics)
    assert model.requests == []


def test_the_human_critic_alone_and_one_explainer_after_verifiers_are_accepted() -> None:
    assert resolve_critics(["human"]).explainer == "human"
    plan = resolve_critics(["concepts", "answer", "llm"])
    assert [v.name for v in plan.verifiers] == ["concepts", "answer"]
    assert plan.explainer == "llm"
    assert resolve_critics("concepts, llm") == resolve_critics(["concepts", "llm"])


@pytest.mark.parametrize("critics", ["concepts", " concepts , llm "])
def test_a_critics_string_in_the_run_context_is_a_list_of_names(
    model: FakeChatModel, critics: str
) -> None:
    """A dict context (a server client, Studio, the SDK) may give critics as one string."""
    assert RefineContext(critics=critics).critics == tuple(n.strip() for n in critics.split(","))
    graph = create_self_refine_graph(model).compile()
    result = graph.invoke(
        {"task": TASK, "draft": GOOD, "reference": CONCEPTS},
        context={"critics": critics, "profile": "constrained_generation"},
    )
    assert result["stop_reason"] == "verified"
    assert result["attempts"][0]["critique"]["source"] == "concepts"
    assert model.requests == []


def test_a_critics_string_given_to_the_factory_is_a_list_of_names(model: FakeChatModel) -> None:
    result = refine(TASK, model=model, draft=GOOD, reference=CONCEPTS, critics="concepts")
    assert result["stop_reason"] == "verified"
    assert model.requests == []


def test_critics_of_the_wrong_type_in_the_context() -> None:
    with pytest.raises(ConfigError, match='critics must be a list of names such as \\["concepts"'):
        RefineContext(critics=[1, 2])  # type: ignore[list-item]
