"""The runnable that wraps each node's sync and async bodies.

LangGraph already traces every node as one run and sets the config that model
calls inside it pick up, so a node needs no `RunnableLambda` of its own: that
would add a nested run of the same name and inspect the function's signature
on every call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig

from self_refine.state import RefineState

__all__ = ["NodeRunnable"]

Update = dict[str, Any]


class NodeRunnable(Runnable[RefineState, Update]):
    """Run a node's body: `func` when the graph is invoked, `afunc` when awaited.

    Without `afunc` the sync body serves both; only give none for bodies that
    never wait on I/O.
    """

    def __init__(
        self,
        func: Callable[[RefineState], Update],
        afunc: Callable[[RefineState], Awaitable[Update]] | None = None,
        *,
        name: str,
    ) -> None:
        self.func = func
        self.afunc = afunc
        self.name = name

    def invoke(self, input: RefineState, config: RunnableConfig | None = None, **_: Any) -> Update:
        """Run the sync body."""
        return self.func(input)

    async def ainvoke(
        self, input: RefineState, config: RunnableConfig | None = None, **_: Any
    ) -> Update:
        """Run the async body, or the sync one when the node has no I/O."""
        if self.afunc is None:
            return self.func(input)
        return await self.afunc(input)
