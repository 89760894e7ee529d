"""A kill during a step of candidates repeats only the calls that were in flight: each
candidate's draft is saved as its reply comes in, before its critique starts.

A real `self-refine run --candidates 3` against an OpenAI-compatible server on loopback
whose third critique never comes back in time; the process is killed (SIGKILL: no
unwinding, nothing flushed) once the two other candidates are saved, and `resume`
finishes the step.
"""

from __future__ import annotations

import os
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
STEP = ("--candidates", "3", "--max-iterations", "0", "--thread-id", "t", "--db", "db")


def _saved_candidates(workdir: Path) -> int:
    with SqliteSaver.from_conn_string(str(workdir / "db")) as saver:
        graph = create_self_refine_graph(None).compile(checkpointer=saver)
        state = graph.get_state({"configurable": {"thread_id": "t"}})
    return sum(1 for task in state.tasks if task.name == "candidate" and task.result)


def test_a_kill_during_a_critique_keeps_that_candidate_s_draft(workdir: Path) -> None:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    with OpenAIServer(stall_seconds=120) as server:
        # the critiques are asked one at a time: the first two answered, the third stalls
        server.fail_next("ok", times=2, role="critic")
        server.fail_next("stall", times=1, role="critic")
        url = ("--base-url", server.base_url)
        run = subprocess.Popen(
            [sys.executable, "-m", "self_refine.cli", "run", TASK, "--model", "test-model",
             *url, *STEP],
            cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 300
        while not ((workdir / "db").exists() and _saved_candidates(workdir) == 2):
            assert run.poll() is None, f"the run ended first: {run.communicate()}"
            assert time.monotonic() < deadline, "two candidates were never saved"
            time.sleep(0.2)
        run.kill()
        run.communicate(timeout=60)
        assert len(server.chat_requests("generator")) == 3
        assert len(server.chat_requests("critic")) == 3  # one of them still unanswered

        resume = subprocess.run(
            [sys.executable, "-m", "self_refine.cli", "resume", "t", "--db", "db", *url],
            cwd=workdir, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert resume.returncode == 0, resume.stderr
        assert len(server.chat_requests("generator")) == 3, "no draft asked again"
        assert len(server.chat_requests("critic")) == 4, "only the critique in flight again"
