"""A batch against a server that refuses json_schema tries it once, however many critiques
run at once (the unmodified llama-cpp-python server answers it with HTTP 500)."""

from __future__ import annotations

import pytest
from langchain_openai import ChatOpenAI

from self_refine import arefine_batch, refine_batch
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

TASKS = [f"Write one sentence using the words: dog, park, kite number {n}." for n in range(6)]


def _model(server: OpenAIServer) -> ChatOpenAI:
    return ChatOpenAI(model="m", base_url=server.base_url, api_key="k", max_retries=0)


def _formats(server: OpenAIServer) -> list[str | None]:
    return [
        (r.body.get("response_format") or {}).get("type") for r in server.chat_requests("critic")
    ]


async def test_concurrent_async_critiques_try_a_refused_format_once() -> None:
    with OpenAIServer(json_schema_status=500, latency=0.05) as server:
        result = await arefine_batch(
            TASKS, model=_model(server), max_iterations=1, concurrency=6, verifiers=()
        )
        formats = _formats(server)
    assert not result.errors
    assert formats.count("json_schema") == 1, formats
    assert formats.count("json_object") == len(formats) - 1 >= len(TASKS)


def test_concurrent_sync_batch_tries_a_refused_format_once() -> None:
    with OpenAIServer(json_schema_status=500, latency=0.05) as server:
        result = refine_batch(
            TASKS, model=_model(server), max_iterations=1, concurrency=6, verifiers=()
        )
        formats = _formats(server)
    assert not result.errors
    assert formats.count("json_schema") == 1, formats


@pytest.mark.parametrize("shape", ["openai", "fastapi"])
def test_a_5xx_naming_the_format_in_any_body_shape_steps_down(shape: str) -> None:
    """openai's client puts only `error.message` in its text; a FastAPI server says `detail`."""
    with OpenAIServer(json_schema_status=500, json_schema_body=shape) as server:
        result = refine_batch(TASKS[:1], model=_model(server), max_iterations=1, verifiers=())
        formats = _formats(server)
    assert not result.errors, result.errors
    assert formats[0] == "json_schema" and "json_object" in formats[1:], formats
