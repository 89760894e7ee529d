"""The door of every run: a compiled graph that checks a call before LangGraph writes it.

LangGraph saves a new input to the thread (and discards the thread's pending
tasks, interrupts included) before any node or routing function runs, and it
offers no hook before that write. So a check made inside the graph comes too
late: a refused input would already have replaced the task of an unfinished run.
`CheckedCompiledGraph` checks first, in `stream` and `astream`, which every
`invoke`, `ainvoke`, `stream_events` and server run goes through. Holding the
thread's writer lock (`persistence/locks.py`), so that a second writer is refused
before anything is read or written, it reads the thread once and:

- works the call's settings out, once (`Parts.settings_for`: the call's context over
  the settings the run began with when it continues one, else over the graph's; a
  nested run's, the parent's context; a strategy of "auto" made the one the run kept,
  or for a new run the one its checks call for), and streams the run with them as its context,
  so every node reads them as `runtime.context`, and with the recursion limit they
  need (`recursion_limit`; a limit the caller gave is kept);
- checks that they suit the graph (`RunPlan.check_settings`: the human critic), that a
  continued run still has its task (`thread_damage`: a thread whose input was removed
  from the database is refused, not run on with an empty task) and keeps the settings
  that shape its tree (`FIXED_SETTINGS`), and for new
  input its shape (`validate_input`), the thread it lands on (an unfinished run,
  `run_finished`, is continued with None, not replaced) and whether a run can start on
  it (`RunPlan.check_start`: critics for the reference, models, images).

`CheckedStateGraph.compile` builds the subclass from the graph LangGraph compiled,
as `Pregel.copy` copies one (`langgraph_private.checked_copy`: LangGraph's compile
takes no class to build).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import get_runtime
from langgraph.types import Command, StateSnapshot

from self_refine.content import images_held
from self_refine.context import RefineContext
from self_refine.errors import ConfigError
from self_refine.input_checks import validate_input
from self_refine.langgraph_private import checked_copy
from self_refine.nodes.parts import Parts
from self_refine.persistence.failures import thread_damage
from self_refine.persistence.locks import atry_lock, try_lock
from self_refine.state import RUN_CONTEXT, RefineInput, RefineOutput, RefineState

__all__ = [
    "FIXED_SETTINGS",
    "CheckedCompiledGraph",
    "CheckedStateGraph",
    "recursion_limit",
    "run_finished",
]

UNFINISHED_MESSAGE = (
    "this thread has an unfinished refinement: continue it by invoking the graph "
    "with None as the input, or give the new task a new thread id"
)


def _is_new_input(payload: Any) -> bool:
    return payload is not None and not isinstance(payload, Command)


def run_finished(thread: StateSnapshot) -> bool:
    """Whether the thread's run has ended: nothing to run next and no step left half-done.

    A run paused or stopped mid-way is not: it has a node to run next, or a step whose
    every branch wrote before the program stopped (nothing is next, but the step's tasks
    are there with their writes, and continuing the thread applies them and goes on),
    or attempts and no stop reason.
    """
    values = thread.values
    unfinished = values.get("attempts") and not values.get("stop_reason")
    return not (thread.next or thread.tasks or unfinished)


def recursion_limit(max_iterations: int) -> int:
    """Graph steps a run of `max_iterations` refine steps needs, with a small margin.

    begin, generate (asked again once at most) and critique, then refine (the same)
    and critique per iteration, then finalize; a step of candidates takes two
    (candidate, pick), three in a run that samples or searches, which also plans before
    its first step (begin, planner, then candidate, pick and planner per step, finalize).
    The door gives each run this limit unless its caller gave one.
    """
    return 3 * max_iterations + 8


FIXED_SETTINGS = ("strategy", "candidates")
"""The settings a continued run cannot change: they shape the tree its steps have begun."""


def _refuse_fixed_changes(kept: Mapping[str, Any] | None, settings: RefineContext) -> None:
    """Raise ConfigError when a continuation changes a setting the run cannot change midway."""
    if not kept:
        return
    began = RefineContext.from_kept({})
    changed = [
        f"{name}={kept.get(name, getattr(began, name))!r} -> {getattr(settings, name)!r}"
        for name in FIXED_SETTINGS
        if getattr(settings, name) != kept.get(name, getattr(began, name))
    ]
    if changed:
        raise ConfigError(
            f"a continued run cannot change {', '.join(changed)}: continue it with the "
            "settings it began with (leave them out), or start the task again on a new "
            "thread with the new ones"
        )


def _refuse_damaged(thread: StateSnapshot | None) -> None:
    """Raise ConfigError when the thread to continue lost its input (`thread_damage`):
    continued, it would run on with an empty task."""
    if thread is None:
        return
    thread_id = (thread.config.get("configurable") or {}).get("thread_id")
    if damage := thread_damage(str(thread_id), thread.values):
        raise ConfigError(f"{damage}: it cannot be continued; start its task again on a new thread")


def _limited(config: RunnableConfig | None, own: Any, settings: RefineContext) -> RunnableConfig:
    """`config` with the recursion limit a run of `settings` needs (`recursion_limit`).

    A limit the caller gave (in `config`, or `own`: the graph's `with_config`) is kept;
    inside a parent's run, the limit handed down counts the parent's steps, so the run
    gets at least what it needs.
    """
    needed = recursion_limit(settings.max_iterations)
    given = (config or {}).get("recursion_limit", (own or {}).get("recursion_limit"))
    if given is None:
        limit = needed
    elif _is_nested(config):
        limit = max(given, needed)
    else:
        limit = given
    return {**(config or {}), "recursion_limit": limit}


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

    def _checked(
        self, input: Any, given: Any, config: RunnableConfig | None, thread: StateSnapshot | None
    ) -> RefineContext:
        if not _is_nested(config):
            saved = self.checkpointer is not None and self.checkpointer is not False
            return self.builder.check_call(input, given, thread=thread, saved=saved)
        # Inside a parent's run: the parent hands its context down, and calls this graph
        # with the same input again when it resumes the run this graph left unfinished.
        given = _parent_context() if given is None else given
        if thread is not None and not run_finished(thread):
            return self.builder.check_call(None, given, thread=thread, saved=True)
        return self.builder.check_call(input, given, saved=True)

    def _thread(self, config: RunnableConfig | None) -> StateSnapshot | None:
        """The thread this call runs on: a saved one, or a parent's run's (if it saves)."""
        if self._thread_id(config) is not None:
            return self.get_state(config or {})
        if _is_nested(config):
            try:
                return self.get_state(config or {})
            except ValueError:  # the parent's run keeps no checkpoints
                return None
        return None

    async def _athread(self, config: RunnableConfig | None) -> StateSnapshot | None:
        """Async twin of _thread()."""
        if self._thread_id(config) is not None:
            return await self.aget_state(config or {})
        if _is_nested(config):
            try:
                return await self.aget_state(config or {})
            except ValueError:
                return None
        return None

    def _task(self, input: Any, thread: StateSnapshot | None, config: RunnableConfig | None) -> Any:
        """The task of the run this call starts or continues, whose inline images the run's
        candidate branches are sent by reference (`content.by_reference`); the door holds
        them while the run streams.

        A server that keeps the threads itself (LangGraph's API server) hands its
        checkpointer down in `config`: a continuation reads the task through it.
        """
        if _is_new_input(input):
            return input.get("task") if isinstance(input, Mapping) else None
        if thread is not None:
            return thread.values.get("task")
        if config is None or not ((config.get("configurable") or {}).get("thread_id")):
            return None
        try:
            return self.get_state(config).values.get("task")
        except ValueError:  # no checkpointer at all: nothing was saved to continue
            return None

    async def _aserved_task(self, config: RunnableConfig | None) -> Any:
        """Async twin of _task() for a continuation on a server's own checkpointer."""
        if config is None or not ((config.get("configurable") or {}).get("thread_id")):
            return None
        try:
            return (await self.aget_state(config)).values.get("task")
        except ValueError:
            return None

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """Lock the thread, read it, check the call and work its settings out, then stream."""
        thread_id = self._thread_id(config)
        release = try_lock(self.checkpointer, thread_id) if thread_id is not None else None
        try:
            thread = self._thread(config)
            settings = self._checked(input, kwargs.get("context"), config, thread)
            kwargs["context"] = settings
            config = _limited(config, self.config, settings)
            with images_held(self._task(input, thread, config)):
                yield from super().stream(input, config, **kwargs)
        finally:
            if release is not None:
                release()

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """Lock the thread, read it, check the call and work its settings out, then stream."""
        thread_id = self._thread_id(config)
        release = await atry_lock(self.checkpointer, thread_id) if thread_id is not None else None
        try:
            thread = await self._athread(config)
            settings = self._checked(input, kwargs.get("context"), config, thread)
            kwargs["context"] = settings
            config = _limited(config, self.config, settings)
            task = self._task(input, thread, None)
            if task is None and thread is None and not _is_new_input(input):
                task = await self._aserved_task(config)
            with images_held(task):
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
    """A StateGraph whose `compile()` returns a `CheckedCompiledGraph` checking with `parts`."""

    def __init__(self, parts: Parts, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.parts = parts

    def check_call(
        self, input: Any, context: Any = None, *, thread: StateSnapshot | None = None, saved: bool
    ) -> RefineContext:
        """The settings of a call (`input`: new input, or None / a Command to continue the
        run on `thread`), once it is known to be one that may run; ConfigError otherwise.

        The compiled graph's door calls this for every call, with the thread it read;
        a caller that must refuse a run before it even opens its storage (the command
        line) may call it first, for new input, with `saved` saying whether it will
        save the run. See the module docstring for what is checked.
        """
        new = _is_new_input(input)
        values: Mapping[str, Any] = thread.values if thread is not None else {}
        if not new:
            # A stored run with no settings kept began before runs kept them: {}.
            kept = values.get(RUN_CONTEXT, {} if values.get("task") else None)
            settings = self.parts.settings_for(context, kept, values)
            plan = self.parts.plan(settings)
            _refuse_damaged(thread)
            plan.check_settings(saved=saved)
            if thread is not None and not run_finished(thread):
                _refuse_fixed_changes(values.get(RUN_CONTEXT), settings)
            return settings
        settings = self.parts.settings_for(context)
        merged = {**values, **input} if isinstance(input, Mapping) else input
        validate_input(merged)
        settings = self.parts.settings_for(settings, None, merged)
        plan = self.parts.plan(settings)
        if thread is not None and not run_finished(thread):
            raise ConfigError(UNFINISHED_MESSAGE)
        plan.check_start(merged, saved=saved)
        return settings

    def compile(self, *args: Any, **kwargs: Any) -> CheckedCompiledGraph:
        """Compile as StateGraph does, with the checks in front of every run."""
        return checked_copy(CheckedCompiledGraph, super().compile(*args, **kwargs))
