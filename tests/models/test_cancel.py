"""A run's StopNewCalls handler refuses model calls once the program stops, and nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.runnables import RunnableLambda

from self_refine.models.cancel import CallCancelled, StopNewCalls, cancel_calls


@pytest.fixture
def handler() -> Iterator[StopNewCalls]:
    yield StopNewCalls()
    cancel_calls(False)


def _chain() -> Any:
    model = FakeListChatModel(responses=["a reply"] * 4)
    return RunnableLambda(lambda text: [("user", text)]) | model | RunnableLambda(str)


def test_calls_go_on_until_the_program_stops_then_none_starts(handler: StopNewCalls) -> None:
    chain = _chain()
    assert "a reply" in chain.invoke("hello", {"callbacks": [handler]})
    cancel_calls()
    with pytest.raises(CallCancelled):
        chain.invoke("hello", {"callbacks": [handler]})


def test_the_handler_is_told_of_model_starts_only(
    handler: StopNewCalls, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each runnable's start and end went to the handler (a dozen events per refine
    iteration) though only a model's start can be refused."""
    told: list[str] = []
    for event in ("on_chain_start", "on_chain_end", "on_chat_model_start", "on_llm_end"):
        real = getattr(handler, event)

        def spy(*args: Any, _event: str = event, _real: Any = real, **kwargs: Any) -> Any:
            told.append(_event)
            return _real(*args, **kwargs)

        monkeypatch.setattr(handler, event, spy)
    _chain().invoke("hello", {"callbacks": [handler]})
    assert told == ["on_chat_model_start", "on_llm_end"]
