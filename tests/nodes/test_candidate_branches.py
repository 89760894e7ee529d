"""A step of candidates as LangGraph runs it: parallel tasks, checkpointed, resumed, limited.

And the other ways in (a typed answer, a task with images, an agent in a role) inside
such a step.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel

from self_refine import (
    ConfigError,
    RefineContext,
    Roles,
    arefine_batch,
    create_self_refine_graph,
    refine,
)
from self_refine.models.calls import RESAMPLE_TEMPERATURE
from self_refine.prompts.render import FRESH_INTRO
from tests.fakes import FakeChatModel, critique, role_of
from tests.images import image_task
from tests.nodes.candidate_runs import REFERENCE, RIGHT, TASK, concepts_graph, thread


def test_the_candidates_are_parallel_tasks_of_one_step_each_one_checkpointed() -> None:
    together = threading.Barrier(3, timeout=10)  # broken unless all three calls are in flight

    def reply(messages: list[BaseMessage]) -> str:
        together.wait()
        return RIGHT if FRESH_INTRO not in messages[-1].text else "A dog in the park."

    saver = InMemorySaver()
    graph = concepts_graph(FakeChatModel(script={"refiner": [reply]}), saver, candidates=3)
    graph.invoke({"task": TASK, "draft": "A dog.", "reference": REFERENCE}, thread())
    history = list(graph.get_state_history(thread()))
    fan_out = next(s for s in history if s.next == ("candidate",) * 3)
    assert [t.name for t in fan_out.tasks] == ["candidate"] * 3
    assert len({t.id for t in fan_out.tasks}) == 3
    # Each branch's reply is saved under its own task, as that task finished.
    saved = saver.get_tuple(fan_out.config)
    assert saved is not None
    writes = [
        (task, value)
        for task, channel, value in saved.pending_writes or []
        if channel == "branches"
    ]
    assert sorted(task for task, _ in writes) == sorted(t.id for t in fan_out.tasks)
    assert sorted(value[0]["index"] for _, value in writes) == [0, 1, 2]
    assert graph.get_state(thread()).values["answer"] == RIGHT


def test_a_crash_mid_fan_out_keeps_the_finished_candidates_and_resume_asks_only_the_failed() -> (
    None
):
    calls: list[str] = []
    failed = threading.Event()

    def reply(messages: list[BaseMessage]) -> Any:
        calls.append("refiner")
        if not failed.is_set():
            failed.set()
            time.sleep(0.5)  # the other branches finish, and are saved, first
            return RuntimeError("the server went away")
        return "A dog in the park."

    model = FakeChatModel(script={"refiner": [reply]})
    graph = concepts_graph(model, candidates=3, max_iterations=1)
    with pytest.raises(RuntimeError, match="went away"):
        graph.invoke({"task": TASK, "draft": "A dog.", "reference": REFERENCE}, thread())
    assert len(calls) == 3
    # The step is still pending; LangGraph kept the finished branches' writes.
    tasks = graph.get_state(thread()).tasks
    assert [t.name for t in tasks] == ["candidate"] * 3
    assert sum(t.result is not None for t in tasks) == 2
    assert sum(t.error is not None for t in tasks) == 1
    result = graph.invoke(None, thread())
    assert len(calls) == 4
    step = result["attempts"][1]
    assert sorted([step["candidate"], *(c["index"] for c in step["candidates"])]) == [0, 1, 2]


class _Gauge(BaseChatModel):
    """Replies after a pause, counting how many of its calls are in flight at most."""

    in_flight: int = 0
    most: int = 0

    @property
    def _llm_type(self) -> str:
        return "gauge"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise AssertionError("only async calls are expected")

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0.05)
        self.in_flight -= 1
        text = json.dumps(critique(score=0.5)) if role_of(messages) == "critic" else "A dog."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


@pytest.mark.parametrize(("items", "concurrency"), [(2, 2), (1, 3)])
async def test_a_batchs_call_limit_counts_every_candidates_call(
    items: int, concurrency: int
) -> None:
    # Counted per item instead, 2 items x 4 candidates (or 1 x 4) would be in flight.
    model = _Gauge()
    await arefine_batch(
        [TASK] * items,
        model=model,
        concurrency=concurrency,
        candidates=4,
        max_iterations=0,
        critics=["llm"],
    )
    assert model.most == concurrency


class Cat(BaseModel):
    name: str
    age: int


def test_a_typed_answers_candidates_are_json_drafts_each_a_draw_of_its_own() -> None:
    seen: list[Any] = []

    class Recording(FakeChatModel):
        temperature: float = 0.0

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
            if role_of(messages) == "generator":
                seen.append(kwargs.get("temperature"))
            return super()._generate(messages, *args, **kwargs)

    model = Recording(
        script={
            "generator": ['{"name": "Tom", "age": "old"}', '{"name": "Tom", "age": 3}'],
            "critic": [critique(score=1.0, done=True)],
        },
    )
    result = refine(
        "Describe a cat as JSON.", model=model, response_format=Cat, candidates=2, max_iterations=0
    )
    assert result["structured_response"] == Cat(name="Tom", age=3)
    step = result["attempts"][0]
    assert step["candidates"][0]["critique"]["source"] == "response_format"
    assert all(sent.structured for sent in model.requests_for("generator"))
    assert sorted(seen, key=lambda t: t or 0.0) == [None, RESAMPLE_TEMPERATURE]


def test_an_image_task_reaches_every_candidate_and_the_fresh_form_keeps_the_image() -> None:
    model = FakeChatModel(
        script={
            "generator": ["A dot."],
            "critic": [critique(["Say its colour."], score=0.5)],
            "refiner": ["A red dot."],
        }
    )
    refine(image_task(), model=model, candidates=3, max_iterations=1)
    refiner = model.requests_for("refiner")
    assert len(refiner) == 3 and sum(FRESH_INTRO in s.prompt for s in refiner) == 2
    for sent in [*model.requests_for("generator"), *refiner]:
        blocks = [b for m in sent.messages if isinstance(m.content, list) for b in m.content]
        assert [b["type"] for b in blocks if b.get("type") == "image"] == ["image"]


def test_a_text_only_model_is_refused_for_an_image_task_with_candidates_before_any_call() -> None:
    with pytest.raises(ConfigError, match="reads text only"):
        refine(image_task(), model="offline", candidates=3)


def test_an_agent_in_a_role_runs_as_each_candidates_subgraph() -> None:
    from langgraph.prebuilt import create_react_agent

    agent_model = FakeChatModel(script={"*": [RIGHT]})
    with pytest.warns(DeprecationWarning):
        agent = create_react_agent(agent_model, tools=[])
    model = FakeChatModel(script={"critic": [critique(score=0.5)]})
    graph = create_self_refine_graph(
        model,
        roles=Roles(generator=agent),
        settings=RefineContext(candidates=2, max_iterations=0, critics=("concepts",)),
    ).compile(checkpointer=InMemorySaver())
    namespaces = [
        namespace
        for namespace, _ in graph.stream(
            {"task": TASK, "reference": REFERENCE}, thread(), subgraphs=True
        )
        if namespace
    ]
    assert len(namespaces) == 2 and all(ns[0].startswith("candidate:") for ns in namespaces)
    assert len(agent_model.requests) == 2
    assert graph.get_state(thread()).values["answer"] == RIGHT


def _image_copies(db: Path, image: str) -> int:
    """How many times the image's base64 is stored in the database."""
    marker = image[:64].encode()
    with sqlite3.connect(db) as connection:
        blobs = [*connection.execute("SELECT checkpoint FROM checkpoints")]
        blobs += [*connection.execute("SELECT value FROM writes")]
    return sum(bytes(blob).count(marker) for (blob,) in blobs if blob)


def _image_run(db: Path, candidates: int, image: str) -> None:
    task = image_task({"type": "image", "base64": image, "mime_type": "image/png"})
    model = FakeChatModel(
        script={"generator": ["A dot."], "critic": [critique(["Say it."], score=0.5)],
                "refiner": ["A red dot."]}
    )  # fmt: skip
    with SqliteSaver.from_conn_string(str(db)) as saver:
        settings = RefineContext(candidates=candidates, max_iterations=2, first_verified=False)
        graph = create_self_refine_graph(model, settings=settings).compile(checkpointer=saver)
        graph.invoke({"task": task}, thread(), durability="sync")


def test_an_inline_image_is_stored_once_per_thread_however_many_candidates(tmp_path: Path) -> None:
    image = base64.b64encode(os.urandom(30_000)).decode()
    _image_run(tmp_path / "one.db", 1, image)
    _image_run(tmp_path / "four.db", 4, image)
    assert _image_copies(tmp_path / "four.db", image) == _image_copies(tmp_path / "one.db", image)


def test_a_paused_step_of_candidates_resumes_with_the_task_s_images(tmp_path: Path) -> None:
    model = FakeChatModel(
        script={"generator": ["A dot."], "critic": [critique(["Say it."], score=0.5)]}
    )
    db = str(tmp_path / "t.db")
    settings = RefineContext(candidates=3, max_iterations=0)
    builder = create_self_refine_graph(model, settings=settings)
    with SqliteSaver.from_conn_string(db) as saver:
        paused = builder.compile(checkpointer=saver, interrupt_before=["candidate"])
        paused.invoke({"task": image_task()}, thread())
        assert paused.get_state(thread()).next == ("candidate", "candidate", "candidate")
    assert model.requests_for("generator") == []
    with SqliteSaver.from_conn_string(db) as saver:  # as a new process would, with nothing held
        result = builder.compile(checkpointer=saver).invoke(None, thread())
    assert result["stop_reason"] is not None
    for sent in model.requests_for("generator"):
        blocks = [b for m in sent.messages if isinstance(m.content, list) for b in m.content]
        assert [b["type"] for b in blocks if b.get("type") == "image"] == ["image"]
