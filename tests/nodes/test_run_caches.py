"""What the nodes work out once per run's settings, and keep, follows every change of them.

The settings, critic, stop policies and rendered prompt parts are kept between
steps (a performance change); these tests hold that a kept value never outlives
the settings it was made for and never passes from one thread or run to another.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from self_refine import RefineContext, create_self_refine_graph
from self_refine.prompts import get_profile, refine_messages
from tests.fakes import FakeChatModel, critique

TASK = "Write one sentence about a lighthouse keeper at night."


def _model() -> FakeChatModel:
    return FakeChatModel(
        script={
            "generator": ["The keeper climbs the stairs."],
            "critic": [
                lambda messages: critique([f"Say more: {len(messages[-1].text)}"], score=0.2)
            ],
            "refiner": [
                lambda messages: f"The keeper climbs, step {sum(len(m.text) for m in messages)}."
            ],
        }
    )


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def test_a_new_context_each_run_is_read_afresh() -> None:
    graph = create_self_refine_graph(_model()).compile(checkpointer=InMemorySaver())
    first = graph.invoke({"task": TASK}, _config("a"), context=RefineContext(max_iterations=1))
    second = graph.invoke({"task": TASK}, _config("b"), context=RefineContext(max_iterations=2))
    assert (first["iterations"], second["iterations"]) == (1, 2)


def test_a_context_cannot_change_in_place() -> None:
    context = RefineContext(max_iterations=1, critics=["llm"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.max_iterations = 3  # type: ignore[misc]
    assert context.critics == ("llm",)  # a tuple: no change in place either


def test_a_dict_context_changed_in_place_is_read_afresh() -> None:
    graph = create_self_refine_graph(_model()).compile(checkpointer=InMemorySaver())
    context: dict[str, Any] = {"max_iterations": 1, "select": "last"}
    assert graph.invoke({"task": TASK}, _config("a"), context=context)["iterations"] == 1
    context["max_iterations"] = 2
    assert graph.invoke({"task": TASK}, _config("b"), context=context)["iterations"] == 2


def test_a_changed_profile_changes_the_prompts_of_the_next_run() -> None:
    model = _model()
    graph = create_self_refine_graph(model).compile(checkpointer=InMemorySaver())
    graph.invoke({"task": TASK}, _config("a"), context={"max_iterations": 1})
    graph.invoke({"task": TASK}, _config("b"), context={"max_iterations": 1, "profile": "math"})
    systems = [sent.system for sent in model.requests_for("generator")]
    assert systems[0] != systems[1]
    assert get_profile("math").generate.strip() in systems[1]


async def test_concurrent_runs_with_other_settings_keep_their_own() -> None:
    graph = create_self_refine_graph(_model()).compile(checkpointer=InMemorySaver())
    runs = [
        graph.ainvoke({"task": TASK}, _config(f"t{i}"), context=RefineContext(max_iterations=n))
        for i, n in enumerate((1, 2, 3, 1, 2, 3))
    ]
    results = await asyncio.gather(*runs)
    assert [r["iterations"] for r in results] == [1, 2, 3, 1, 2, 3]


def test_refine_prompts_of_two_threads_with_the_same_draft_keep_their_own_feedback() -> None:
    prompts = get_profile("general")
    usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    ours = refine_messages(
        prompts,
        TASK,
        [
            {
                "iteration": 0,
                "draft": "Same draft.",
                "critique": {"feedback": ["Ours."]},
                "usage": usage,
            }
        ],
        None,
        None,
    )
    theirs = refine_messages(
        prompts,
        TASK,
        [
            {
                "iteration": 0,
                "draft": "Same draft.",
                "critique": {"feedback": ["Theirs."]},
                "usage": usage,
            }
        ],
        None,
        None,
    )
    assert "Ours." in ours[-1].text and "Theirs." not in ours[-1].text
    assert "Theirs." in theirs[-1].text and "Ours." not in theirs[-1].text


def test_a_changed_base_url_in_the_environment_reaches_the_next_run(monkeypatch: Any) -> None:
    from tests.openai_server import OpenAIServer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with OpenAIServer() as first, OpenAIServer() as second:
        monkeypatch.setenv("OPENAI_BASE_URL", first.base_url)
        graph = create_self_refine_graph("served-model").compile(checkpointer=InMemorySaver())
        graph.invoke({"task": TASK}, _config("a"), context={"max_iterations": 1})
        monkeypatch.setenv("OPENAI_BASE_URL", second.base_url)
        graph.invoke({"task": TASK}, _config("b"), context={"max_iterations": 1})
        assert first.chat_requests("critic") and second.chat_requests("critic")
        assert len(second.chat_requests()) == len(first.chat_requests())


def test_resumed_threads_each_keep_the_settings_they_started_with() -> None:
    graph = create_self_refine_graph(_model()).compile(checkpointer=InMemorySaver())
    for thread, n in (("short", 1), ("long", 3)):
        context = RefineContext(max_iterations=n)
        graph.invoke({"task": TASK}, _config(thread), context=context, interrupt_before=["refine"])
    long_run = graph.invoke(None, _config("long"))
    short_run = graph.invoke(None, _config("short"))
    assert (short_run["iterations"], long_run["iterations"]) == (1, 3)
