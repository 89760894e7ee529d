"""When batch items start, and how many model calls a batch has in flight at once."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from self_refine import arefine_batch
from self_refine.batch.schedule import open_items, run_scheduled
from self_refine.models.calls import ainvoke_in_slot
from tests.fakes import FakeChatModel, critique


class _SlowModel(FakeChatModel):
    """A fake model whose async calls take a while, counting how many are in flight."""

    in_flight: int = 0
    peak: int = 0

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(0.02)
            return self._generate(messages, stop, None, **kwargs)
        finally:
            self.in_flight -= 1


def _slow_model() -> _SlowModel:
    drafts = itertools.count()
    return _SlowModel(
        script={
            "generator": [lambda _: f"draft {next(drafts)}"],
            "refiner": [lambda _: f"draft {next(drafts)}"],
            "critic": [critique(["Say more."], score=0.5)],
        }
    )


async def _settle() -> None:
    """Let every task that can run, run (no timers: the work below waits on events)."""
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_batch_keeps_exactly_its_concurrency_of_model_calls_in_flight() -> None:
    model = _slow_model()
    result = await arefine_batch(
        [f"Task {n}" for n in range(10)],
        model=model,
        concurrency=3,
        verifiers=(),
        refine_only_incorrect=False,
        max_iterations=2,
    )
    assert result.errors == {}
    assert [r["iterations"] for r in result.records if r] == [2] * 10
    assert len(model.requests) == 10 * 6  # generate, then critique + refine twice, critique
    assert model.peak == 3


async def test_model_calls_outside_a_batch_are_not_held_back() -> None:
    model = _slow_model()
    messages: Any = [("system", "Role: generator"), ("human", "Write.")]
    await asyncio.gather(*(ainvoke_in_slot(model, messages) for _ in range(5)))
    assert model.peak == 5


async def _starts(count: int, concurrency: int, calls_here: bool) -> list[list[int]]:
    """Which items have started after each of the first items finishes, in order."""
    started: list[int] = []
    finish = {n: asyncio.Event() for n in range(count)}

    async def work(n: int) -> None:
        started.append(n)
        await finish[n].wait()

    batch = asyncio.create_task(
        run_scheduled(range(count), work, concurrency=concurrency, calls_here=calls_here)
    )
    await _settle()
    seen = [list(started)]
    for n in range(count):
        finish[n].set()
        await _settle()
        seen.append(list(started))
    await batch
    return seen


async def test_twice_the_slots_are_open_and_the_last_items_start_together() -> None:
    assert open_items(2) == 4
    seen = await _starts(10, concurrency=2, calls_here=True)
    assert seen[0] == [0, 1, 2, 3]
    assert seen[1] == [0, 1, 2, 3, 4]
    # item 5 takes the place item 1 frees; items 6-9 are the last four: they start at once
    assert seen[2] == list(range(10))


async def test_on_a_server_engine_concurrency_counts_items() -> None:
    seen = await _starts(5, concurrency=2, calls_here=False)
    assert seen[:4] == [[0, 1], [0, 1, 2], [0, 1, 2, 3], [0, 1, 2, 3, 4]]
