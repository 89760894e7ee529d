"""LangSmith tracing, captured by a local stand-in for the LangSmith API (never the real one).

Each run is a subprocess, because the LangSmith client reads its settings
from the environment once per process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.langsmith_capture import LangSmithCapture
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

TASK = "Write one sentence using the words: dog, frisbee, park."
ROOT = Path(__file__).resolve().parents[1]
MODEL_KEY = "sk-canary-model-4f1c9e27d3"
LANGSMITH_KEY = "lsv2-canary-langsmith-8d2b"
NODES = {"generate", "critique", "refine", "finalize"}


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


@pytest.fixture
def capture() -> Iterator[LangSmithCapture]:
    with LangSmithCapture() as running:
        yield running


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, OpenAIServer]]:
    """One traced command-line run: what the LangSmith stand-in got, and the model server."""
    with LangSmithCapture() as capture, OpenAIServer() as server:
        _cli_run(capture, server, tmp_path_factory.mktemp("traced") / "c.sqlite")
        yield capture.capture, server


def _env(capture: LangSmithCapture, tracing: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_"))}
    env.pop("OPENAI_API_KEY", None)
    env.update(
        PYTHONPATH=str(ROOT),
        LANGSMITH_TRACING=tracing,
        LANGSMITH_ENDPOINT=capture.url,
        LANGSMITH_API_KEY=LANGSMITH_KEY,
        LANGSMITH_PROJECT="self-refine-tests",
    )
    return env


def _cli_run(
    capture: LangSmithCapture, server: OpenAIServer, db: Path, tracing: str = "true"
) -> subprocess.CompletedProcess[str]:
    args = ["run", TASK, "--thread-id", "traced", "--db", str(db)]
    args += ["--model", "openai:test-model", "--base-url", server.base_url]
    done = subprocess.run(  # the key by environment: never on a command line
        [sys.executable, "-m", "self_refine.cli", *args],
        env={**_env(capture, tracing), "OPENAI_API_KEY": MODEL_KEY},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


def _metadata(run: dict[str, Any]) -> dict[str, Any]:
    return dict((run.get("extra") or {}).get("metadata") or {})


def test_a_traced_run_is_one_trace_named_for_the_graph_with_a_child_per_node(
    traced: tuple[Any, OpenAIServer],
) -> None:
    runs = list(traced[0].runs.values())
    roots = [r for r in runs if not r.get("parent_run_id")]
    assert len(roots) == 1
    root = roots[0]
    assert root["name"] == "self_refine"
    assert {r["trace_id"] for r in runs} == {root["id"]}
    assert "self-refine" in root["tags"]
    assert _metadata(root)["thread_id"] == "traced"
    assert _metadata(root)["profile"] == "general"
    assert _metadata(root)["critic_model"] == "openai:test-model"

    children = {r["name"] for r in runs if r.get("parent_run_id") == root["id"]}
    assert NODES <= children


def test_model_calls_carry_iteration_profile_model_tags_and_token_usage(
    traced: tuple[Any, OpenAIServer],
) -> None:
    captured, server = traced
    calls = [r for r in captured.runs.values() if r.get("run_type") == "llm"]
    assert len(calls) == len(server.chat_requests())
    seen = set()
    for call in calls:
        meta = _metadata(call)
        assert meta["thread_id"] == "traced"
        assert meta["profile"] == "general" and meta["model"] == "test-model"
        assert "self-refine" in call["tags"] and meta["langgraph_node"] in call["tags"]
        usage = call["outputs"]["llm_output"]["token_usage"]
        assert usage["total_tokens"] > 0
        seen.add((meta["role"], meta["iteration"]))
    iterations = max(i for _, i in seen)
    assert ("generator", 0) in seen
    assert {("critic", i) for i in range(iterations + 1)} <= seen
    assert {("refiner", i) for i in range(1, iterations + 1)} <= seen


def test_traces_hold_no_api_key(traced: tuple[Any, OpenAIServer]) -> None:
    sent = traced[0].text()
    assert "self_refine" in sent and TASK in sent  # the search below looks at real content
    assert MODEL_KEY not in sent
    assert LANGSMITH_KEY not in sent


def test_a_library_run_with_the_key_in_its_context_traces_no_key(
    capture: LangSmithCapture, server: OpenAIServer, tmp_path: Path
) -> None:
    db = tmp_path / "lib.sqlite"
    script = textwrap.dedent(
        f"""
        import os
        from langgraph.checkpoint.sqlite import SqliteSaver
        from self_refine import GRAPH_NAME, RefineContext, create_self_refine_graph

        key = os.environ.pop("TEST_MODEL_KEY")  # not on the command line; not OPENAI_API_KEY
        context = RefineContext(
            model="openai:test-model", base_url={server.base_url!r}, api_key=key
        )
        with SqliteSaver.from_conn_string({str(db)!r}) as saver:
            graph = create_self_refine_graph(None).compile(checkpointer=saver, name=GRAPH_NAME)
            config = {{"configurable": {{"thread_id": "lib"}}}}
            print(graph.invoke({{"task": {TASK!r}}}, config, context=context)["stop_reason"])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**_env(capture, "true"), "TEST_MODEL_KEY": MODEL_KEY},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "critic_done"
    assert server.chat_requests()[0].headers["authorization"] == f"Bearer {MODEL_KEY}"
    sent = capture.capture.text()
    assert TASK in sent
    assert MODEL_KEY not in sent
    assert all(MODEL_KEY.encode() not in path.read_bytes() for path in tmp_path.iterdir())


def test_tracing_off_sends_nothing(
    capture: LangSmithCapture, server: OpenAIServer, tmp_path: Path
) -> None:
    _cli_run(capture, server, tmp_path / "c.sqlite", tracing="false")

    assert len(server.chat_requests()) > 0
    assert capture.capture.requests == []
