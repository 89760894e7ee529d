"""The human critic: interrupt() asks a person; Command(resume=...) answers."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from self_refine import ConfigError, Critique, RefineContext, create_self_refine_graph
from self_refine.critics.human import HUMAN_CRITIQUE_KIND, critique_from_answer

TASK = "Write one sentence using the words: dog, frisbee, park."
FIRST_DRAFT = "this is a very rough draft about dog"


def _graph(**options: Any) -> Any:
    return create_self_refine_graph("offline", **options).compile(checkpointer=InMemorySaver())


def _question(result: dict[str, Any]) -> dict[str, Any]:
    (pending,) = result["__interrupt__"]
    assert pending.value["kind"] == HUMAN_CRITIQUE_KIND
    return dict(pending.value)


def test_person_critiques_each_draft_until_done() -> None:
    graph = _graph(critics=["human"])
    config = {"configurable": {"thread_id": "h1"}}

    question = _question(graph.invoke({"task": TASK}, config))
    assert question["task"] == TASK
    assert question["draft"] == FIRST_DRAFT
    assert question["attempts"] == []

    question = _question(graph.invoke(Command(resume='Replace "rough" with "short"'), config))
    assert question["draft"] == "this is a very short draft about dog"
    assert question["iteration"] == 1
    (earlier,) = question["attempts"]
    assert earlier["draft"] == FIRST_DRAFT
    assert earlier["critique"]["feedback"] == ['Replace "rough" with "short"']
    assert earlier["critique"]["source"] == "human"

    result = graph.invoke(Command(resume={"feedback": [], "score": 0.9, "done": True}), config)
    assert "__interrupt__" not in result
    assert result["stop_reason"] == "critic_done"
    assert result["answer"] == "this is a very short draft about dog"
    assert result["score"] == 0.9
    assert [a["critique"]["source"] for a in result["attempts"]] == ["human", "human"]


async def test_async_run_is_asked_and_resumed_the_same_way() -> None:
    graph = _graph()
    config = {"configurable": {"thread_id": "h2"}}
    context = RefineContext(critics=["human"])  # chosen per run, as in Studio

    question = _question(await graph.ainvoke({"task": TASK}, config, context=context))
    assert question["draft"] == FIRST_DRAFT
    result = await graph.ainvoke(
        Command(resume={"feedback": ['Mention "zebra"'], "score": 0.3}), config, context=context
    )
    question = _question(result)
    assert question["draft"].endswith("It also covers zebra.")
    result = await graph.ainvoke(Command(resume={"done": True}), config, context=context)
    assert result["stop_reason"] == "critic_done"
    assert result["attempts"][0]["critique"]["score"] == 0.3
    # Accepted without a score: the top of the scale, so the accepted draft is the answer.
    assert result["attempts"][1]["critique"]["score"] == 1.0
    assert result["answer"].endswith("It also covers zebra.")


def test_an_unreadable_answer_is_asked_again_with_the_reason() -> None:
    graph = _graph(critics=["human"])
    config = {"configurable": {"thread_id": "h3"}}
    graph.invoke({"task": TASK}, config)

    question = _question(graph.invoke(Command(resume={"rating": 5}), config))
    assert "unknown key(s) 'rating'" in question["error"]
    assert question["draft"] == FIRST_DRAFT
    question = _question(graph.invoke(Command(resume=""), config))
    assert "the answer is empty" in question["error"]

    result = graph.invoke(Command(resume={"done": True, "score": 1}), config)
    assert result["stop_reason"] == "critic_done"
    assert result["iterations"] == 0


def test_reference_data_is_shown_to_the_person() -> None:
    graph = _graph(critics=["human"])
    result = graph.invoke(
        {"task": TASK, "reference": {"must_mention": ["dog"]}},
        {"configurable": {"thread_id": "h4"}},
    )
    assert _question(result)["reference"] == {"must_mention": ["dog"]}


def test_without_a_checkpointer_the_error_says_how_to_fix_it() -> None:
    graph = create_self_refine_graph("offline", critics=["human"]).compile()
    with pytest.raises(ConfigError, match="needs a checkpointer"):
        graph.invoke({"task": TASK})


def test_human_critic_works_alone() -> None:
    with pytest.raises(ConfigError, match="works alone"):
        _graph(critics=["llm", "human"])
    graph = _graph()
    with pytest.raises(ConfigError, match="works alone"):
        graph.invoke(
            {"task": TASK},
            {"configurable": {"thread_id": "h5"}},
            context={"critics": ["llm", "human"]},
        )
    assert graph.get_state({"configurable": {"thread_id": "h5"}}).values == {}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Fix the ending.", Critique(feedback=["Fix the ending."], source="human")),
        (["a", "b"], Critique(feedback=["a", "b"], source="human")),
        ({"feedback": "one", "score": 8}, Critique(feedback=["one"], score=0.8, source="human")),
        (Critique(done=True, source="llm"), Critique(done=True, score=1.0, source="human")),
        ({"done": True, "score": 0.7}, Critique(done=True, score=0.7, source="human")),
    ],
)
def test_answers_a_person_may_give(answer: Any, expected: Critique) -> None:
    assert critique_from_answer(answer) == expected


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (42, "cannot read an answer of type int"),
        ({"score": True}, "score must be a number"),
        ({"score": "high"}, "score must be a number"),
        ({"feedback": ["x"], "done": "yes"}, "done must be true or false"),
        ({"feedback": ["  "]}, "the answer is empty"),
    ],
)
def test_answers_that_cannot_be_read(answer: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        critique_from_answer(answer)
