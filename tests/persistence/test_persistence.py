"""Checkpoints in SQLite: pause before refine, reopen the file with a new saver, finish."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from self_refine import create_self_refine_graph, refine
from self_refine.graphs import recursion_limit

TASK = "Write one sentence about a dog in a park using the words: dog, frisbee, park, catch."
CONFIG: Any = {"configurable": {"thread_id": "thread-1"}, "recursion_limit": recursion_limit(3)}


def uninterrupted() -> list[Any]:
    return refine(TASK, model="offline")["attempts"]


def test_run_paused_before_refine_finishes_from_a_new_saver(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    with sqlite3.connect(db, check_same_thread=False) as conn:
        graph = create_self_refine_graph("offline").compile(
            checkpointer=SqliteSaver(conn), interrupt_before=["refine"]
        )
        graph.invoke({"task": TASK}, CONFIG)
        paused = graph.get_state(CONFIG)
        assert paused.next == ("refine",)
        assert len(paused.values["attempts"]) == 1
    conn.close()

    with sqlite3.connect(db, check_same_thread=False) as conn:
        graph = create_self_refine_graph("offline").compile(checkpointer=SqliteSaver(conn))
        result = graph.invoke(None, CONFIG)
    conn.close()
    assert result["attempts"] == uninterrupted()
    assert result["stop_reason"] == "critic_done"


def test_stepping_through_every_pause_gives_the_same_run(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    pauses = 0
    result: dict[str, Any] = {}
    payload: Any = {"task": TASK}
    while True:
        with SqliteSaver.from_conn_string(str(db)) as saver:
            graph = create_self_refine_graph("offline").compile(
                checkpointer=saver, interrupt_before=["refine"]
            )
            result = graph.invoke(payload, CONFIG)
            if not graph.get_state(CONFIG).next:
                break
        pauses += 1
        payload = None
    assert pauses == result["iterations"] == 3
    assert result["attempts"] == uninterrupted()


async def test_async_saver_resumes_the_same_way(tmp_path: Path) -> None:
    db = str(tmp_path / "checkpoints.sqlite")
    async with AsyncSqliteSaver.from_conn_string(db) as saver:
        graph = create_self_refine_graph("offline").compile(
            checkpointer=saver, interrupt_before=["refine"]
        )
        await graph.ainvoke({"task": TASK}, CONFIG)
    async with AsyncSqliteSaver.from_conn_string(db) as saver:
        graph = create_self_refine_graph("offline").compile(checkpointer=saver)
        result = await graph.ainvoke(None, CONFIG)
    assert result["attempts"] == uninterrupted()


def test_refine_with_a_checkpointer_keeps_the_thread(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "db.sqlite")) as saver:
        result = refine(TASK, model="offline", checkpointer=saver, thread_id="named")
        graph = create_self_refine_graph("offline").compile(checkpointer=saver)
        state = graph.get_state({"configurable": {"thread_id": "named"}})
        history = list(graph.get_state_history({"configurable": {"thread_id": "named"}}))
    assert state.values["answer"] == result["answer"]
    assert state.values["attempts"] == result["attempts"]
    # one checkpoint per step: the input, START, begin, generate, critique,
    # refine + critique per iteration, finalize
    assert len(history) == 5 + 2 * result["iterations"] + 1


async def test_the_batch_saver_writes_threads_that_the_sync_saver_and_langgraphs_read(
    tmp_path: Path,
) -> None:
    from self_refine.persistence.storage import open_async_checkpointer, open_checkpointer

    db = str(tmp_path / "batch.sqlite")
    async with open_async_checkpointer(db) as saver:
        graph = create_self_refine_graph("offline").compile(checkpointer=saver)
        await graph.ainvoke({"task": TASK}, CONFIG, interrupt_before=["refine"])
        paused = await graph.aget_state(CONFIG)
        assert paused.next == ("refine",)
        result = await graph.ainvoke(None, CONFIG)
        history = [c async for c in saver.alist(CONFIG)]
        assert len(history) == len([s async for s in graph.aget_state_history(CONFIG)])
    assert result["attempts"] == uninterrupted()

    with open_checkpointer(db) as sync_saver:
        graph = create_self_refine_graph("offline").compile(checkpointer=sync_saver)
        assert graph.get_state(CONFIG).values["attempts"] == result["attempts"]
    async with AsyncSqliteSaver.from_conn_string(db) as upstream:
        graph = create_self_refine_graph("offline").compile(checkpointer=upstream)
        assert (await graph.aget_state(CONFIG)).values["attempts"] == result["attempts"]

    async with open_async_checkpointer(db) as saver:
        await saver.adelete_thread("thread-1")
        assert await saver.aget_tuple(CONFIG) is None
