"""The door of every run: a compiled graph that checks a call before LangGraph writes it.

LangGraph saves a new input to the thread (and discards the thread's pending
tasks, interrupts included) before any node or routing function runs, and it
offers no hook before that write. So a check made inside the graph comes too
late: a refused input would already have replaced the task of an unfinished run.
`CheckedCompiledGraph` checks first, in `stream` and `astream`, which every
`invoke`, `ainvoke`, `stream_events` and server run goes through. Holding the
thread's writer lock (`persistence/locks.py`), so that a second writer is refused
before anything is read or written, it reads the thread once, checks the call
(`settings.call.check`: the call's settings worked out once, and every refusal),
and streams the run with those settings as its context, so every node reads them as
`runtime.context`, with the recursion limit they need (`recursion_limit`; a limit
the caller gave is kept) and room for the run's tasks (`tasks_at_once`). A call the
caller has checked already (the command line, before it opens its storage) is not
checked again (`Checked.checked_for`).

`CheckedStateGraph.compile` builds the subclass from the graph LangGraph compiled,
as `Pregel.copy` copies one (`langgraph_private.checked_copy`: LangGraph's compile
takes no class to build).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import get_runtime
from langgraph.types import StateSnapshot

from self_refine.content import images_held
from self_refine.errors import ConfigError
from self_refine.langgraph_private import checked_copy
from self_refine.persistence.locks import atry_lock, try_lock
from self_refine.settings.call import Checked, Parts, check, is_new_input, run_finished
from self_refine.settings.fields import RefineContext
from self_refine.state import RefineInput, RefineOutput, RefineState

__all__ = [
    "CheckedCompiledGraph",
    "CheckedStateGraph",
    "recursion_limit",
    "run_finished",
]


def recursion_limit(max_iterations: int) -> int:
    """Graph steps a run of `max_iterations` refine steps needs, with a small margin.

    begin, generate (asked again once at most) and critique, then refine (the same)
    and critique per iteration, then finalize; a step of candidates takes two
    (candidate, pick), three in a run that samples or searches, which also plans before
    its first step (begin, planner, then candidate, pick and planner per step, finalize).
    The door gives each run this limit unless its caller gave one.
    """
    return 3 * max_iterations + 8


def tasks_at_once(candidates: int) -> int:
    """LangGraph tasks a run of `candidates` may have open at once: each branch of a step
    of candidates and its reply's own task (`nodes.candidates._draft`), which it waits for,
    and one more.

    A synchronous run's tasks share one pool of `max_concurrency` threads (LangGraph's
    default: Python's, `os.cpu_count() + 4`); an asynchronous run with `max_concurrency`
    holds a slot per open task. With fewer, every thread or slot can hold a branch that
    waits for its reply's task, which then never runs: the run never ends (8 candidates
    on a two-core machine did).
    """
    return 2 * candidates + 1


def _limited(
    config: RunnableConfig | None, own: Any, settings: RefineContext, *, threads: bool
) -> RunnableConfig:
    """`config` with the recursion limit a run of `settings` needs (`recursion_limit`) and
    room for its tasks (`tasks_at_once`): a synchronous run (`threads`) gets a pool of at
    least that many threads; an asynchronous one is left unbounded unless its caller
    bounded it.

    A limit the caller gave (in `config`, or `own`: the graph's `with_config`) is kept;
    inside a parent's run, the limit handed down counts the parent's steps, so the run
    gets at least what it needs. A `max_concurrency` below what a run of several
    candidates needs is refused, or raised inside a parent's run (where the parent chose
    it for its own tasks).
    """
    nested = _is_nested(config)
    needed = recursion_limit(settings.max_iterations)
    given = (config or {}).get("recursion_limit", (own or {}).get("recursion_limit"))
    if given is None:
        limit = needed
    elif nested:
        limit = max(given, needed)
    else:
        limit = given
    limited: RunnableConfig = {**(config or {}), "recursion_limit": limit}
    room = tasks_at_once(settings.candidates)
    bound = (config or {}).get("max_concurrency", (own or {}).get("max_concurrency"))
    if bound is not None:
        # One reply a step runs in the caller's thread (LangGraph runs a step's only task
        # inline), its own task on the pool: a caller's bound of one has always worked.
        if bound < room and settings.candidates > 1:
            if not nested:
                raise ConfigError(
                    f"max_concurrency={bound} is too few for a run of {settings.candidates} "
                    "candidates: each candidate's branch waits for its reply's own task, so "
                    f"the run needs at least {room} (2 x candidates + 1); raise it, lower "
                    "candidates, or leave max_concurrency out"
                )
            bound = room
        limited["max_concurrency"] = bound
    elif threads:
        limited["max_concurrency"] = max(room, min(32, (os.cpu_count() or 1) + 4))
    return limited


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
        nested = _is_nested(config)
        saved = nested or (self.checkpointer is not None and self.checkpointer is not False)
        if isinstance(given, Checked):
            if given.checked_for(input, thread, saved):
                return given.settings
            given = given.settings
        if not nested:
            return self.builder.check_call(input, given, thread=thread, saved=saved).settings
        # Inside a parent's run: the parent hands its context down, and calls this graph
        # with the same input again when it resumes the run this graph left unfinished.
        given = _parent_context() if given is None else given
        if thread is not None and not run_finished(thread):
            return self.builder.check_call(None, given, thread=thread, saved=True).settings
        return self.builder.check_call(input, given, saved=True).settings

    def _checked_ready(
        self, input: Any, given: Any, config: RunnableConfig | None, thread: StateSnapshot | None
    ) -> RefineContext:
        """`_checked`, then every model of the run resolved (`RoleModels.ready`), so that an
        async node finds them made: what `astream` runs in a worker thread."""
        settings = self._checked(input, given, config, thread)
        self.builder.parts.plan(settings).models.ready()
        return settings

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
        if is_new_input(input):
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
            config = _limited(config, self.config, settings, threads=True)
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
            # Off the event loop: the check resolves the run's models, which for the local
            # model reads files, runs a test process and loads the weights.
            settings = await asyncio.to_thread(
                self._checked_ready, input, kwargs.get("context"), config, thread
            )
            kwargs["context"] = settings
            config = _limited(config, self.config, settings, threads=False)
            task = self._task(input, thread, None)
            if task is None and thread is None and not is_new_input(input):
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
    ) -> Checked:
        """The door's check of a call (`settings.call.check`): its settings, once it is known
        to be one that may run; ConfigError otherwise.

        The compiled graph's door calls this for every call, with the thread it read; a
        caller that must refuse a run before it even opens its storage (the command line)
        may call it first, with `saved` saying whether it will save the run, and hand what
        it returns to the door as the call's context: the door does not check it again.
        """
        return check(self.parts, input, context, thread=thread, saved=saved)

    def compile(self, *args: Any, **kwargs: Any) -> CheckedCompiledGraph:
        """Compile as StateGraph does, with the checks in front of every run."""
        return checked_copy(CheckedCompiledGraph, super().compile(*args, **kwargs))
