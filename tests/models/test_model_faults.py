"""Endpoint faults, injected into the local OpenAI-compatible server, seen through real ChatOpenAI.

Rate limits, server errors, dropped connections and stalls are retried with
backoff up to `max_retries` (counted here as requests the server received);
a model that keeps failing raises one ModelCallError line and leaves the
thread resumable.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from self_refine import ModelCallError, RefineContext, create_self_refine_graph
from self_refine.graphs import GRAPH_NAME
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

TASK = "Write one sentence using the words: dog, frisbee, park."


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(stall_seconds=5) as running:
        yield running


def _run(
    server: OpenAIServer, thread_id: str, saver: InMemorySaver | None = None, **settings: Any
) -> tuple[Any, dict[str, Any], RefineContext]:
    graph = create_self_refine_graph(None).compile(
        checkpointer=saver or InMemorySaver(), name=GRAPH_NAME
    )
    context = RefineContext(
        model="openai:test-model", base_url=server.base_url, api_key="sk-test", **settings
    )
    return graph, {"configurable": {"thread_id": thread_id}}, context


def _attempts(server: OpenAIServer) -> list[Any]:
    """The attempts of a run without faults, for comparison."""
    graph, config, context = _run(server, "reference")
    return list(graph.invoke({"task": TASK}, config, context=context)["attempts"])


@pytest.mark.parametrize(
    ("fault", "role"),
    [("429", "generator"), ("500", "critic"), ("drop", "refiner")],
)
def test_transient_faults_are_retried_and_the_run_is_unchanged(
    server: OpenAIServer, fault: str, role: str
) -> None:
    expected = _attempts(server)
    server.requests.clear()
    server.fail_next(fault, times=2, role=role)
    graph, config, context = _run(server, "faulty", max_retries=2)

    result = graph.invoke({"task": TASK}, config, context=context)

    assert [r.fault for r in server.chat_requests(role)[:3]] == [fault, fault, None]
    assert result["attempts"] == expected
    assert result["stop_reason"] == "critic_done"


def test_a_stalled_request_times_out_and_is_retried(server: OpenAIServer) -> None:
    expected = _attempts(server)
    server.requests.clear()
    server.fail_next("stall", times=1, role="refiner")
    graph, config, context = _run(server, "stall", max_retries=1, timeout=0.5)

    result = graph.invoke({"task": TASK}, config, context=context)

    assert [r.fault for r in server.chat_requests("refiner")[:2]] == ["stall", None]
    assert result["attempts"] == expected


def test_a_model_that_keeps_failing_raises_one_line_and_the_thread_resumes(
    server: OpenAIServer,
) -> None:
    expected = _attempts(server)
    server.requests.clear()
    saver = InMemorySaver()
    server.fail_next("500", times=50, role="refiner")
    graph, config, context = _run(server, "down", saver, max_retries=1)

    with pytest.raises(ModelCallError) as raised:
        graph.invoke({"task": TASK}, config, context=context)

    message = str(raised.value)
    assert "\n" not in message
    assert "refiner model 'test-model'" in message
    assert server.base_url in message
    assert "after 1 retry:" in message and "Error code: 500" in message
    assert len(server.chat_requests("refiner")) == 2  # the call and its one retry
    assert graph.get_state(config).next == ("refine",)

    server.clear_faults()
    result = graph.invoke(None, config, context=context)
    assert result["attempts"] == expected
    assert result["stop_reason"] == "critic_done"


async def test_async_runs_retry_and_fail_the_same_way(server: OpenAIServer) -> None:
    server.fail_next("429", times=1, role="critic")
    server.fail_next("500", times=50, role="refiner")
    graph, config, context = _run(server, "async", max_retries=1)

    with pytest.raises(ModelCallError, match="refiner model 'test-model'"):
        await graph.ainvoke({"task": TASK}, config, context=context)

    assert [r.fault for r in server.chat_requests("critic")][:2] == ["429", None]
    state = await graph.aget_state(config)
    assert [a["iteration"] for a in state.values["attempts"]] == [0]


def test_only_endpoint_failures_count_as_transport_errors() -> None:
    import httpx
    import openai

    from self_refine.models.calls import is_transport_error

    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    too_long = openai.LengthFinishReasonError.__new__(openai.LengthFinishReasonError)

    assert is_transport_error(openai.APIConnectionError(request=request))
    assert is_transport_error(httpx.ReadTimeout("slow", request=request))
    assert is_transport_error(TimeoutError())
    assert not is_transport_error(too_long)  # a reply arrived: not the endpoint's failure
    assert not is_transport_error(ValueError("bad json"))
