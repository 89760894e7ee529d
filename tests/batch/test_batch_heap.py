"""A batch keeps the objects it starts with out of the collector's full passes, and only
while it runs."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from self_refine import arefine_batch
from tests.fakes import FakeChatModel, critique


class _FreezeWatching(FakeChatModel):
    """A fake model noting, at each call, how many objects the collector leaves alone."""

    frozen: list[int] = []

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        self.frozen.append(gc.get_freeze_count())
        return self._generate(messages, *args, **kwargs)


def _model() -> _FreezeWatching:
    return _FreezeWatching(
        frozen=[],
        script={
            "generator": ["A draft."],
            "refiner": ["A better draft."],
            "critic": [critique(["Say more."], score=0.5)],
        },
    )


async def _batch(model: _FreezeWatching) -> None:
    result = await arefine_batch(
        ["Task one", "Task two"], model=model, concurrency=2, verifiers=(), max_iterations=1
    )
    assert result.errors == {}


async def test_the_objects_alive_at_a_batchs_start_are_frozen_while_it_runs_only() -> None:
    assert gc.get_freeze_count() == 0
    model = _model()
    await _batch(model)
    assert len(model.frozen) == 2 * 4
    assert min(model.frozen) > 0
    assert gc.get_freeze_count() == 0


async def test_a_freeze_the_program_made_itself_is_left_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    called: list[str] = []
    gc.freeze()
    try:
        monkeypatch.setattr(gc, "freeze", lambda: called.append("freeze"))
        monkeypatch.setattr(gc, "unfreeze", lambda: called.append("unfreeze"))
        await _batch(_model())
        assert called == []
        assert gc.get_freeze_count() > 0
    finally:
        monkeypatch.undo()
        gc.unfreeze()
