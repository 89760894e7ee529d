"""A served graph keeps its key: a run's context chooses only among the deployment's models.

The graphs of `studio.json` (`self_refine.graphs.studio`) hold the server's keys in their
environment; a client that names another base_url, model or api_key is refused before any
request leaves the server.
"""

from __future__ import annotations

import importlib
import socket
import threading
from collections.abc import Iterator
from types import ModuleType

import pytest
from langchain_core.messages import HumanMessage

from self_refine import ConfigError, create_self_refine_graph
from tests.openai_server import OpenAIServer

CANARY = "sk-canary-served-5fQ2"


class _Listener:
    """A port on 127.0.0.1 that records every connection made to it."""

    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen()
        self.connections = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self._socket.close()


@pytest.fixture
def listener() -> Iterator[_Listener]:
    found = _Listener()
    yield found
    found.close()


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The studio module as a deployment with an OpenAI model and a canary key serves it."""
    import self_refine.graphs.studio as studio

    monkeypatch.setenv("SELF_REFINE_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("SELF_REFINE_ALLOWED_MODELS", raising=False)
    monkeypatch.delenv("SELF_REFINE_ALLOWED_BASE_URLS", raising=False)
    yield importlib.reload(studio)
    monkeypatch.undo()
    importlib.reload(studio)


TASK = {"task": "Write a haiku about autumn."}


@pytest.mark.parametrize(
    "context",
    [
        {"max_iterations": 0},  # filled in with the listener's URL below
        {"max_iterations": 0, "api_key": "sk-client"},
        {"max_iterations": 0, "critic_model": "openai:gpt-4o-mini"},
    ],
    ids=["base_url", "base_url_and_key", "role_base_url"],
)
def test_a_served_graph_sends_nothing_to_an_address_a_client_names(
    served: ModuleType, listener: _Listener, context: dict[str, object]
) -> None:
    with pytest.raises(ConfigError, match="SELF_REFINE_ALLOWED_BASE_URLS"):
        served.graph.invoke(TASK, context={**context, "base_url": listener.base_url})
    assert listener.connections == 0


def test_a_served_graph_refuses_a_model_or_key_it_does_not_list(served: ModuleType) -> None:
    with pytest.raises(ConfigError, match="SELF_REFINE_ALLOWED_MODELS"):
        served.graph.invoke(TASK, context={"model": "anthropic:claude-3-5-haiku-latest"})
    with pytest.raises(ConfigError, match="api_key"):
        served.graph.invoke(TASK, context={"api_key": "sk-client"})


def test_the_served_chat_graph_sends_nothing_to_an_address_a_client_names(
    served: ModuleType, listener: _Listener
) -> None:
    with pytest.raises(ConfigError, match="SELF_REFINE_ALLOWED_BASE_URLS"):
        served.chat.invoke(
            {"messages": [HumanMessage("Hi")]},
            context={"base_url": listener.base_url, "max_iterations": 0},
        )
    assert listener.connections == 0


def test_a_served_graph_calls_a_base_url_the_deployment_lists(
    monkeypatch: pytest.MonkeyPatch, served: ModuleType
) -> None:
    with OpenAIServer() as server:
        monkeypatch.setenv(
            "SELF_REFINE_ALLOWED_BASE_URLS", f"http://other.invalid,{server.base_url}"
        )
        studio = importlib.reload(served)
        result = studio.graph.invoke(
            TASK, context={"base_url": server.base_url + "/", "max_iterations": 0}
        )
    assert result["answer"]
    assert server.requests


def test_a_library_graph_calls_the_base_url_its_user_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    with OpenAIServer() as server:
        graph = create_self_refine_graph("gpt-4o-mini").compile()
        result = graph.invoke(TASK, context={"base_url": server.base_url, "max_iterations": 0})
    assert result["answer"]
    assert server.requests
