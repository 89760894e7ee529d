"""The Python API reaching an OpenAI-compatible server by base URL and key."""

from __future__ import annotations

import pytest

from self_refine import RefineContext, create_self_refine_graph, refine
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

TASK = "Write a sentence using the words: cat, mat."


def test_refine_takes_a_base_url_and_key(server: OpenAIServer) -> None:
    result = refine(TASK, model="llama3.1:8b", base_url=server.base_url, api_key="sk-local")
    assert result["stop_reason"] == "critic_done"
    requests = server.chat_requests()
    assert requests and all(r.body["model"] == "llama3.1:8b" for r in requests)
    assert {r.headers.get("authorization") for r in requests} == {"Bearer sk-local"}


def test_the_context_brings_base_url_and_key_at_run_time(server: OpenAIServer) -> None:
    graph = create_self_refine_graph("gpt-4o-mini").compile()  # no key anywhere yet
    context = RefineContext(base_url=server.base_url, api_key="sk-from-context")
    result = graph.invoke({"task": TASK}, context=context)
    assert result["stop_reason"] == "critic_done"
    requests = server.chat_requests()
    assert {r.body["model"] for r in requests} == {"gpt-4o-mini"}
    assert {r.headers.get("authorization") for r in requests} == {"Bearer sk-from-context"}
