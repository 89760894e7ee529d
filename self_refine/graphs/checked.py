"""A StateGraph whose compiled graph checks new input before LangGraph writes it.

LangGraph saves a new input to the thread (and discards the thread's pending
tasks, interrupts included) before any node or routing function runs, so a
check made inside the graph comes too late: a refused input would already
have replaced the task of an unfinished run. The compiled graph built here
checks the input against the thread's current state first, in `stream` and
`astream`, which every `invoke`, `ainvoke`, `stream_events` and server run
goes through. The same two methods hold the thread's writer lock
(`persistence/locks.py`) for the whole run, taken before the check, so a
second writer is refused before anything is read or written.

The same door writes the run's context (`RefineContext.kept`: no secrets) into
the state with the input, under `run_context`, which the START node accepts but
the input schema that clients see does not show; the nodes read it back when a
resume or a continuation brings no context of its own.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StateSnapshot

from self_refine.context import RefineContext
from self_refine.errors import ConfigError
from self_refine.persistence.locks import atry_lock, try_lock
from self_refine.state import (
    RUN_CONTEXT,
    RefineInput,
    RefineOutput,
    RefineState,
    validate_input,
)

__all__ = ["CheckedStateGraph", "check_context_names", "check_new_input"]

UNFINISHED_MESSAGE = (
    "this thread has an unfinished refinement: continue it by invoking the graph "
    "with None as the input, or give the new task a new thread id"
)


def check_new_input(payload: Any, thread: StateSnapshot | None) -> None:
    """Raise ConfigError when `payload` may not start a run on `thread` (None: a new thread)."""
    current: Mapping[str, Any] = thread.values if thread is not None else {}
    merged = {**current, **payload} if isinstance(payload, Mapping) else payload
    validate_input(merged)
    if thread is not None and (
        thread.next or (current.get("attempts") and not current.get("stop_reason"))
    ):
        raise ConfigError(UNFINISHED_MESSAGE)


def check_context_names(context: Any) -> None:
    """Raise ConfigError naming a dict context's unknown field and the closest valid name."""
    if not isinstance(context, Mapping):
        return
    names = [f.name for f in dataclasses.fields(RefineContext)]
    for key in context:
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(
                f"unknown context field {key!r}{hint}; valid fields: {', '.join(sorted(names))}"
            )


def with_run_context(payload: Any, context: Any, config: RunnableConfig | None) -> Any:
    """The new input with the run's context to keep (a parent graph's, when nested)."""
    if not isinstance(payload, Mapping):
        return payload
    if context is None:
        parent = ((config or {}).get("configurable") or {}).get("__pregel_runtime")
        context = getattr(parent, "context", None)
    return {**payload, RUN_CONTEXT: RefineContext.coerce(context).kept()}


def _is_new_input(payload: Any) -> bool:
    return payload is not None and not isinstance(payload, Command)


def _is_nested(config: RunnableConfig | None) -> bool:
    configurable = (config or {}).get("configurable") or {}
    return bool(configurable.get("checkpoint_ns"))


class CheckedCompiledGraph(
    CompiledStateGraph[RefineState, RefineContext, RefineInput, RefineOutput]
):
    """A compiled self-refine graph that refuses bad input before writing it."""

    def _thread(self, config: RunnableConfig | None) -> StateSnapshot | None:
        if not self._has_thread(config):
            return None
        return self.get_state(config or {})

    async def _athread(self, config: RunnableConfig | None) -> StateSnapshot | None:
        if not self._has_thread(config):
            return None
        return await self.aget_state(config or {})

    def _has_thread(self, config: RunnableConfig | None) -> bool:
        thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
        return (
            thread_id is not None
            and not isinstance(self.checkpointer, bool)
            and self.checkpointer is not None
            and not _is_nested(config)
        )

    def _thread_id(self, config: RunnableConfig | None) -> str | None:
        thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
        return str(thread_id) if thread_id is not None and self._has_thread(config) else None

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """Check the context, lock the thread, check new input against it, then stream the run."""
        check_context_names(kwargs.get("context"))
        return self._stream_locked(input, config, kwargs)

    def _stream_locked(
        self, input: Any, config: RunnableConfig | None, kwargs: dict[str, Any]
    ) -> Iterator[Any]:
        thread_id = self._thread_id(config)
        release = try_lock(self.checkpointer, thread_id) if thread_id is not None else None
        try:
            if _is_new_input(input):
                check_new_input(input, self._thread(config))
                input = with_run_context(input, kwargs.get("context"), config)
            yield from super().stream(input, config, **kwargs)
        finally:
            if release is not None:
                release()

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """Check the context, lock the thread, check new input against it, then stream the run."""
        check_context_names(kwargs.get("context"))
        thread_id = self._thread_id(config)
        release = await atry_lock(self.checkpointer, thread_id) if thread_id is not None else None
        try:
            if _is_new_input(input):
                check_new_input(input, await self._athread(config))
                input = with_run_context(input, kwargs.get("context"), config)
            async for chunk in super().astream(input, config, **kwargs):
                yield chunk
        finally:
            if release is not None:
                release()

    def bulk_update_state(self, config: RunnableConfig, supersteps: Any) -> RunnableConfig:
        """Write state updates while holding the thread's writer lock."""
        thread_id = self._thread_id(config)
        release = try_lock(self.checkpointer, thread_id) if thread_id is not None else None
        try:
            return super().bulk_update_state(config, supersteps)
        finally:
            if release is not None:
                release()

    async def abulk_update_state(self, config: RunnableConfig, supersteps: Any) -> RunnableConfig:
        """Write state updates while holding the thread's writer lock."""
        thread_id = self._thread_id(config)
        release = await atry_lock(self.checkpointer, thread_id) if thread_id is not None else None
        try:
            return await super().abulk_update_state(config, supersteps)
        finally:
            if release is not None:
                release()


class CheckedStateGraph(StateGraph[RefineState, RefineContext, RefineInput, RefineOutput]):
    """A StateGraph whose `compile()` returns a `CheckedCompiledGraph`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # START writes the keys of the input schema's channels: add the kept context
        # there, leaving the schema's type (and so its JSON schema) as it is.
        given = self.schemas[self.input_schema]
        self.schemas[self.input_schema] = {**given, RUN_CONTEXT: self.channels[RUN_CONTEXT]}

    def compile(self, *args: Any, **kwargs: Any) -> CheckedCompiledGraph:
        """Compile as StateGraph does, with the input check in front of every run."""
        compiled = super().compile(*args, **kwargs)
        compiled.__class__ = CheckedCompiledGraph
        return compiled  # type: ignore[return-value]
