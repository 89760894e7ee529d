"""Refine many items at once: bounded concurrency, one checkpointed thread per item.

`BatchRunner` drives each item's thread on an engine (a compiled graph with a
checkpointer, or a LangGraph server) until it finishes, picking up where an
earlier, interrupted run of the same item stopped. With `refine_only_incorrect`
the runs' settings name the judge (`RefineContext.judge`): the graph itself
answers a first draft it accepts as it is ("verified"), recording the judge's
critique; an item whose draft the caller says is right needs no thread at all,
and one the caller says is wrong runs without the judge.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from self_refine.batch.heap import long_lived_frozen
from self_refine.batch.items import BatchItem
from self_refine.batch.judge import ItemVerdicts, Judge
from self_refine.batch.schedule import run_scheduled
from self_refine.errors import BatchStoppedError, ConfigError
from self_refine.nodes.ranking import chosen_attempt
from self_refine.persistence.failures import storage_failure, thread_damage
from self_refine.prompts import get_profile
from self_refine.settings.call import default_select
from self_refine.settings.fields import RefineContext
from self_refine.state import RUN_CONTEXT, Attempt, Critique, add_usage

__all__ = [
    "BatchRunner",
    "Engine",
    "ThreadView",
    "run_items",
    "run_key",
    "thread_id_for",
]

VERIFIED = "verified"
_NAMESPACE = uuid.UUID("6f1d2a8e-5b1c-4f57-9d5e-2f0c3b7a9e41")
_MAX_LEGS = 4
_AFTER_STOP = (
    "; the batch stopped, and the items finished so far are saved: free some disk space "
    "(or fix the storage), then run the batch again to continue it"
)


@dataclass(frozen=True)
class ThreadView:
    """A thread's current values and the nodes it would run next."""

    values: dict[str, Any]
    next: tuple[str, ...] = ()


class Engine(Protocol):
    """Where items run: a compiled graph with a checkpointer, or a LangGraph server."""

    calls_models_here: bool
    """Whether the items' model calls run in this process (so the batch can bound them)."""

    def writer(self, thread_id: str) -> AbstractAsyncContextManager[None]:
        """Hold the thread for one item's whole run (another writer is waited for)."""
        ...

    async def state(self, thread_id: str) -> ThreadView:
        """The thread's current state (empty values for a thread never run)."""
        ...

    async def run(
        self, thread_id: str, payload: dict[str, Any] | None, *, context: RefineContext
    ) -> dict[str, Any]:
        """Start (payload) or continue (None) the thread with the settings `context`;
        return its values when it stops."""
        ...


def run_key(settings: dict[str, Any]) -> str:
    """A short fingerprint of the settings that shape results."""
    text = json.dumps(settings, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def thread_id_for(key: str, item: BatchItem) -> str:
    """The item's thread: the same settings, id and content give the same thread (a UUID)."""
    return str(uuid.uuid5(_NAMESPACE, f"{key}\n{item.id}\n{item.content_key()}"))


def _finished(values: dict[str, Any]) -> bool:
    return bool(values.get("stop_reason")) and "answer" in values


def _payload(item: BatchItem) -> dict[str, Any]:
    payload: dict[str, Any] = {"task": item.task, "id": item.id}
    if item.draft is not None:
        payload["draft"] = item.draft
    if item.reference is not None:
        payload["reference"] = item.reference
    return payload


def _as_given(item: BatchItem) -> dict[str, Any]:
    """The values of an item whose draft the caller says is right: answered as it is."""
    critique = Critique(feedback=[], score=1.0, done=True, source="caller", verified=True)
    attempt: Attempt = {
        "iteration": 0,
        "draft": item.draft or "",
        "critique": critique.model_dump(),
        "usage": add_usage(),
    }
    return {
        "answer": item.draft or "",
        "attempts": [attempt],
        "iterations": 0,
        "stop_reason": VERIFIED,
        "score": 1.0,
        "usage": add_usage(),
    }


@dataclass
class BatchRunner:
    """Runs items on an engine and turns each finished thread into a result record.

    Each item runs with `context`, one whose draft the caller says is wrong with
    `unjudged` (the same settings without the judge). The `select` ("best", "last" or
    "vote") its run kept in its thread (the door may have taken the vote for "auto")
    tells which draft the run would have answered after k steps, for the per-step curve.
    """

    engine: Engine
    context: RefineContext
    unjudged: RefineContext
    judge: Judge | None = None
    refine_only_incorrect: bool = False
    key: str = ""

    def thread_id(self, item: BatchItem) -> str:
        """The item's thread id under this runner's settings."""
        return thread_id_for(self.key, item)

    async def run_item(self, item: BatchItem) -> dict[str, Any]:
        """Refine one item (or finish its interrupted thread) and return its record."""
        verdicts = ItemVerdicts(item, self.judge)
        if self.refine_only_incorrect and item.draft is not None and item.correct:
            return await self._record(item, _as_given(item), None, verdicts, self._select(None))
        thread_id = self.thread_id(item)
        async with self.engine.writer(thread_id):
            context = self.unjudged if item.correct is False else self.context
            values = await self._drive(thread_id, item, context)
            kept = values.get(RUN_CONTEXT)
            if kept is None:  # a run's output leaves its settings out: its thread keeps them
                kept = (await self.engine.state(thread_id)).values.get(RUN_CONTEXT)
        return await self._record(item, values, thread_id, verdicts, self._select(kept))

    async def _drive(
        self, thread_id: str, item: BatchItem, context: RefineContext
    ) -> dict[str, Any]:
        values = (await self.engine.state(thread_id)).values
        for _ in range(_MAX_LEGS):
            if _finished(values):
                return values
            if damage := thread_damage(thread_id, values):
                raise RuntimeError(
                    f"item {item.id!r} cannot go on: {damage}; to run it afresh, give it "
                    "another id in the input (an item's thread follows from its id)"
                )
            payload = None if values else _payload(item)
            values = await self.engine.run(thread_id, payload, context=context)
            if not _finished(values):
                values = (await self.engine.state(thread_id)).values
        raise RuntimeError(
            f"item {item.id!r} did not finish: its thread {thread_id} is paused "
            f"(inspect it with `self-refine show {shlex.quote(thread_id)}`)"
        )

    async def _record(
        self,
        item: BatchItem,
        values: dict[str, Any],
        thread_id: str | None,
        verdicts: ItemVerdicts,
        select: str,
    ) -> dict[str, Any]:
        """The result line of a finished item; `thread_id` None when no thread ran; `select`
        picks the answer after each step for the per-step curve."""
        attempts: list[Attempt] = list(values.get("attempts") or [])
        answer = str(values.get("answer", ""))
        picks = [
            _pick([a for a in attempts if a["iteration"] <= k], select) for k in _steps(attempts)
        ]
        # A step's pick may be a draft its step did not keep (a candidate): judged too.
        drafts = [a["draft"] for a in attempts] + [p["draft"] for p in picks] + [answer]
        correct = (await verdicts.of(drafts)).get
        record: dict[str, Any] = {"id": item.id}
        if item.line is not None:
            record["line"] = item.line
        record.update(
            task=item.task,
            answer=answer,
            first=attempts[0]["draft"] if attempts else answer,
            iterations=int(values.get("iterations") or 0),
            stop_reason=values.get("stop_reason"),
            score=values.get("score"),
            correct_first=correct(attempts[0]["draft"]) if attempts else correct(answer),
            correct_final=correct(answer),
            correct_at=[correct(p["draft"]) for p in picks],
            score_at=[p["critique"].get("score") for p in picks],
            usage=add_usage(values.get("usage")),
            attempts=[{**a, "correct": correct(a["draft"])} for a in attempts],
            thread_id=thread_id,
        )
        for typed in ("structured_response", "structured_error"):
            if typed in values:
                record[typed] = values[typed]
        if self.key:
            record["run_key"] = self.key
        return record

    def _select(self, kept: dict[str, Any] | None) -> str:
        """The select of a run that kept `kept` as its settings; with none kept (no thread
        ran, or one begun before runs kept their settings), the batch's. Unnamed, the
        profile's default (`default_select`)."""
        if not kept:
            named, profile = self.context.select, self.context.profile
        else:
            named, profile = kept.get("select"), kept.get("profile") or self.context.profile
        return str(named or default_select(get_profile(profile).final_answer))

    async def run_all(
        self,
        items: Sequence[BatchItem],
        *,
        concurrency: int,
        on_record: Callable[[BatchItem, dict[str, Any]], Awaitable[None]],
        on_error: Callable[[BatchItem, Exception], Awaitable[None]],
    ) -> None:
        """Run items with at most `concurrency` model calls at once (see `run_items`)."""
        await run_items(
            self.run_item,
            items,
            concurrency=concurrency,
            calls_here=self.engine.calls_models_here,
            on_record=on_record,
            on_error=on_error,
        )


async def run_items(
    run_item: Callable[[BatchItem], Awaitable[dict[str, Any]]],
    items: Sequence[BatchItem],
    *,
    concurrency: int,
    calls_here: bool,
    on_record: Callable[[BatchItem, dict[str, Any]], Awaitable[None]],
    on_error: Callable[[BatchItem, Exception], Awaitable[None]],
) -> None:
    """Run items with at most `concurrency` model calls at once, reporting each as it finishes.

    More items than that are open when the model calls run in this process
    (`calls_here`, see `self_refine.batch.schedule`); otherwise (a LangGraph
    server, Ray actors) `concurrency` items run at a time. An item that fails
    goes to `on_error` and the others go on; an error in the settings
    (ConfigError) stops the whole batch, and so does a failure of the
    storage (a full disk, a damaged database) or of `on_record`
    (BatchStoppedError): every later item would fail the same way.
    """

    async def one(item: BatchItem) -> None:
        try:
            record = await run_item(item)
        except ConfigError:
            raise
        except Exception as error:  # noqa: BLE001 - one item's failure is reported
            if (failure := storage_failure(error)) is not None:
                raise BatchStoppedError(f"{failure}{_AFTER_STOP}") from error
            await on_error(item, error)
            return
        try:
            await on_record(item, record)
        except BatchStoppedError:
            raise
        except Exception as error:
            reason = storage_failure(error) or f"{type(error).__name__}: {error}"
            raise BatchStoppedError(
                f"the result of item {item.id!r} could not be recorded ({reason}){_AFTER_STOP}"
            ) from error

    try:
        with long_lived_frozen():
            await run_scheduled(items, one, concurrency=concurrency, calls_here=calls_here)
    except* (ConfigError, BatchStoppedError) as errors:
        raise errors.exceptions[0] from None


def _pick(attempts: list[Attempt], select: str) -> Attempt:
    chosen = chosen_attempt(attempts, select)
    assert chosen is not None
    return chosen


def _steps(attempts: Sequence[Attempt]) -> list[int]:
    """Refine step counts 0..last, one per attempt."""
    return list(range(max((a["iteration"] for a in attempts), default=-1) + 1))
