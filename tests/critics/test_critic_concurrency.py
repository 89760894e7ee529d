"""Concurrent critiques wait for one call to try a new model's way of asking, then run at once.

A batch starts its items together, so their first critiques reach the critic
together while the way of asking (json_schema, json_object, plain text) is not
settled yet; one of them tries it and the others wait. Once it has worked, the
waiting critiques must go to the model together, not one after another: a
batch of 64 open items lost 30 s to that queue (the regression of issue 25).
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import PrivateAttr

from self_refine.critics import CritiqueRequest
from self_refine.critics.llm import LLMCritic
from self_refine.prompts import get_profile
from tests.fakes import FakeChatModel, critique

CRITIQUES = 8


class _CountingModel(FakeChatModel):
    """Counts the calls in flight; each async call lets the event loop run many times."""

    _flight: int = PrivateAttr(default=0)
    _most: int = PrivateAttr(default=0)
    _count_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def enter(self) -> None:
        with self._count_lock:
            self._flight += 1
            self._most = max(self._most, self._flight)

    def leave(self) -> None:
        with self._count_lock:
            self._flight -= 1

    @property
    def most_at_once(self) -> int:
        return self._most

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.enter()
        try:
            for _ in range(100):
                await asyncio.sleep(0)
            return self._generate(messages, stop, **kw)
        finally:
            self.leave()


def _requests() -> list[CritiqueRequest]:
    return [CritiqueRequest(task=f"task {n}", draft="a draft", iteration=0) for n in range(8)]


def _model() -> _CountingModel:
    return _CountingModel(script={"critic": [critique(["Add detail."], score=0.4)]})


async def test_critiques_that_waited_for_the_first_go_to_the_model_together() -> None:
    model = _model()
    critic = LLMCritic(model, get_profile("general"))
    results = await asyncio.gather(*(critic.acritique(r) for r in _requests()))
    assert [list(r.critique.feedback) for r in results] == [["Add detail."]] * CRITIQUES
    assert all(sent.structured for sent in model.requests)
    # the first call alone (it tries json_schema), then the seven that waited for it
    assert model.most_at_once == CRITIQUES - 1


def test_sync_critiques_that_waited_for_the_first_go_to_the_model_together() -> None:
    model = _model()
    critic = LLMCritic(model, get_profile("general"))
    arrived = threading.Semaphore(0)
    together = threading.Barrier(CRITIQUES - 1, timeout=60)  # a guard against a hang, not a measure
    first = threading.Lock()

    def reply(messages: list[BaseMessage]) -> dict[str, Any]:
        if first.acquire(blocking=False):  # the trial: hold it until every critique has started
            for _ in range(CRITIQUES):
                arrived.acquire()
        else:
            model.enter()
            try:
                together.wait()  # returns only when the seven others are in flight too
            finally:
                model.leave()
        return critique(["Add detail."], score=0.4)

    model.script["critic"] = [reply]

    def one(request: CritiqueRequest) -> Any:
        arrived.release()
        return critic.critique(request)

    with ThreadPoolExecutor(CRITIQUES) as pool:
        results = list(pool.map(one, _requests()))
    assert [list(r.critique.feedback) for r in results] == [["Add detail."]] * CRITIQUES
    assert model.most_at_once == CRITIQUES - 1
