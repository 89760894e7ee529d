"""The program's SQLite checkpointers: a step saved in one transaction; for an async batch,
on one worker thread, one hop per operation.

`StepSqliteSaver` (the command line's, and the batch's below) keeps the writes of a
node's own task (`put_writes`) until the next statement the saver runs and saves them
in that statement's transaction: one commit a step instead of two. That statement is
the step's own checkpoint (`put`) when the writes hold a delta channel, as LangGraph
saves such a step's checkpoint only after its writes: every node here but the search's
planner, whose writes (plain channels, held by its checkpoint too) go with the next
step's first statement. Under `durability="sync"` a step's checkpoint is saved before
the next step starts, so the state a crash can lose is still only the step in flight.
The writes of a task sent to a step of several (a candidate, `Send`) and the
special ones (an error, an interrupt, a resume) are saved at once, as LangGraph's
saver saves them: a run killed in a step of candidates keeps those that finished.
Any read, a delete, `flush()` and closing the saver write what is kept first, so no
reader sees a checkpoint without its writes, and a run that fails keeps its writes.
Which task wrote and where a statement's transaction begins are LangGraph details
with no public API: the saver takes both from `langgraph_private`.

LangGraph's `AsyncSqliteSaver` runs every statement of an operation on
aiosqlite's thread and hands each result back to the event loop: saving one
checkpoint takes several round trips between the threads, and a batch of tiny
items spends much of its time in them. `ThreadedSqliteSaver` is the step saver
above, sync (the same tables as LangGraph's savers, so a database written by
either is read by both), whose async methods run the whole sync operation on one
worker thread: one round trip per operation, and the event loop never waits on
the disk.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver

from self_refine.langgraph_private import OpeningSqliteSaver, from_node_task

__all__ = ["StepSqliteSaver", "ThreadedSqliteSaver"]

T = TypeVar("T")

_KEEP = (
    "INSERT OR IGNORE INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path,"
    " idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class StepSqliteSaver(OpeningSqliteSaver):
    """`SqliteSaver` that saves a node's writes in the transaction of the next statement.

    See the module's docstring. Flush it (`flush()`) before closing its connection;
    the writes it keeps are already serialized, so a value changed later is saved as
    it was written.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn)
        self._kept: list[tuple[Any, ...]] = []
        self._kept_lock = threading.Lock()

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Keep a node's writes for the next statement's transaction; save others now."""
        if self._kept_for_later(writes, task_path):
            self._keep(config, writes, task_id, task_path)
        else:
            super().put_writes(config, writes, task_id, task_path)

    def _keep(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> None:
        """Serialize a node's writes and keep them for the next statement's transaction."""
        conf = config["configurable"]
        where = (str(conf["thread_id"]), str(conf["checkpoint_ns"]), str(conf["checkpoint_id"]))
        rows = [
            (*where, task_id, task_path, index, channel, *self.serde.dumps_typed(value))
            for index, (channel, value) in enumerate(writes)
        ]
        with self._kept_lock:
            self._kept.extend(rows)

    @staticmethod
    def _kept_for_later(writes: Sequence[tuple[str, Any]], task_path: str) -> bool:
        """True for a node's own task's regular writes: they wait for the step's checkpoint."""
        return from_node_task(task_path) and not any(c in WRITES_IDX_MAP for c, _ in writes)

    def opening(self, cur: sqlite3.Cursor, transaction: bool) -> None:
        """Begin each statement's transaction with the writes kept so far (see the module)."""
        with self._kept_lock:
            kept, self._kept = self._kept, []
        if kept:
            try:
                cur.executemany(_KEEP, kept)
                if not transaction:
                    self.conn.commit()
            except BaseException:
                self.conn.rollback()
                with self._kept_lock:
                    self._kept[:0] = kept
                raise

    def flush(self) -> None:
        """Save the writes kept so far, now (nothing to do when none are kept)."""
        if self._kept:
            with self.cursor():
                pass


class ThreadedSqliteSaver(StepSqliteSaver):
    """`StepSqliteSaver` with async methods that run its sync ones on one worker thread.

    Close it (`close()`) to stop the thread; the connection stays the caller's.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="self-refine-sqlite")

    async def _off_loop(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, functools.partial(call, *args, **kwargs))

    def close(self) -> None:
        """Stop the worker thread once the operations given to it are done, and save the
        writes kept for a checkpoint that never came (a run that failed in a step)."""
        self._worker.shutdown(wait=True)
        self.flush()

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
        """Save a task's writes (see `StepSqliteSaver.put_writes`): writes kept for the step's
        checkpoint are only serialized, here, with no hop to the worker thread."""
        if self._kept_for_later(writes, task_path):
            self._keep(config, writes, task_id, task_path)
        else:
            await self._off_loop(SqliteSaver.put_writes, self, config, writes, task_id, task_path)

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
