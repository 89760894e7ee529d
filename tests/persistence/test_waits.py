"""A wait on another process says what it waits for, while it waits, and why it gave up.

Two waits are the database's: another connection holding SQLite's write lock (another
self-refine command, the sqlite3 shell), which a command waits out for up to 60 s, and
another process running an item's thread (a second batch on the same database and
settings), which a batch waits out for as long as it takes. Run as a user runs them:
the `self-refine` program in a child process, the lock held by another process.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from self_refine.cli.main import main
from self_refine.persistence import storage
from tests.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]

_HOLDER = textwrap.dedent(
    """
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")  # the write lock, as the sqlite3 shell's BEGIN takes it
    print("locked", flush=True)
    sys.stdin.read()  # held until the test closes our standard input
    """
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture
def write_lock(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the write lock of lk.sqlite (a database already in use)."""
    db = tmp_path / "lk.sqlite"
    assert main(["run", "a first task", "--model", "offline", "--db", str(db)]) == 0
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
    try:
        yield holder
    finally:
        holder.kill()
        holder.wait()


def _lines_until(process: subprocess.Popen[str], words: str, seconds: float) -> list[str]:
    """Standard error's lines as they come, until one holds `words` (or time runs out)."""
    assert process.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stderr], [], [], 0.2)
        if ready:
            line = process.stderr.readline()
            if not line:
                break
            lines.append(line)
            if words in line:
                break
    return lines


def test_a_run_waiting_for_the_write_lock_says_so_while_it_waits(
    tmp_path: Path, write_lock: subprocess.Popen[str]
) -> None:
    run = subprocess.Popen(
        [sys.executable, "-m", "self_refine.cli", "run", "a task about dogs", "--model",
         "offline", "--db", "lk.sqlite"],
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        said = _lines_until(run, "waiting for the database", 30)
        assert said and "waiting for the database 'lk.sqlite'" in said[-1], said
        assert "another connection holds its write lock" in said[-1]
        assert "for up to 60 s" in said[-1]
        assert write_lock.stdin is not None
        write_lock.stdin.close()  # the other program ends its transaction
        out, err = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 0, err
    assert "Stopped:" in out


def test_a_run_that_gives_up_on_the_write_lock_names_the_lock(
    workdir: Path,
    write_lock: subprocess.Popen[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(storage, "BUSY_SECONDS", 3.0)
    assert main(["run", "a task about dogs", "--model", "offline", "--db", "lk.sqlite"]) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert any("waiting for the database 'lk.sqlite'" in line for line in error), error
    assert "stayed locked by another connection" in error[-1], error
    assert "check the disk" not in error[-1] and "steps before this one are saved" not in error[-1]


def _responder_gate(gate: Path) -> object:
    def respond(messages: list[dict[str, object]], request: dict[str, object]) -> str:
        while not gate.exists():
            time.sleep(0.05)
        system = str(messages[0].get("content", ""))
        if system.startswith("Role: critic"):
            return json.dumps({"feedback": [], "score": 1.0, "done": True})
        return "The answer is 42."

    return respond


def test_a_batch_waiting_for_a_thread_another_batch_runs_names_it_and_its_holder(
    tmp_path: Path,
) -> None:
    gate = tmp_path / "answer-now"
    (tmp_path / "in.jsonl").write_text(json.dumps({"id": "a", "task": "What is 6 * 7?"}) + "\n")
    with OpenAIServer(responder=_responder_gate(gate)) as server:  # type: ignore[arg-type]
        flags = ["--model", "test-model", "--base-url", server.base_url, "--db", "b.sqlite"]

        def batch(output: str) -> subprocess.Popen[str]:
            return subprocess.Popen(
                [sys.executable, "-m", "self_refine.cli", "batch", "in.jsonl", "-o", output,
                 *flags],
                cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip

        first = batch("one.jsonl")
        second = None
        try:
            deadline = time.monotonic() + 60
            while not server.requests:  # the first batch is in its item, holding its thread
                assert time.monotonic() < deadline and first.poll() is None
                time.sleep(0.05)
            first.send_signal(signal.SIGSTOP)
            second = batch("two.jsonl")
            said = _lines_until(second, "waiting for thread", 30)
            assert said and f"pid {first.pid} on " in said[-1], said
            assert "stopped" in said[-1] and f"kill -CONT {first.pid}" in said[-1]
            first.send_signal(signal.SIGCONT)
            gate.touch()
            assert first.wait(timeout=60) == 0
            assert second.wait(timeout=60) == 0
        finally:
            for process in (first, second):
                if process is not None and process.poll() is None:
                    process.send_signal(signal.SIGCONT)
                    process.kill()
    generator_calls = [r for r in server.requests if r.role == "generator"]
    assert len(generator_calls) == 1, "the second batch took the first one's thread"
