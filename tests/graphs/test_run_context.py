"""The context a run was started with holds for its resumes and continuations."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command

from self_refine import ConfigError, RefineContext, create_self_refine_graph

TASK = "Write one sentence using the words: dog, frisbee, park."
FIRST_DRAFT = "this is a very rough draft about dog"
ZEBRA = f"{FIRST_DRAFT}. It also covers zebra."
SECRET = "sk-never-stored-0123456789abcdef"


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
        return
    with SqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as sqlite_saver:
        yield sqlite_saver


@pytest.fixture(params=["memory", "sqlite"])
async def async_saver(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
        return
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as sqlite_saver:
        yield sqlite_saver


def _graph(saver: Any) -> Any:
    return create_self_refine_graph("offline").compile(checkpointer=saver)


def _question(result: dict[str, Any]) -> dict[str, Any]:
    (pending,) = result["__interrupt__"]
    return dict(pending.value)


def test_a_person_s_answer_is_used_when_the_resume_brings_no_context(saver: Any) -> None:
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"task": TASK}, config, context={"critics": ["human"]})

    # Resumed without the context, as a Studio or SDK user does.
    question = _question(graph.invoke(Command(resume='Mention "zebra"'), config))
    assert question["draft"] == ZEBRA
    result = graph.invoke(Command(resume={"done": True, "score": 0.9}), config)
    assert result["stop_reason"] == "critic_done"
    assert result["answer"] == ZEBRA
    assert [a["critique"]["source"] for a in result["attempts"]] == ["human", "human"]


async def test_the_same_through_ainvoke(async_saver: Any) -> None:
    graph = _graph(async_saver)
    config = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"task": TASK}, config, context=RefineContext(critics=["human"]))
    question = _question(await graph.ainvoke(Command(resume='Mention "zebra"'), config))
    assert question["draft"] == ZEBRA
    result = await graph.ainvoke(Command(resume={"done": True}), config)
    assert [a["critique"]["source"] for a in result["attempts"]] == ["human", "human"]


def test_a_given_draft_asked_of_a_person_first_keeps_the_context(saver: Any) -> None:
    # The first node is the critique, which pauses before it has written anything.
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "t"}}
    first = graph.invoke(
        {"task": TASK, "draft": FIRST_DRAFT}, config, context={"critics": ["human"]}
    )
    assert _question(first)["draft"] == FIRST_DRAFT
    question = _question(graph.invoke(Command(resume='Mention "zebra"'), config))
    assert question["draft"] == ZEBRA


def test_a_continuation_with_none_keeps_the_run_s_limits(saver: Any) -> None:
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"task": TASK}, config, context={"max_iterations": 1}, interrupt_before=["refine"])
    result = graph.invoke(None, config)
    assert result["stop_reason"] == "max_iterations"
    assert result["iterations"] == 1


def test_a_call_s_own_context_is_that_call_s_settings(saver: Any) -> None:
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"task": TASK}, config, context={"critics": ["human"], "max_iterations": 1})
    # This call raises the limit; its context is its settings, whole.
    raised = RefineContext(critics=["human"], max_iterations=2)
    result = graph.invoke(Command(resume='Mention "zebra"'), config, context=raised)
    assert _question(result)["draft"] == ZEBRA
    # The next call brings none: the settings the run began with hold again.
    result = graph.invoke(Command(resume='Mention "yak"'), config)
    assert result["stop_reason"] == "max_iterations" and result["iterations"] == 1


def test_a_dict_on_a_continuation_changes_the_run_s_settings_it_names(saver: Any) -> None:
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"task": TASK}, config, context={"critics": ["human"], "max_iterations": 1})
    # This call raises the limit; the critics it does not name stay the run's.
    result = graph.invoke(Command(resume='Mention "zebra"'), config, context={"max_iterations": 2})
    assert _question(result)["draft"] == ZEBRA
    # The next call brings none: the run's limit of 1 holds again.
    result = graph.invoke(Command(resume='Mention "yak"'), config)
    assert result["stop_reason"] == "max_iterations" and result["iterations"] == 1


def test_a_dict_context_changes_the_graph_s_settings_it_names(saver: Any) -> None:
    graph = create_self_refine_graph(
        "offline", settings=RefineContext(critics=["human"], max_iterations=1)
    ).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"task": TASK}, config, context={"max_iterations": 2})
    kept = graph.get_state(config).values["run_context"]
    assert kept["critics"] == ["human"] and kept["max_iterations"] == 2


def test_new_input_on_a_finished_thread_starts_from_its_own_context(saver: Any) -> None:
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"task": TASK}, config, context={"max_iterations": 1, "select": "last"})
    result = graph.invoke({"task": TASK}, config)
    alone = _graph(InMemorySaver()).invoke({"task": TASK}, config)
    assert result["iterations"] == alone["iterations"] > 1
    assert result["stop_reason"] == alone["stop_reason"] == "critic_done"
    # This run brought no context: it keeps the graph's settings, not the last run's, its
    # strategy the one "auto" took (refine: the offline stand-in writes the drafts).
    kept = graph.get_state(config).values["run_context"]
    assert kept == {**RefineContext().kept(), "strategy": "refine"}


def test_the_kept_context_holds_no_api_key(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = _graph(saver)
        config = {"configurable": {"thread_id": "t"}}
        context = {"critics": ["human"], "api_key": SECRET, "timeout": 30}
        graph.invoke({"task": TASK}, config, context=context)
        kept = graph.get_state(config).values["run_context"]
        graph.invoke(Command(resume={"done": True}), config)
    assert kept["critics"] == ["human"] and kept["timeout"] == 30
    assert "api_key" not in kept
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT * FROM checkpoints").fetchall()
        rows += connection.execute("SELECT * FROM writes").fetchall()
    stored = b"".join(v if isinstance(v, bytes) else str(v).encode() for r in rows for v in r)
    assert b"never-stored" not in stored and b"30" in stored


def test_a_password_in_the_base_url_is_not_kept_and_must_be_given_again(saver: Any) -> None:
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "t"}}
    url = "http://user:hunter2hunter2@127.0.0.1:9/v1"
    graph.invoke({"task": TASK}, config, context={"critics": ["human"], "base_url": url})
    kept = graph.get_state(config).values["run_context"]
    assert kept["base_url"] == "http://user:***@127.0.0.1:9/v1"

    with pytest.raises(ConfigError, match="base_url .*password.*give base_url again"):
        graph.invoke(Command(resume='Mention "zebra"'), config)
    assert graph.get_state(config).next == ("critique",)  # still waiting for the answer
    again = {"base_url": url}  # changes the run's settings it names
    result = graph.invoke(Command(resume='Mention "zebra"'), config, context=again)
    assert _question(result)["draft"] == ZEBRA


def test_the_kept_context_is_not_part_of_the_input_or_output_schemas() -> None:
    graph = _graph(InMemorySaver())
    assert "run_context" not in graph.get_input_jsonschema()["properties"]
    assert "run_context" not in graph.get_output_jsonschema()["properties"]
    # A caller cannot write it through the input either: it is the call's context.
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"task": TASK, "run_context": {"critics": ["human"]}}, config)
    kept = graph.get_state(config).values["run_context"]
    assert kept == {**RefineContext().kept(), "strategy": "refine"}
