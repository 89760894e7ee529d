"""The unmodified llama-cpp-python server (`python -m llama_cpp.server`) as the model endpoint.

It answers a `json_schema` response format with HTTP 500 and takes `json_object`; the
critic must step down once per model and the run must finish. Every HTTP request the
`ChatOpenAI` client sends is counted by an httpx event hook.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from self_refine import refine
from self_refine.models.fetch import local_model_path
from tests.answer_checks import assert_clean_answer, assert_scores_in_range

pytest.importorskip("llama_cpp.server", reason='needs llama-cpp-python[server] (".[dev]")')
pytestmark = pytest.mark.integration

TASK = "Write one sentence using the words: dog, park."


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's base URL, serving SmolLM2-135M (fetched as `local:smollm2` is)."""
    patch = pytest.MonkeyPatch()
    patch.setenv("SELF_REFINE_MODELS", str(tmp_path_factory.mktemp("models")))
    try:
        path = local_model_path("local:smollm2")
    finally:
        patch.undo()
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(path)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait(port, process, log)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            process.terminate()
            process.wait(timeout=30)


def _wait(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"llama_cpp.server did not start:\n{log.read_text()[-2000:]}")


def _counted_model(base_url: str, formats: list[Any], *, asynchronous: bool = False) -> Any:
    """ChatOpenAI to the server, noting the response format of every chat request."""
    from langchain_openai import ChatOpenAI

    def count(request: httpx.Request) -> None:
        if request.url.path.endswith("/chat/completions"):
            formats.append((json.loads(request.content).get("response_format") or {}).get("type"))

    async def acount(request: httpx.Request) -> None:
        count(request)

    client: dict[str, Any] = (
        {"http_async_client": httpx.AsyncClient(event_hooks={"request": [acount]})}
        if asynchronous
        else {"http_client": httpx.Client(event_hooks={"request": [count]})}
    )
    return ChatOpenAI(
        model="smollm2",
        base_url=base_url,
        api_key="not-needed",
        max_tokens=40,
        max_retries=0,
        **client,
    )


def test_the_run_finishes_and_the_critic_steps_down_once(llama_server: str) -> None:
    formats: list[Any] = []
    model = _counted_model(llama_server, formats)
    result = refine(
        TASK,
        model=model,
        reference={"concepts": ["dog", "park", "zebra"]},  # "zebra": a refine step is needed
        profile="constrained_generation",
        max_iterations=1,
    )
    assert result["stop_reason"] in {"critic_done", "unchanged", "max_iterations", "verified"}
    assert_clean_answer(TASK, result["answer"])
    assert_scores_in_range(result["attempts"])
    assert formats.count("json_schema") == 1, formats
    critic_calls = [f for f in formats if f in ("json_schema", "json_object")]
    assert critic_calls[1:] == ["json_object"] * (len(critic_calls) - 1), formats
    assert len(critic_calls) >= 2, "a second critique went straight to json_object"


def test_a_small_batch_steps_down_once_for_the_model_and_answers_cleanly(
    llama_server: str,
) -> None:
    from self_refine import refine_batch

    formats: list[Any] = []
    model = _counted_model(llama_server, formats, asynchronous=True)
    tasks = [
        TASK,
        "Write one sentence using the words: cat, roof.",
        "Write one sentence using the words: boat, lake.",
    ]
    references = [
        {"concepts": ["dog", "park", "zebra"]},
        {"concepts": ["cat", "roof", "moon"]},
        {"concepts": ["boat", "lake", "owl"]},
    ]
    result = refine_batch(
        tasks,
        model=model,
        references=references,
        profile="constrained_generation",
        max_iterations=1,
        concurrency=3,
    )
    assert not result.errors, result.errors
    for task, record in zip(tasks, result.records, strict=True):
        assert record is not None
        assert_clean_answer(task, record["answer"])
        assert_scores_in_range(record["attempts"])
    assert formats.count("json_schema") == 1, formats
    assert formats.count("json_object") >= 2, formats
