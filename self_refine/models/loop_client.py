"""An async HTTP client for ChatOpenAI that is safe to use from one event loop after another.

langchain-openai shares one async HTTP client per (base URL, timeout) in the whole
process, and its pooled connections belong to the event loop that opened them. A
second `asyncio.run(...)` with the same base URL (a training loop that calls
`arefine_batch` every step, a notebook cell run twice, pytest's loop per test) then
reuses a connection of a closed loop and fails with "Event loop is closed". This
client keeps one pool per running loop; a pool goes with its loop.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

import openai

__all__ = ["LoopLocalAsyncClient"]


class LoopLocalAsyncClient(openai.DefaultAsyncHttpxClient):
    """An `httpx.AsyncClient` (as the openai SDK builds it) that sends through a pool per loop."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._options = options
        self._per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )

    def _for_this_loop(self) -> Any:
        loop = asyncio.get_running_loop()
        client = self._per_loop.get(loop)
        if client is None:
            client = self._per_loop[loop] = openai.DefaultAsyncHttpxClient(**self._options)
        return client

    async def send(self, request: Any, **kwargs: Any) -> Any:
        return await self._for_this_loop().send(request, **kwargs)

    async def aclose(self) -> None:
        client = self._per_loop.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()
        await super().aclose()
