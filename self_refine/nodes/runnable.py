"""`Node`: a node's sync and async bodies, each a `(state, runtime)` function, wrapped once.

LangGraph's `add_node` takes one function: a sync one runs in a thread pool when
the graph is awaited (so a batch's model calls would be capped by the pool's few
workers), an async one cannot run under `invoke`. The loop's nodes need both, so
each is this small `Runnable`, which hands the body the run's `Runtime`
(`langgraph.runtime.get_runtime`) as LangGraph hands it to a function node. It
adds no nested run and inspects no signature per call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.runtime import Runtime, get_runtime

from self_refine.state import RefineState

__all__ = ["Node"]

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
