"""`Node`: a node's sync and async bodies, each a `(state, runtime)` function, wrapped once;
`Route`: a routing function, a child run only for a run someone watches (`watched`).

LangGraph's `add_node` takes one function: a sync one runs in a thread pool when
the graph is awaited (so a batch's model calls would be capped by the pool's few
workers), an async one cannot run under `invoke`. The loop's nodes need both, so
each is this small `Runnable`, which hands the body the run's `Runtime`
(`langgraph.runtime.get_runtime`) as LangGraph hands it to a function node. It
adds no nested run and inspects no signature per call.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda, ensure_config
from langgraph.runtime import Runtime, get_runtime

from self_refine.models.cancel import StopNewCalls
from self_refine.state import RefineState

__all__ = ["Node", "Route", "known_signature", "watched"]

Update = dict[str, Any]
Body = Callable[[Any, Runtime[Any]], Update]
"""A node's body: its input (the state, or what a `Send` gave it) and the run's runtime."""
AsyncBody = Callable[[Any, Runtime[Any]], Awaitable[Update]]


class Node(Runnable[RefineState, Update]):
    """Run `func(state, runtime)` when the graph is invoked, `afunc` when it is awaited.

    Without `afunc` the sync body serves both: only for bodies that never wait on I/O.
    """

    def __init__(self, func: Body, afunc: AsyncBody | None = None, *, name: str) -> None:
        self.func = func
        self.afunc = afunc
        self.name = name

    def invoke(self, input: RefineState, config: RunnableConfig | None = None, **_: Any) -> Update:
        """Run the sync body."""
        return self.func(input, get_runtime())

    async def ainvoke(
        self, input: RefineState, config: RunnableConfig | None = None, **_: Any
    ) -> Update:
        """Run the async body, or the sync one when the node has no I/O."""
        if self.afunc is None:
            return self.func(input, get_runtime())
        return await self.afunc(input, get_runtime())


class Route(Runnable[Any, Any]):
    """A conditional edge's routing function, `func(state)`, as the edge's path.

    A run someone watches (`watched`) sees each routing as a child run named after
    the function, as LangGraph's own wrapper shows it; in a run nobody watches (no
    callback handler but the command line's `StopNewCalls`) the function is called
    directly: routing is pure, and a child run per step would be configured for no one.
    """

    def __init__(self, func: Callable[[Any], Any]) -> None:
        self.func = func
        self.name = func.__name__
        self._traced = RunnableLambda(known_signature(func), name=self.name)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **_: Any) -> Any:
        """Where the run goes from here."""
        if not watched(config):
            return self.func(input)
        return self._traced.invoke(input, config)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **_: Any) -> Any:
        """Where the run goes from here: routing waits on nothing, so the sync call."""
        return self.invoke(input, config)


def known_signature(func: Callable[[Any], Any]) -> Callable[..., Any]:
    """`func` as a one-argument function whose signature inspection finds at once
    (`__signature__`), so that the `RunnableLambda` of a child run does not inspect it
    at every call."""

    def call(value: Any) -> Any:
        return func(value)

    call.__signature__ = inspect.signature(call)  # type: ignore[attr-defined]
    return call


def watched(config: RunnableConfig | None) -> bool:
    """Whether a child run of this call would be seen: a callback handler on its run
    other than `StopNewCalls`.

    Inside a graph the callbacks are the node's, which carry every handler the
    run was configured with (a LangSmith tracer when tracing is on, LangGraph's
    stream handlers); outside one (no callbacks yet), configuring decides. The
    command line's `StopNewCalls` takes model starts only, which reach it from the
    node's callbacks with or without the child run: it watches no run.
    """
    callbacks = (config or {}).get("callbacks")
    if callbacks is None:  # none of its own: those of the run it is inside, if any
        callbacks = ensure_config(config).get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        handlers = [*callbacks.handlers, *callbacks.inheritable_handlers]
        return any(not isinstance(handler, StopNewCalls) for handler in handlers)
    return True
