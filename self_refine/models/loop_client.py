"""An async HTTP client for ChatOpenAI that is safe to use from one event loop after another.

langchain-openai shares one async HTTP client per (base URL, timeout) in the whole
process, and its pooled connections belong to the event loop that opened them. A
second `asyncio.run(...)` with the same base URL (a training loop that calls
`arefine_batch` every step, a notebook cell run twice, pytest's loop per test) then
reuses a connection of a closed loop and fails with "Event loop is closed". This
client keeps one pool per running loop; a pool goes with its loop.

The client itself never sends: it is built on a transport that refuses to, so that
making it (once per resolved model) opens no pool and loads no TLS certificates
(about 25 ms each time); only the pools of the loops that send do.
"""

from __future__ import annotations

import asyncio
import sys
import weakref
from typing import Any

import openai

__all__ = ["LoopLocalAsyncClient"]


def _client_transport_base() -> type:
    """The transport base class of the HTTP library the openai SDK's client is built on."""
    client_base = openai.DefaultAsyncHttpxClient.__mro__[1]
    return vars(sys.modules[client_base.__module__.split(".")[0]])["AsyncBaseTransport"]


class _NoTransport(_client_transport_base()):  # type: ignore[misc]
    """The transport of the client object itself, which sends through its loops' pools."""

    async def handle_async_request(self, request: Any) -> Any:
        raise RuntimeError("LoopLocalAsyncClient sends through the pool of the running loop")


class LoopLocalAsyncClient(openai.DefaultAsyncHttpxClient):
    """An `httpx.AsyncClient` (as the openai SDK builds it) that sends through a pool per loop."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**{**options, "transport": _NoTransport()})
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
