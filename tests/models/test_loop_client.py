"""One resolved ChatOpenAI serves one event loop after another (asyncio.run per step)."""

from __future__ import annotations

import asyncio

import pytest

from self_refine import arefine
from self_refine.models.resolve import resolve_model
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

TASK = "Write one sentence using the words: dog, park."


def test_asyncio_run_twice_with_the_same_server_reuses_no_closed_loops_connection() -> None:
    with OpenAIServer(latency=0.0) as server:
        options = {"model": "openai:test-model", "base_url": server.base_url, "api_key": "k"}
        calls = []
        for _ in range(3):  # the second run failed with "Event loop is closed"
            result = asyncio.run(arefine(TASK, **options))
            assert result["stop_reason"] == "critic_done"
            calls.append(len(server.chat_requests()) - sum(calls))
        assert calls[0] > 0 and calls == [calls[0]] * 3, "each run made its calls over HTTP"


def test_the_model_is_still_one_object_for_every_loop() -> None:
    first = resolve_model("openai:test-model", base_url="http://127.0.0.1:9/v1", api_key="k")
    again = resolve_model("openai:test-model", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert first is again


def test_making_the_client_opens_no_pool_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client object never sends (each loop's pool does), so making it, once per
    resolved model, loads no TLS certificates; the first send on a loop makes that pool."""
    import ssl

    from self_refine.models.loop_client import LoopLocalAsyncClient

    made: list[object] = []
    real = ssl.create_default_context

    def counted(*args: object, **kwargs: object) -> ssl.SSLContext:
        made.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    client = LoopLocalAsyncClient()
    assert made == [], "making the client loaded certificates for a pool it never uses"

    async def pool_of_this_loop() -> object:
        return client._for_this_loop()

    asyncio.run(pool_of_this_loop())
    assert len(made) == 1, "the loop's own pool is made when the loop first sends"
