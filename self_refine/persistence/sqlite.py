"""The SQLite checkpointer an async batch uses: one worker thread, one hop per operation.

LangGraph's `AsyncSqliteSaver` runs every statement of an operation on
aiosqlite's thread and hands each result back to the event loop: saving one
checkpoint takes several round trips between the threads, and a batch of tiny
items spends much of its time in them. This saver is the sync `SqliteSaver`
(the same tables, so a database written by either is read by both) whose async
methods run the whole sync operation on one worker thread: one round trip per
operation, and the event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver

__all__ = ["ThreadedSqliteSaver"]

T = TypeVar("T")


class ThreadedSqliteSaver(SqliteSaver):
    """`SqliteSaver` with async methods that run its sync ones on one worker thread.

    Close it (`close()`) to stop the thread; the connection stays the caller's.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="self-refine-sqlite")

    async def _off_loop(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, functools.partial(call, *args, **kwargs))

    def close(self) -> None:
        """Stop the worker thread once the operations given to it are done."""
        self._worker.shutdown(wait=True)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Get a checkpoint tuple (see `SqliteSaver.get_tuple`)."""
        return await self._off_loop(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """List checkpoints, newest first (see `SqliteSaver.list`)."""

        def listed() -> list[CheckpointTuple]:
            return list(self.list(config, filter=filter, before=before, limit=limit))

        for item in await self._off_loop(listed):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Save a checkpoint (see `SqliteSaver.put`)."""
        return await self._off_loop(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Save a task's writes (see `SqliteSaver.put_writes`)."""
        await self._off_loop(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete a thread's checkpoints and writes."""
        await self._off_loop(self.delete_thread, thread_id)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        """The writes to replay for delta channels (see `SqliteSaver.get_delta_channel_history`)."""
        return await self._off_loop(
            functools.partial(self.get_delta_channel_history, config=config, channels=channels)
        )
