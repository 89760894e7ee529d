"""One writer per thread: a second run or resume of a busy thread is refused, across processes.

The holder is a real `self-refine` process waiting at the human critic's
prompt (it holds the thread from its first read to its last write); the
second is a real process too. SQLite and PostgreSQL, and a holder killed with
kill -9, whose lock the kernel or the server releases.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from self_refine import RefineContext, create_self_refine_graph, refine
from self_refine.errors import ThreadBusyError
from self_refine.graphs import GRAPH_NAME
from self_refine.persistence.locks import lock_folder, thread_lock
from tests.conftest import run_cli
from tests.fakes import FakeChatModel, critique

TASK = "Write one sentence using the words: dog, frisbee, park."
PROMPT = "feedback, one item per line"
EXIT_BUSY = 75


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "c.sqlite")
    return str(request.getfixturevalue("postgres_url"))


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "self_refine.cli", *args]


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Any]:
    """Start `self-refine`, waiting at the human critic's prompt (holding the thread)."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            _cli(*args),
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        assert process.stdout is not None
        seen = []
        for line in process.stdout:
            seen.append(line)
            if PROMPT in line:
                return process
        raise AssertionError(f"the holder never asked: {''.join(seen)}{process.stderr.read()}")

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate()


def _checkpoints(cwd: Path, db: str, thread_id: str) -> str:
    shown = run_cli("show", thread_id, "--db", db, "--json", cwd=cwd)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_a_second_resume_is_refused_while_one_runs(holder: Any, db: str, tmp_path: Path) -> None:
    # A thread that waits for a person's critique (stdin ended at the prompt).
    first = run_cli("run", TASK, "--critics", "human", "--thread-id", "t", "--db", db, cwd=tmp_path)
    assert first.returncode == 1, first.stderr
    before = _checkpoints(tmp_path, db, "t")

    running = holder("resume", "t", "--db", db)
    second = run_cli("resume", "t", "--db", db, cwd=tmp_path)
    assert second.returncode == EXIT_BUSY, second.stderr
    error = second.stderr.strip()
    assert error.startswith("self-refine: error: thread 't' is being run by another self-refine")
    assert f"pid {running.pid}" in error
    assert "wait for it to finish, then try again" in error
    assert "self-refine show t --db" in error
    assert len(error.splitlines()) == 1
    assert second.stdout == "", "the refused resume printed nothing of the thread"
    assert _checkpoints(tmp_path, db, "t") == before, "the refused resume wrote nothing"

    # The holder finishes (no feedback: the draft is accepted); then the thread is free.
    out, err = running.communicate("\n\n\n", timeout=60)
    assert running.returncode == 0, err
    again = run_cli("resume", "t", "--db", db, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "is already finished" in again.stdout


def test_run_on_a_busy_thread_id_is_refused(holder: Any, db: str, tmp_path: Path) -> None:
    holder("run", TASK, "--critics", "human", "--thread-id", "t", "--db", db)
    second = run_cli("run", "Another task", "--thread-id", "t", "--db", db, cwd=tmp_path)
    assert second.returncode == EXIT_BUSY, second.stderr
    assert "thread 't' is being run by another self-refine process" in second.stderr


def test_a_holder_killed_with_sigkill_leaves_the_thread_free(
    holder: Any, db: str, tmp_path: Path
) -> None:
    running = holder("run", TASK, "--critics", "human", "--thread-id", "t", "--db", db)
    running.send_signal(signal.SIGKILL)
    running.wait(timeout=30)
    # The lock went with the process; the run continues where the killed one stopped.
    resumed = subprocess.run(
        _cli("resume", "t", "--db", db),
        cwd=tmp_path,
        input="\n\n\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "Stopped: critic_done" in resumed.stdout
    if not db.startswith("postgresql://"):
        assert not lock_folder(db).exists(), "the lock file and folder go once released"


# --- the Python API: threads of one process ---------------------------------------------------


class _Gate:
    """A generator reply that waits until the test lets it go (holding the thread meanwhile)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.go = threading.Event()

    def __call__(self, messages: list[BaseMessage]) -> str:
        self.entered.set()
        assert self.go.wait(30)
        return "a draft"


def _gated_model(gate: _Gate) -> FakeChatModel:
    return FakeChatModel(script={"generator": [gate], "critic": [critique(score=1, done=True)]})


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_refine_on_a_busy_thread_raises_and_writes_nothing(kind: str, tmp_path: Path) -> None:
    def saver() -> Any:
        if kind == "memory":
            return shared
        # Each caller its own connection, as two programs would have.
        return SqliteSaver(sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False))

    shared = InMemorySaver()
    gate = _Gate()
    first: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: first.update(
            refine(TASK, model=_gated_model(gate), checkpointer=saver(), thread_id="x")
        )
    )
    worker.start()
    assert gate.entered.wait(30)
    other = saver()
    model = FakeChatModel(script={"*": ["never called"]})
    with pytest.raises(ThreadBusyError) as refused:
        refine("Another task", model=model, checkpointer=other, thread_id="x")
    assert refused.value.thread_id == "x"
    assert "wait for that run to finish" in str(refused.value)
    assert "--" not in str(refused.value), "a Python error names no command-line flag"
    assert model.requests == []
    gate.go.set()
    worker.join(30)
    assert first["stop_reason"] == "critic_done"
    graph = create_self_refine_graph("offline").compile(checkpointer=other, name=GRAPH_NAME)
    assert graph.get_state({"configurable": {"thread_id": "x"}}).values["task"] == TASK
    # Free again: a new refinement on the finished thread runs.
    again = refine("Another task", model="offline", checkpointer=other, thread_id="x")
    assert again["attempts"]


def test_concurrent_ainvoke_of_one_thread_runs_once(tmp_path: Path) -> None:
    async def main() -> list[Any]:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.sqlite")) as saver:
            model = FakeChatModel(script={"*": ["a draft"], "critic": [critique(score=0.2)]})
            settings = RefineContext(max_iterations=2)
            graph = create_self_refine_graph(model, settings=settings).compile(checkpointer=saver)
            config: Any = {"configurable": {"thread_id": "y"}}
            return await asyncio.gather(
                graph.ainvoke({"task": TASK}, config),
                graph.ainvoke({"task": TASK}, config),
                return_exceptions=True,
            )

    results = asyncio.run(main())
    assert sum(isinstance(r, ThreadBusyError) for r in results) == 1
    assert sum(isinstance(r, dict) and bool(r["stop_reason"]) for r in results) == 1


def test_the_lock_is_released_when_a_run_fails_or_is_left_early() -> None:
    saver = InMemorySaver()
    failing = FakeChatModel(script={"*": [RuntimeError("down")]})
    graph = create_self_refine_graph(failing).compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "z"}}
    with pytest.raises(Exception, match="down"):
        graph.invoke({"task": TASK}, config)
    working = create_self_refine_graph("offline").compile(checkpointer=saver)
    stream = working.stream(None, config, stream_mode="updates")
    next(stream)
    stream.close()  # the reader stopped after one step
    assert working.invoke(None, config)["stop_reason"]


def test_a_held_lock_lets_its_own_runs_through_and_refuses_others(tmp_path: Path) -> None:
    saver = SqliteSaver(sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False))
    graph = create_self_refine_graph("offline").compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "h"}}
    with thread_lock(saver, "h"):
        assert graph.invoke({"task": TASK}, config)["stop_reason"]
        refused: list[BaseException] = []

        def other() -> None:
            try:
                graph.invoke(None, config)
            except ThreadBusyError as error:
                refused.append(error)

        worker = threading.Thread(target=other)  # a new thread starts with no locks held
        worker.start()
        worker.join(30)
        assert refused and f"pid {os.getpid()}" in refused[0].holder
