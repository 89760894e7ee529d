"""The door of every run: a compiled graph that checks a call before LangGraph writes it.

LangGraph saves a new input to the thread (and discards the thread's pending
tasks, interrupts included) before any node or routing function runs, and it
offers no hook before that write. So a check made inside the graph comes too
late: a refused input would already have replaced the task of an unfinished run.
`CheckedCompiledGraph` checks first, in `stream` and `astream`, which every
`invoke`, `ainvoke`, `stream_events` and server run goes through:

- the call's context: a dict's field names, and every value (a dict's fields
  laid over the graph's settings, or over the run's when the call continues it,
  before LangGraph would fill its gaps with the class's defaults);
- new input: its shape (`validate_input`), the thread it lands on (an unfinished
  run is continued with None, not replaced), and whether a run of these settings
  can start on it (`Loop.check_start`: critics, models, a checkpointer for the
  human critic).

The same methods hold the thread's writer lock (`persistence/locks.py`) for the
whole run, taken before the checks, so a second writer is refused before
anything is read or written.

`CheckedStateGraph.compile` builds the subclass the way LangGraph's own
`Pregel.copy` makes a copy: the compiled graph's attributes, given to the
constructor of the class it should be.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import get_runtime
from langgraph.types import Command, StateSnapshot

from self_refine.context import RefineContext, settings_of
from self_refine.errors import ConfigError
from self_refine.input_checks import validate_input
from self_refine.nodes.plan import Loop
from self_refine.persistence.locks import atry_lock, try_lock
from self_refine.state import RefineInput, RefineOutput, RefineState

__all__ = ["CheckedCompiledGraph", "CheckedStateGraph", "check_new_input"]

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


def _is_new_input(payload: Any) -> bool:
    return payload is not None and not isinstance(payload, Command)


def _is_nested(config: RunnableConfig | None) -> bool:
    """True inside a parent graph's run: the run's steps have a namespace of their own."""
    configurable = (config or {}).get("configurable") or {}
    return bool(configurable.get("checkpoint_ns"))


def _parent_context() -> Any:
    """The context of the parent graph's run this call is nested in (None outside one)."""
    try:
        return get_runtime().context
    except RuntimeError:
        return None


class CheckedCompiledGraph(
    CompiledStateGraph[RefineState, RefineContext, RefineInput, RefineOutput]
):
    """A compiled self-refine graph that refuses a bad call before anything is written."""

    builder: CheckedStateGraph

    def _thread_id(self, config: RunnableConfig | None) -> str | None:
        """The thread this call writes, when this graph keeps it (never when nested)."""
        thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
        has_saver = self.checkpointer is not None and not isinstance(self.checkpointer, bool)
        if thread_id is None or not has_saver or _is_nested(config):
            return None
        return str(thread_id)

    def _context(self, given: Any, new: bool, config: RunnableConfig | None) -> Any:
        """The call's context as its settings, before LangGraph would fill a dict's gaps.

        A dict or a parent's dataclass changes the fields it names: over the graph's
        settings for new input, over the run's kept ones when the call continues it.
        """
        if given is None or isinstance(given, RefineContext):
            return given
        loop = self.builder.loop
        if new or self._thread_id(config) is None:
            return settings_of(given, loop.settings)
        return loop.continued_settings(given, self.get_state(config or {}).values)

    async def _acontext(self, given: Any, new: bool, config: RunnableConfig | None) -> Any:
        if given is None or isinstance(given, RefineContext) or new:
            return self._context(given, new, config)
        if self._thread_id(config) is None:
            return settings_of(given, self.builder.loop.settings)
        values = (await self.aget_state(config or {})).values
        return self.builder.loop.continued_settings(given, values)

    def _check_start(self, input: Any, context: Any, config: RunnableConfig | None) -> None:
        """Raise ConfigError when new input may not start a run of these settings."""
        validate_input(input)
        nested = _is_nested(config)
        if context is None and nested:
            context = _parent_context()
        settings = settings_of(context, self.builder.loop.settings)
        saved = nested or (self.checkpointer is not None and self.checkpointer is not False)
        self.builder.loop.check_start(input, settings, saved=saved)

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """Check the call, lock the thread, check new input against it, then stream the run."""
        new = _is_new_input(input)
        kwargs["context"] = self._context(kwargs.get("context"), new, config)
        if new:
            self._check_start(input, kwargs["context"], config)
        return self._stream_locked(input, config, kwargs, new)

    def _stream_locked(
        self, input: Any, config: RunnableConfig | None, kwargs: dict[str, Any], new: bool
    ) -> Iterator[Any]:
        thread_id = self._thread_id(config)
        release = try_lock(self.checkpointer, thread_id) if thread_id is not None else None
        try:
            if new and thread_id is not None:
                check_new_input(input, self.get_state(config or {}))
            yield from super().stream(input, config, **kwargs)
        finally:
            if release is not None:
                release()

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """Check the call, lock the thread, check new input against it, then stream the run."""
        new = _is_new_input(input)
        kwargs["context"] = await self._acontext(kwargs.get("context"), new, config)
        if new:
            self._check_start(input, kwargs["context"], config)
        thread_id = self._thread_id(config)
        release = await atry_lock(self.checkpointer, thread_id) if thread_id is not None else None
        try:
            if new and thread_id is not None:
                check_new_input(input, await self.aget_state(config or {}))
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
    """A StateGraph whose `compile()` returns a `CheckedCompiledGraph` checking with `loop`."""

    def __init__(self, loop: Loop, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.loop = loop

    def compile(self, *args: Any, **kwargs: Any) -> CheckedCompiledGraph:
        """Compile as StateGraph does, with the checks in front of every run."""
        compiled = super().compile(*args, **kwargs)
        # What Pregel.copy does, with the checked class: the same attributes, a new object.
        attributes = {k: v for k, v in vars(compiled).items() if k != "__orig_class__"}
        return CheckedCompiledGraph(**attributes)
