"""The program's SQLite saver saves a step in one commit, and loses no write on the way.

`StepSqliteSaver` keeps a node's writes until the step's checkpoint and saves both
in one transaction; a candidate's writes, and special ones, are saved at once; every
read, a delete and closing the saver write what it keeps first.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

from self_refine import RefineContext, create_self_refine_graph
from self_refine.models.offline import OfflineModel
from self_refine.persistence.sqlite import StepSqliteSaver
from self_refine.persistence.storage import open_async_checkpointer, open_checkpointer

TASK = "Write a sentence using the words: dog, frisbee, park, catch."
NODE = "~__pregel_pull, critique"
CANDIDATE = "~__pregel_push, 0, False"


def _graph(saver: Any) -> Any:
    # One edit per refine step, so three steps never finish the task.
    builder = create_self_refine_graph(
        OfflineModel(edits_per_step=1), settings=RefineContext(max_iterations=3)
    )
    return builder.compile(checkpointer=saver)


def _config(checkpoint_id: str = "") -> Any:
    configurable = {"thread_id": "t", "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _stored_writes(db: Path) -> list[tuple[Any, ...]]:
    """Each write another connection reads: by checkpoint (in time order), then index."""
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT channel, idx, type, value, task_path FROM writes ORDER BY checkpoint_id, idx"
        ).fetchall()


def _keep(saver: Any, *writes: tuple[str, Any]) -> Any:
    """Save an empty checkpoint, then give the saver a node's `writes` on it; its config."""
    saved = saver.put(_config(), empty_checkpoint(), {}, {})
    saver.put_writes(saved, list(writes or [("draft", "A dog.")]), "task-1", NODE)
    return saved


def _commits(conn: sqlite3.Connection, seen: list[str]) -> None:
    conn.set_trace_callback(lambda sql: seen.append(sql) if sql.startswith("COMMIT") else None)


def test_a_run_commits_once_a_step_and_stores_what_langgraphs_saver_stores(
    tmp_path: Path,
) -> None:
    ours, theirs = tmp_path / "ours.sqlite", tmp_path / "theirs.sqlite"
    commits: list[str] = []
    with open_checkpointer(str(ours)) as saver:
        assert isinstance(saver, StepSqliteSaver)
        saver.setup()
        _commits(saver.conn, commits)
        result = _graph(saver).invoke({"task": TASK}, _config())
        _commits(saver.conn, [])
        checkpoints = len(list(saver.list(_config())))
    with SqliteSaver.from_conn_string(str(theirs)) as upstream:
        assert _graph(upstream).invoke({"task": TASK}, _config())["attempts"] == result["attempts"]

    assert commits and len(commits) == checkpoints  # LangGraph's saver: one more per step
    assert _stored_writes(ours) == _stored_writes(theirs)


def test_a_nodes_writes_wait_for_the_next_statement_and_a_read_sees_them(
    tmp_path: Path,
) -> None:
    db = tmp_path / "db.sqlite"
    with open_checkpointer(str(db)) as saver:
        saved = _keep(saver)
        assert _stored_writes(db) == []  # kept, not yet committed
        found = saver.get_tuple(saved)
        assert found is not None
        assert found.pending_writes == [("task-1", "draft", "A dog.")]
        assert [row[0] for row in _stored_writes(db)] == ["draft"]


def test_a_candidates_writes_and_special_writes_are_saved_at_once(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    with open_checkpointer(str(db)) as saver:
        saved = saver.put(_config(), empty_checkpoint(), {}, {})
        saver.put_writes(saved, [("branches", ["a reply"])], "task-1", CANDIDATE)
        saver.put_writes(saved, [("__error__", "it failed")], "task-2", NODE)
        assert sorted(row[0] for row in _stored_writes(db)) == ["__error__", "branches"]


def test_closing_the_saver_saves_the_writes_it_kept(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    with open_checkpointer(str(db)) as saver:
        _keep(saver, ("draft", "A dog."), ("iteration", 1))
        assert _stored_writes(db) == []
    assert [row[:2] for row in _stored_writes(db)] == [("draft", 0), ("iteration", 1)]


def test_writes_whose_save_failed_are_kept_and_saved_by_the_next_statement(
    tmp_path: Path,
) -> None:
    db = tmp_path / "db.sqlite"
    with open_checkpointer(str(db)) as saver:
        saved = _keep(saver)
        saver.conn.execute(
            "CREATE TRIGGER full BEFORE INSERT ON writes "
            "BEGIN SELECT RAISE(ABORT, 'the disk is full'); END"
        )
        with pytest.raises(sqlite3.IntegrityError, match="disk is full"):
            saver.put(saved, empty_checkpoint(), {}, {})
        assert _stored_writes(db) == []
        with sqlite3.connect(db) as conn:  # nor the checkpoint: one transaction
            assert conn.execute("SELECT count(*) FROM checkpoints").fetchone() == (1,)
        saver.conn.execute("DROP TRIGGER full")
        saver.put(saved, empty_checkpoint(), {}, {})
        assert [row[0] for row in _stored_writes(db)] == ["draft"]


def test_deleting_a_thread_deletes_the_writes_kept_for_it(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    with open_checkpointer(str(db)) as saver:
        _keep(saver)
        saver.delete_thread("t")
    assert _stored_writes(db) == []


def test_the_batch_saver_saves_the_writes_it_kept_when_it_closes(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"

    async def keep_one() -> None:
        async with open_async_checkpointer(str(db)) as saver:
            saved = await saver.aput(_config(), empty_checkpoint(), {}, {})
            await saver.aput_writes(saved, [("draft", "A dog.")], "task-1", NODE)
            assert _stored_writes(db) == []

    asyncio.run(keep_one())
    assert [row[0] for row in _stored_writes(db)] == ["draft"]
