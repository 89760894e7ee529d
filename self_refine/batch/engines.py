"""Where batch items run: a compiled graph with a checkpointer, or a LangGraph server."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from self_refine.batch.runner import ThreadView
from self_refine.context import MAX_ITERATIONS_LIMIT, RefineContext
from self_refine.errors import ConfigError
from self_refine.graphs import recursion_limit

__all__ = ["LocalEngine", "ServerEngine", "is_postgres_url", "open_async_checkpointer"]

_STOP_BEFORE = ["critique"]


def is_postgres_url(db: str) -> bool:
    """Whether --db names a PostgreSQL database rather than an SQLite file."""
    return db.startswith(("postgresql://", "postgres://"))


@asynccontextmanager
async def open_async_checkpointer(
    db: str, *, pool_size: int = 8
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """Open one async checkpointer for a whole batch: SQLite by path, or a postgresql:// URL."""
    if is_postgres_url(db):
        async with _postgres(db, pool_size) as saver:
            yield saver
        return
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from self_refine.persistence.storage import sqlite_path

    async with aiosqlite.connect(str(sqlite_path(db))) as conn:
        # WAL with synchronous=NORMAL: a killed process loses nothing committed; only a
        # power cut can drop the last steps, which a resumed batch then redoes.
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA synchronous=NORMAL")
        yield AsyncSqliteSaver(conn)


@asynccontextmanager
async def _postgres(url: str, pool_size: int) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool
    except ImportError:
        raise ConfigError(
            "a postgresql:// --db needs the postgres extra: "
            "pip install 'langgraph-self-refine[postgres]'"
        ) from None
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url,
        min_size=1,
        max_size=max(1, pool_size),
        open=False,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
    )
    try:
        await pool.open(wait=True, timeout=15)
    except Exception as error:
        raise ConfigError(
            f"cannot connect to the PostgreSQL database ({error}): check the --db URL"
        ) from None
    try:
        saver = AsyncPostgresSaver(pool)
        await saver.setup()
        yield saver
    finally:
        await pool.close()


class LocalEngine:
    """Items as threads of a graph compiled in this process with a checkpointer."""

    calls_models_here = True

    def __init__(self, graph: Any, *, context: RefineContext | None = None) -> None:
        if graph.checkpointer is None:
            raise ConfigError("a batch needs a graph compiled with a checkpointer")
        self.graph = graph
        self.context = context
        self.limit = recursion_limit(MAX_ITERATIONS_LIMIT)

    def _config(self, thread_id: str) -> RunnableConfig:
        return {"configurable": {"thread_id": thread_id}, "recursion_limit": self.limit}

    async def state(self, thread_id: str) -> ThreadView:
        """The thread's values and next nodes."""
        snapshot = await self.graph.aget_state(self._config(thread_id))
        return ThreadView(dict(snapshot.values or {}), tuple(snapshot.next))

    async def run(
        self, thread_id: str, payload: dict[str, Any] | None, *, stop_before_critique: bool
    ) -> dict[str, Any]:
        """Start or continue the thread; its output, or its values if it paused."""
        result = await self.graph.ainvoke(
            payload,
            self._config(thread_id),
            context=self.context,
            interrupt_before=_STOP_BEFORE if stop_before_critique else None,
        )
        return cast(dict[str, Any], result or {})

    async def update(self, thread_id: str, values: dict[str, Any]) -> None:
        """Write values as the critique node."""
        await self.graph.aupdate_state(self._config(thread_id), values, as_node="critique")


class ServerEngine:
    """Items as runs of an assistant on a LangGraph server, driven through langgraph_sdk.

    The server keeps the checkpoints; a thread whose run is still going (the
    batch that started it was killed) is joined rather than started again.
    """

    calls_models_here = False

    def __init__(
        self, url: str, *, assistant_id: str = "self_refine", context: RefineContext | None = None
    ) -> None:
        try:
            from langgraph_sdk import get_client
        except ImportError:
            raise ConfigError(
                "--server needs the studio extra: pip install 'langgraph-self-refine[studio]'"
            ) from None
        self.client = get_client(url=url, api_key=None)
        self.assistant_id = assistant_id
        self.context = _context_dict(context)

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
        self, thread_id: str, payload: dict[str, Any] | None, *, stop_before_critique: bool
    ) -> dict[str, Any]:
        """Run the assistant on the thread and wait for it to stop."""
        result = await self.client.runs.wait(
            thread_id,
            self.assistant_id,
            input=payload,
            context=self.context,
            interrupt_before=_STOP_BEFORE if stop_before_critique else None,
            multitask_strategy="reject",
        )
        return result if isinstance(result, dict) else {}

    async def update(self, thread_id: str, values: dict[str, Any]) -> None:
        """Write values as the critique node."""
        await self.client.threads.update_state(thread_id, values, as_node="critique")


def _context_dict(context: RefineContext | None) -> dict[str, Any] | None:
    if context is None:
        return None
    given = {k: v for k, v in dataclasses.asdict(context).items() if v is not None}
    return given or None
