"""When a batch's items start: more items open than model-call slots, and the last ones together.

Each item makes its model calls one after another, and between two calls the
orchestrator does some work of its own (the graph step, the checkpoint). With
only as many items open as the server has slots, a slot waits for that work
every time; and since items started together finish together, the last few
items run their calls one by one at the end while most slots stand idle.
So a batch whose model calls run in this process keeps twice as many items
open as it has call slots, lets at most `concurrency` calls run at once (first
come, first served), and starts its last items without waiting for a free
place: they then share the slots with the items still running rather than
running alone after them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import nullcontext
from typing import TypeVar

from self_refine.models.calls import model_call_limit

__all__ = ["open_items", "run_scheduled"]

T = TypeVar("T")
_OPEN_PER_SLOT = 2


def open_items(concurrency: int) -> int:
    """How many items a batch keeps open for `concurrency` model-call slots."""
    return _OPEN_PER_SLOT * max(1, concurrency)


async def run_scheduled(
    items: Sequence[T],
    work: Callable[[T], Awaitable[None]],
    *,
    concurrency: int,
    calls_here: bool,
) -> None:
    """Await `work(item)` for every item, in order of the items, as places free up.

    With `calls_here` (the model calls run in this process) at most
    `concurrency` of them run at once, `open_items(concurrency)` items are
    open, and the last `open_items(concurrency)` items start at once; without,
    `concurrency` items run at a time. An exception in one `work` cancels the
    others and is raised in an ExceptionGroup, as asyncio.TaskGroup does.
    """
    bound = open_items(concurrency) if calls_here else max(1, concurrency)
    places = asyncio.Semaphore(bound)

    async def one(item: T, held: bool) -> None:
        try:
            await work(item)
        finally:
            if held:
                places.release()

    with model_call_limit(concurrency) if calls_here else nullcontext():
        async with asyncio.TaskGroup() as group:
            for index, item in enumerate(items):
                held = not calls_here or len(items) - index > bound
                if held:
                    await places.acquire()
                group.create_task(one(item, held))
