"""Where batch items run: a compiled graph with a checkpointer, or a LangGraph server."""

from __future__ import annotations

import dataclasses
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any, cast

from langchain_core.runnables import RunnableConfig

from self_refine.batch.runner import Engine, ThreadView
from self_refine.errors import ConfigError, install_hint
from self_refine.graphs import GRAPH_NAME
from self_refine.persistence.locks import athread_lock
from self_refine.settings.fields import RefineContext

__all__ = [
    "LocalEngine",
    "ServerEngine",
    "check_server",
    "open_engine",
]


def check_server(url: str) -> None:
    """Fail fast, before any model call, when the LangGraph server at `url` does not answer."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/ok", timeout=10) as reply:
            reply.read()
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise RuntimeError(
            f"cannot reach the LangGraph server at {url} ({reason}): "
            "start it (e.g. `langgraph dev --config studio.json`) or fix --server"
        ) from None


@asynccontextmanager
async def open_engine(
    *,
    builder: Any = None,
    db: str | None = None,
    server: str | None = None,
    pool_size: int = 8,
) -> AsyncIterator[Engine]:
    """The LangGraph server at `server`, else `builder` compiled with the checkpointer of `db`."""
    if server:
        remote = ServerEngine(server)
        await remote.check()
        yield remote
        return
    if builder is None or db is None:
        raise ConfigError("a local batch needs a graph builder and a database")
    from self_refine.persistence.storage import open_async_checkpointer

    async with open_async_checkpointer(db, pool_size=pool_size) as saver:
        yield LocalEngine(builder.compile(checkpointer=saver, name=GRAPH_NAME))


class LocalEngine:
    """Items as threads of a graph compiled in this process with a checkpointer."""

    calls_models_here = True

    def __init__(self, graph: Any) -> None:
        if graph.checkpointer is None:
            raise ConfigError("a batch needs a graph compiled with a checkpointer")
        self.graph = graph

    def _config(self, thread_id: str) -> RunnableConfig:
        return {"configurable": {"thread_id": thread_id}}

    def writer(self, thread_id: str) -> AbstractAsyncContextManager[None]:
        """Hold the thread's writer lock for one item, waiting while another process has it.

        Another batch on the same database and settings runs the same threads:
        this one waits for each it is running, then finds it finished.
        """
        return athread_lock(self.graph.checkpointer, thread_id, wait=True)

    async def state(self, thread_id: str) -> ThreadView:
        """The thread's values and next nodes."""
        snapshot = await self.graph.aget_state(self._config(thread_id))
        return ThreadView(dict(snapshot.values or {}), tuple(snapshot.next))

    async def run(
        self, thread_id: str, payload: dict[str, Any] | None, *, context: RefineContext
    ) -> dict[str, Any]:
        """Start or continue the thread; its output, or its values if it paused."""
        result = await self.graph.ainvoke(payload, self._config(thread_id), context=context)
        return cast(dict[str, Any], result or {})


class ServerEngine:
    """Items as runs of an assistant on a LangGraph server, driven through langgraph_sdk.

    The server keeps the checkpoints; a thread whose run is still going (the
    batch that started it was killed) is joined rather than started again.
    """

    calls_models_here = False

    def writer(self, thread_id: str) -> AbstractAsyncContextManager[None]:
        """Nothing to hold: the server runs one run per thread (a second one is rejected)."""
        return nullcontext()

    def __init__(self, url: str, *, assistant_id: str = "self_refine") -> None:
        try:
            from langgraph_sdk import get_client
        except ImportError:
            raise ConfigError(
                f"--server needs the studio extra: {install_hint('studio')}"
            ) from None
        self.client = get_client(url=url, api_key=None)
        self.assistant_id = assistant_id

    async def check(self) -> None:
        """Fail fast when the server does not serve the assistant."""
        found = await self.client.assistants.search(graph_id=self.assistant_id, limit=1)
        if not found:
            raise ConfigError(
                f"the LangGraph server has no graph {self.assistant_id!r}: serve studio.json "
                "(graph id self_refine), or fix --server"
            )

    async def state(self, thread_id: str) -> ThreadView:
        """The thread's values and next nodes, after any run still going on it."""
        thread = await self.client.threads.create(
            thread_id=thread_id, if_exists="do_nothing", graph_id=self.assistant_id
        )
        if thread.get("status") == "busy":
            for status in ("running", "pending"):
                for run in await self.client.runs.list(thread_id, status=status):
                    await self.client.runs.join(thread_id, run["run_id"])
        state = await self.client.threads.get_state(thread_id)
        values = state.get("values")
        return ThreadView(
            dict(values) if isinstance(values, dict) else {}, tuple(state.get("next") or ())
        )

    async def run(
        self, thread_id: str, payload: dict[str, Any] | None, *, context: RefineContext
    ) -> dict[str, Any]:
        """Run the assistant on the thread and wait for it to stop."""
        result = await self.client.runs.wait(
            thread_id,
            self.assistant_id,
            input=payload,
            context=_context_dict(context),
            multitask_strategy="reject",
        )
        return result if isinstance(result, dict) else {}


def _context_dict(context: RefineContext) -> dict[str, Any]:
    """The context as the server's run takes it: JSON, never the API key (the server's own
    environment holds the key it calls models with, and a run's context is stored)."""
    return {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in dataclasses.asdict(context).items()
        if v is not None and k != "api_key"
    }
