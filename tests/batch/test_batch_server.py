"""`self-refine batch --server`: the items run on a real `langgraph dev` server, driven
through langgraph_sdk, with the model calls going to the local OpenAI test server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.batch_support import MathDataset, MathResponder, expected, math_dataset
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
LANGGRAPH = Path(sys.executable).with_name("langgraph")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_NO_VERSION_CHECK="true",
    )
    return env


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"langgraph dev exited: {log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    pytest.fail(f"langgraph dev did not become ready: {log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def model_port() -> int:
    """The loopback port every model server of this module listens on: the served graph
    calls only the models and base URLs its deployment lists, so it is named up front."""
    return _free_port()


@pytest.fixture(scope="module")
def langgraph_server(tmp_path_factory: pytest.TempPathFactory, model_port: int) -> Iterator[str]:
    """`langgraph dev` serving the studio graph as `self_refine`, on a free loopback port,
    its deployment allowing the test model at this module's model server."""
    if not LANGGRAPH.exists():
        pytest.skip("langgraph CLI not installed (pip install 'langgraph-self-refine[studio]')")
    home = tmp_path_factory.mktemp("langgraph")
    config = home / "langgraph.json"
    graph = ROOT / "self_refine" / "graphs" / "studio.py"
    config.write_text(
        json.dumps({"dependencies": [str(ROOT)], "graphs": {"self_refine": f"{graph}:graph"}})
    )
    port = _free_port()
    log = home / "server.log"
    allowed = {
        **_env(),
        "SELF_REFINE_ALLOWED_MODELS": "test-model",
        "SELF_REFINE_ALLOWED_BASE_URLS": f"http://127.0.0.1:{model_port}/v1",
    }
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(LANGGRAPH), "dev", "--config", str(config), "--no-browser", "--no-reload",
             "--port", str(port), "--host", "127.0.0.1"],
            cwd=home, env=allowed, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, process, log)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


@pytest.fixture
def dataset() -> MathDataset:
    return math_dataset(per_kind=2)


@pytest.fixture
def model_server(dataset: MathDataset, model_port: int) -> Iterator[OpenAIServer]:
    with OpenAIServer(responder=MathResponder(dataset), port=model_port) as running:
        yield running


def _batch(
    cwd: Path, server: str, model: OpenAIServer, *args: str
) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable, "-m", "self_refine.cli", "batch", "in.jsonl", *args,
        "--server", server, "--model", "test-model", "--base-url", model.base_url,
    ]  # fmt: skip
    return subprocess.run(command, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_server_batch_matches_the_local_result_and_resumes(
    tmp_path: Path, dataset: MathDataset, model_server: OpenAIServer, langgraph_server: str
) -> None:
    dataset.write(tmp_path / "in.jsonl")
    done = _batch(tmp_path, langgraph_server, model_server, "-o", "out.jsonl",
                  "--summary", "s.json", "--concurrency", "4")  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "s.json").read_text())
    want = expected(dataset)
    for key in ("items", "accuracy_first", "accuracy_final", "transitions", "mean_iterations"):
        assert summary[key] == want[key], key
    assert summary["accuracy_by_iteration"] == want["accuracy_by_iteration"]
    records = _records(tmp_path / "out.jsonl")
    assert sorted(r["id"] for r in records) == sorted(i["id"] for i in dataset.items)
    assert "progress: 10/10 items (100%)" in done.stderr

    requests = len(model_server.chat_requests())
    again = _batch(tmp_path, langgraph_server, model_server, "-o", "out.jsonl")
    assert again.returncode == 0, again.stderr
    assert len(model_server.chat_requests()) == requests
    assert _records(tmp_path / "out.jsonl") == records


def test_server_batch_refines_only_incorrect_drafts(
    tmp_path: Path, dataset: MathDataset, model_server: OpenAIServer, langgraph_server: str
) -> None:
    dataset.write(tmp_path / "in.jsonl")
    done = _batch(tmp_path, langgraph_server, model_server, "-o", "out.jsonl",
                  "--refine-only-incorrect", "--summary", "s.json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    critiqued = "\n".join(r.text for r in model_server.chat_requests("critic"))
    for item in dataset.items:
        correct_first = dataset.kinds[item["id"]] in ("cc", "ci")
        assert (item["task"] in critiqued) == (not correct_first)
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["stop_reasons"]["verified"] == 4
    assert summary["accuracy_first"] == 0.4 and summary["accuracy_final"] == 0.8


def test_server_path_fails_fast_when_the_server_is_down(
    tmp_path: Path, dataset: MathDataset, model_server: OpenAIServer
) -> None:
    dataset.write(tmp_path / "in.jsonl")
    done = _batch(tmp_path, f"http://127.0.0.1:{_free_port()}", model_server, "-o", "o.jsonl")
    assert done.returncode == 1
    assert "cannot reach the LangGraph server" in done.stderr
    assert not (tmp_path / "o.jsonl").exists()
    assert model_server.chat_requests() == []


def test_a_killed_server_batch_resumes_without_duplicates(
    tmp_path: Path, langgraph_server: str, model_port: int
) -> None:
    dataset = math_dataset(per_kind=2)
    dataset.write(tmp_path / "in.jsonl")
    # Slow answers: between seeing two items written and the kill, the rest cannot finish.
    with OpenAIServer(responder=MathResponder(dataset), latency=0.8, port=model_port) as model:
        command = [
            sys.executable, "-m", "self_refine.cli", "batch", "in.jsonl", "-o", "out.jsonl",
            "--summary", "s.json", "--concurrency", "3", "--server", langgraph_server,
            "--model", "test-model", "--base-url", model.base_url,
            # A setting that changes no result but the threads' ids: the server still
            # holds the finished threads of the tests above, for the same items.
            "--history-window", "10",
        ]  # fmt: skip
        process = subprocess.Popen(
            command, cwd=tmp_path, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        output = tmp_path / "out.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (
            not output.exists() or len(output.read_text().splitlines()) < 2
        ):
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        finished_at_kill = len(_records(output))
        assert 2 <= finished_at_kill < len(dataset.items)
        resumed = subprocess.run(
            command, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300
        )
        assert resumed.returncode == 0, resumed.stderr
    ids = [r["id"] for r in _records(output)]
    assert sorted(ids) == sorted(i["id"] for i in dataset.items)
    summary = json.loads((tmp_path / "s.json").read_text())
    want = expected(dataset)
    for key in ("accuracy_first", "accuracy_final", "transitions", "mean_iterations"):
        assert summary[key] == want[key], key
