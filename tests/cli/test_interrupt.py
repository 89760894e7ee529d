"""Ctrl-C and SIGTERM during a step of candidates: the program stops its model calls and
exits, and `resume` finishes the run from the candidates that were saved.

Each run is a real `self-refine` process: one against an OpenAI-compatible server on
loopback whose reply to one of the three drafts never comes in time, one with the local
model's runtime (llama.cpp in the process). The signal is sent once a candidate of the
first step is saved, so the others are in flight or waiting.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from self_refine import create_self_refine_graph
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

TASK = "Write one sentence using the words: dog, park."
_ONE_STEP = ("--candidates", "3", "--max-iterations", "0", "--thread-id", "t", "--db", "db")


def _start(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "self_refine.cli", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _when_one_is_saved(run: subprocess.Popen[str], workdir: Path, timeout: float = 300) -> None:
    """Wait until the thread has saved a candidate of its first step."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert run.poll() is None, f"the run ended first: {run.communicate()}"
        if (workdir / "db").exists() and _saved_candidates(workdir) >= 1:
            return
        time.sleep(0.2)
    raise AssertionError(f"no candidate was saved in {timeout} s")


def _saved_candidates(workdir: Path) -> int:
    """How many candidates of the step in flight the thread has saved."""
    with SqliteSaver.from_conn_string(str(workdir / "db")) as saver:
        graph = create_self_refine_graph(None).compile(checkpointer=saver)
        state = graph.get_state({"configurable": {"thread_id": "t"}})
    return sum(1 for task in state.tasks if task.name == "candidate" and task.result)


def _step(workdir: Path) -> list[int]:
    """The indexes of the finished step's candidates: the kept one and the others."""
    shown = subprocess.run(
        [sys.executable, "-m", "self_refine.cli", "show", "t", "--db", "db", "--json"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    (attempt,) = json.loads(shown.stdout)["attempts"]
    return sorted([attempt["candidate"], *(c["index"] for c in attempt["candidates"])])


def test_ctrl_c_stops_the_calls_to_a_server_and_resume_runs_only_the_rest(
    workdir: Path,
) -> None:
    with OpenAIServer(stall_seconds=120) as server:
        # Two of the three drafts never come: once the third candidate is saved, no call is
        # due, so a request after the signal is one the stop let start (with one stalled, the
        # other's critique could be asked in the very moment of the signal, before its
        # handler ran, and fail the test without a fault of the run's).
        server.fail_next("stall", times=2, role="generator")
        url = ("--base-url", server.base_url)
        run = _start(
            "run", TASK, "--model", "test-model", *url, *_ONE_STEP, cwd=workdir,
            env={"OPENAI_API_KEY": "sk-test"},
        )  # fmt: skip
        _when_one_is_saved(run, workdir)
        stopped_at = time.monotonic()  # the server's clock
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=60)
        assert run.returncode == 130, err
        assert "self-refine: interrupted; continue with: self-refine resume t --db db" in err
        assert not [r for r in server.chat_requests() if r.time > stopped_at], (
            "no call starts once the run is stopped"
        )
        assert len(server.chat_requests("generator")) == 3
        saved = _saved_candidates(workdir)
        assert 1 <= saved < 3

        resume = subprocess.run(
            [sys.executable, "-m", "self_refine.cli", "resume", "t", "--db", "db", *url],
            cwd=workdir,
            env={**os.environ, "OPENAI_API_KEY": "sk-test"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert resume.returncode == 0, resume.stderr
        assert len(server.chat_requests("generator")) == 3 + (3 - saved), "only the rest asked"
    assert re.search(r"Stopped: \w+ after 0 refine step\(s\)", resume.stdout)
    assert _step(workdir) == [0, 1, 2], "each candidate once: none lost, none repeated"


@pytest.mark.timeout(900)  # three short stories and their critiques, twice over, on a CPU
def test_sigterm_stops_the_local_model_and_resume_finishes_the_step(
    smollm2: str, workdir: Path
) -> None:
    story = "Write a long story about a dog in a park, with many details."
    run = _start("run", story, "--model", smollm2, "--max-tokens", "120", *_ONE_STEP, cwd=workdir)
    _when_one_is_saved(run, workdir)
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 128 + signal.SIGTERM, err
    assert "self-refine: stopped (SIGTERM); continue with: self-refine resume t --db db" in err
    assert 1 <= _saved_candidates(workdir) < 3, "the candidates in flight were cancelled"

    resume = subprocess.run(
        [sys.executable, "-m", "self_refine.cli", "resume", "t", "--db", "db"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert resume.returncode == 0, resume.stderr
    assert re.search(r"Stopped: \w+ after 0 refine step\(s\)", resume.stdout)
    assert _step(workdir) == [0, 1, 2], "each candidate once: none lost, none repeated"


@pytest.mark.parametrize("second", [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_starts_no_call_and_the_program_exits(
    workdir: Path, second: signal.Signals
) -> None:
    # Every reply takes 2 s: the signals come while the three drafts are in flight, and
    # their replies come in after, when the critics would ask next.
    with OpenAIServer(latency=2.0) as server:
        run = _start(
            "run", TASK, "--model", "test-model", "--base-url", server.base_url, *_ONE_STEP,
            cwd=workdir, env={"OPENAI_API_KEY": "sk-test"},
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while len(server.chat_requests("generator")) < 3:
            assert time.monotonic() < deadline, "the three drafts were never asked for"
            assert run.poll() is None, f"the run ended first: {run.communicate()}"
            time.sleep(0.05)
        stopped_at = time.monotonic()
        run.send_signal(signal.SIGINT)
        time.sleep(0.1)
        run.send_signal(second)
        out, err = run.communicate(timeout=60)
        time.sleep(3)  # a call started by a worker thread the exit left behind would be in
        assert run.returncode == 130, err
        assert "self-refine: interrupted; continue with: self-refine resume t --db db" in err
        assert "Traceback" not in err
        late = [r.role for r in server.chat_requests() if r.time > stopped_at]
        assert not late, f"no call starts once the run is stopped, got {late}"
