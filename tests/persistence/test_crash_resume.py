"""A run killed (SIGKILL) during a model call resumes from its last completed step.

The model is real ChatOpenAI over HTTP to the local server, which stalls the
second refine request so that the kill lands while a call is in flight. The
resumed run's attempts must equal an uninterrupted run's: none lost, none
duplicated.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from self_refine import RefineContext, create_self_refine_graph
from self_refine.graphs import GRAPH_NAME
from self_refine.models.resolve import resolve_model
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

TASK = "Write one sentence using the words: dog, frisbee, park, catch."
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(stall_seconds=60) as running:
        yield running


def _env() -> dict[str, str]:
    # the key by environment: never on a child's command line
    return dict(
        os.environ, PYTHONPATH=str(ROOT), LANGSMITH_TRACING="false", OPENAI_API_KEY="sk-test"
    )


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "self_refine.cli", *args],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _attempts(db: str, thread_id: str) -> list[dict[str, Any]]:
    """A thread's attempts as stored (read with the offline graph: same channels)."""
    with SqliteSaver.from_conn_string(db) as saver:
        graph = create_self_refine_graph("offline").compile(checkpointer=saver)
        state = graph.get_state({"configurable": {"thread_id": thread_id}})
    return list(state.values["attempts"])


def _kill_when_stalled(process: subprocess.Popen[str], server: OpenAIServer) -> None:
    """SIGKILL the process once the server holds its stalled refine request."""
    deadline = time.monotonic() + 60
    while not any(r.fault == "stall" for r in server.chat_requests("refiner")):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run never reached the stalled request"
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(30)


def _stall_second_refine(server: OpenAIServer) -> None:
    server.fail_next("ok", times=1, role="refiner")
    server.fail_next("stall", times=1, role="refiner")


def test_a_killed_cli_run_resumes_with_the_attempts_of_an_uninterrupted_run(
    server: OpenAIServer, tmp_path: Path
) -> None:
    db = str(tmp_path / "c.sqlite")
    common = ["--model", "openai:test-model", "--base-url", server.base_url, "--db", db]
    common += ["--max-iterations", "5"]
    reference = _cli("run", TASK, "--thread-id", "reference", *common)
    assert reference.returncode == 0, reference.stderr
    expected = _attempts(db, "reference")
    assert len(expected) >= 3  # the crash below lands in the middle of the run

    _stall_second_refine(server)
    process = subprocess.Popen(
        [sys.executable, "-m", "self_refine.cli", "run", TASK, "--thread-id", "crash", *common],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _kill_when_stalled(process, server)
    assert process.returncode == -signal.SIGKILL
    assert _attempts(db, "crash") == expected[:2]  # every step before the kill was kept

    server.clear_faults()
    resumed = _cli("resume", "crash", "--db", db)

    assert resumed.returncode == 0, resumed.stderr
    assert _attempts(db, "crash") == expected
    assert "Stopped: critic_done" in resumed.stdout


def test_a_killed_library_run_resumes_by_invoking_the_graph_with_its_thread_id(
    server: OpenAIServer, tmp_path: Path
) -> None:
    db = str(tmp_path / "lib.sqlite")
    script = textwrap.dedent(
        f"""
        from langgraph.checkpoint.sqlite import SqliteSaver
        from self_refine import refine, resolve_model

        model = resolve_model("openai:test-model", base_url={server.base_url!r}, api_key="k")
        with SqliteSaver.from_conn_string({db!r}) as saver:
            refine({TASK!r}, model=model, checkpointer=saver, thread_id="lib", max_iterations=5)
        """
    )
    model = resolve_model("openai:test-model", base_url=server.base_url, api_key="k")
    with SqliteSaver.from_conn_string(str(tmp_path / "ref.sqlite")) as saver:
        graph = create_self_refine_graph(model, settings=RefineContext(max_iterations=5)).compile(
            checkpointer=saver
        )
        expected = graph.invoke({"task": TASK}, {"configurable": {"thread_id": "ref"}})["attempts"]

    _stall_second_refine(server)
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _kill_when_stalled(process, server)
    server.clear_faults()

    with SqliteSaver.from_conn_string(db) as saver:
        graph = create_self_refine_graph(model, settings=RefineContext(max_iterations=5)).compile(
            checkpointer=saver, name=GRAPH_NAME
        )
        config: Any = {"configurable": {"thread_id": "lib"}}
        assert graph.get_state(config).next == ("refine",)
        assert len(graph.get_state(config).values["attempts"]) == 2
        result = graph.invoke(None, config, durability="sync")

    assert result["attempts"] == expected
    assert [a["iteration"] for a in result["attempts"]] == list(range(len(expected)))
