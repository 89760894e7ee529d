"""Each node runs as one traced run, passes its config to model calls, and awaits async bodies."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from self_refine import RefineContext, create_self_refine_graph
from self_refine.models.cancel import CallCancelled, StopNewCalls, cancel_calls
from self_refine.models.offline import OfflineModel

TASK = "Write a sentence using the words: dog, frisbee, park."


class _RecordingOffline(OfflineModel):
    """The offline model, noting whether each call came in sync or async."""

    calls: list[str] = []

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.calls.append("sync")
        return super()._generate(messages, *args, **kwargs)

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        self.calls.append("async")
        return super()._generate(messages, *args, **kwargs)


class _ChainStarts(BaseCallbackHandler):
    def __init__(self) -> None:
        self.names: Counter[str] = Counter()

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.names[kwargs.get("name") or ""] += 1


def _graph(model: OfflineModel) -> Any:
    return create_self_refine_graph(model, settings=RefineContext(max_iterations=2)).compile()


def test_each_node_step_is_one_run_in_the_callbacks() -> None:
    handler = _ChainStarts()
    result = _graph(OfflineModel(edits_per_step=1)).invoke({"task": TASK}, {"callbacks": [handler]})
    assert result["stop_reason"] == "max_iterations"
    assert handler.names["generate"] == 1
    assert handler.names["critique"] == 3
    assert handler.names["refine"] == 2
    assert handler.names["finalize"] == 1


def test_model_calls_inside_nodes_stream_under_the_node_that_made_them() -> None:
    graph = _graph(OfflineModel(edits_per_step=1))
    nodes = [
        metadata["langgraph_node"]
        for _, metadata in graph.stream({"task": TASK}, stream_mode="messages")
    ]
    # The model calls, then the answer as the run's last message (see finalize).
    assert Counter(nodes[:-1]) == {"generate": 1, "critique": 3, "refine": 2}
    assert nodes[-1] == "finalize"


async def test_awaiting_the_graph_calls_the_models_asynchronously() -> None:
    model = _RecordingOffline(edits_per_step=1, calls=[])
    result = await _graph(model).ainvoke({"task": TASK})
    assert result["stop_reason"] == "max_iterations"
    assert model.calls == ["async"] * 6


def test_invoking_the_graph_calls_the_models_synchronously() -> None:
    model = _RecordingOffline(edits_per_step=1, calls=[])
    _graph(model).invoke({"task": TASK})
    assert model.calls == ["sync"] * 6


class _ModelCallMetadata(BaseCallbackHandler):
    def __init__(self) -> None:
        self.roles: list[str] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.roles.append((kwargs.get("metadata") or {}).get("role", ""))


async def test_a_watched_run_shows_the_critic_as_a_child_run_with_its_metadata() -> None:
    starts, calls = _ChainStarts(), _ModelCallMetadata()
    config: Any = {"callbacks": [starts, calls]}
    await _graph(OfflineModel(edits_per_step=1)).ainvoke({"task": TASK}, config)
    assert starts.names["offline critic"] == 3
    assert calls.roles.count("critic") == 3


def test_an_unwatched_run_still_critiques_every_draft() -> None:
    result = _graph(OfflineModel(edits_per_step=1)).invoke({"task": TASK})
    assert result["stop_reason"] == "max_iterations"
    assert [a["critique"]["source"] for a in result["attempts"]] == ["offline"] * 3


class _StopNewCallsSeeingRuns(StopNewCalls):
    """The command line's handler, made to note the runs it is handed: what a child run
    nobody watches would cost, seen."""

    ignore_chain = False

    def __init__(self) -> None:
        self.names: Counter[str] = Counter()

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.names[kwargs.get("name") or ""] += 1


def test_a_run_watched_only_by_stop_new_calls_asks_the_critic_without_a_child_run() -> None:
    """The command line's StopNewCalls takes model starts only: a child run per critique
    (callbacks configured, events handed out) would be seen by no one."""
    graph = _graph(OfflineModel(edits_per_step=1))
    alone = _StopNewCallsSeeingRuns()
    result = graph.invoke({"task": TASK}, {"callbacks": [alone]})
    assert [a["critique"]["source"] for a in result["attempts"]] == ["offline"] * 3
    assert alone.names["critique"] == 3 and alone.names["offline critic"] == 0
    beside = _StopNewCallsSeeingRuns()
    graph.invoke({"task": TASK}, {"callbacks": [beside, _ChainStarts()]})
    assert beside.names["offline critic"] == 3


_ROUTES = {
    "route_start": 1,
    "route_after_generate": 1,
    "route_after_step": 3,
    "route_after_refine": 2,
}


@pytest.mark.parametrize("awaited", [False, True])
async def test_a_watched_run_shows_each_routing_as_a_child_run(awaited: bool) -> None:
    starts = _ChainStarts()
    config: Any = {"callbacks": [starts]}
    graph = _graph(OfflineModel(edits_per_step=1))
    if awaited:
        await graph.ainvoke({"task": TASK}, config)
    else:
        graph.invoke({"task": TASK}, config)
    assert {name: starts.names[name] for name in _ROUTES} == _ROUTES


@pytest.mark.parametrize("awaited", [False, True])
async def test_a_run_watched_only_by_stop_new_calls_routes_without_child_runs(
    awaited: bool,
) -> None:
    """Routing is pure: in the command line's runs a child run per routing is seen by no one."""
    graph = _graph(OfflineModel(edits_per_step=1))
    alone = _StopNewCallsSeeingRuns()
    config: Any = {"callbacks": [alone]}
    result = (
        await graph.ainvoke({"task": TASK}, config)
        if awaited
        else graph.invoke({"task": TASK}, config)
    )
    assert result["stop_reason"] == "max_iterations" and len(result["attempts"]) == 3
    assert alone.names["refine"] == 2
    assert {name: alone.names[name] for name in _ROUTES} == dict.fromkeys(_ROUTES, 0)


def test_the_critic_asked_without_a_child_run_is_still_refused_once_calls_stop() -> None:
    graph = _graph(OfflineModel(edits_per_step=1))
    cancel_calls()
    try:
        with pytest.raises(CallCancelled):
            # a draft in the input: the run starts at the critique
            graph.invoke({"task": TASK, "draft": "A dog ran."}, {"callbacks": [StopNewCalls()]})
    finally:
        cancel_calls(False)


def test_watched_reads_the_call_s_own_callbacks_else_those_of_the_run_it_is_inside() -> None:
    from langchain_core.callbacks import CallbackManager
    from langchain_core.runnables import RunnableLambda

    from self_refine.nodes.runnable import watched

    alone, seen = (
        CallbackManager([StopNewCalls()]),
        CallbackManager([StopNewCalls(), _ChainStarts()]),
    )
    assert watched({"callbacks": alone}) is False
    assert watched({"callbacks": seen}) is True
    assert watched(None) is True  # no run around it: configuring decides
    inside: RunnableLambda[Any, tuple[bool, bool]] = RunnableLambda(
        lambda _: (watched(None), watched({"tags": ["x"]}))
    )
    assert inside.invoke({}, {"callbacks": [StopNewCalls()]}) == (False, False)
    assert inside.invoke({}, {"callbacks": [StopNewCalls(), _ChainStarts()]}) == (True, True)
