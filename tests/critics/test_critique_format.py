"""The critic's structured request to an OpenAI-compatible server: the format it sends is
worked out once per critic, not at every call, and is the one the openai SDK makes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from openai.lib._parsing import type_to_response_format_param

from self_refine import RefineContext, create_self_refine_graph
from self_refine.critics.llm import CritiqueReply
from self_refine.graphs import GRAPH_NAME
from tests.openai_server import OpenAIServer
from tests.scripted_responder import ScriptedResponder

pytestmark = pytest.mark.integration

TASK = "Write one sentence using the words: dog, frisbee, park."


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(responder=ScriptedResponder()) as running:
        yield running


def _refine(server: OpenAIServer, **settings: Any) -> dict[str, Any]:
    graph = create_self_refine_graph(None).compile(checkpointer=InMemorySaver(), name=GRAPH_NAME)
    context = RefineContext(
        model="openai:test-model", base_url=server.base_url, api_key="sk-test", **settings
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    return dict(graph.invoke({"task": TASK}, config, context=context))


def test_each_critique_sends_the_sdks_format_worked_out_once(
    server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = type_to_response_format_param(CritiqueReply)
    schemas: list[str] = []
    real = CritiqueReply.model_json_schema

    def counted(*args: Any, **kwargs: Any) -> Any:
        schemas.append("made")
        return real(*args, **kwargs)

    monkeypatch.setattr(CritiqueReply, "model_json_schema", counted)
    result = _refine(server, max_iterations=3)

    critiques = server.chat_requests("critic")
    assert len(critiques) == len(result["attempts"]) == 4
    assert all(c.body.get("response_format") == expected for c in critiques)
    # made as the critic's request is built (its format, and the schema LangChain keeps
    # for traces); the SDK made it again at every call (5 for these 4 critiques)
    assert len(schemas) == 2
