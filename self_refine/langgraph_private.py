"""What the program takes from LangGraph below its public API, all of it here.

Everything else in `self_refine` uses LangGraph's and LangChain's public API. Three
things the program needs have no public way, and each rests on one detail of
LangGraph's own code, named below. `tests/graphs/test_langgraph_private.py` checks
each detail against a real graph and is among the core tests that `make test` runs
against every LangGraph release the project declares, so an upgrade that changes
one fails there, by name, not somewhere in a run.

- **Refuse a call before LangGraph writes its input** (the door, `graphs/checked.py`).
  LangGraph writes a call's input to the thread before any node runs and has no hook
  before that write; `StateGraph.compile()` builds a `CompiledStateGraph` and takes no
  class to build. `checked_copy` builds the door's subclass of it as `Pregel.copy`
  copies a compiled graph. Relies on: the constructor rebuilds a compiled graph whole
  from its instance attributes (`vars()`), as `Pregel.copy` and `with_config` do.
- **One commit a step** (`persistence/sqlite.StepSqliteSaver`). A checkpointer sees a
  step as separate `put_writes` and `put` calls. `from_node_task` tells a node's own
  task from one a `Send` made; `OpeningSqliteSaver` begins the transaction of every
  statement `SqliteSaver` runs with `opening()`. Relies on: the task path LangGraph
  hands `put_writes` begins with "~__pregel_pull," for a node's own task; `SqliteSaver`
  runs every statement through its `cursor()` (documented as internal), holding
  its `lock` and committing at the end when asked to.
- **Stop a step's siblings** (`nodes/first_verified.StepStops`). The tasks of a step
  share the checkpoint they run from (`Runtime.execution_info.checkpoint_id`, public);
  which graph they run in, for a graph nested in a parent's, has no public name.
  `graph_namespace` is a task's namespace less the task's own part. Relies on: a
  nested task's namespace joins its graph's path and its own part with "|".
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph.state import CompiledStateGraph

__all__ = ["OpeningSqliteSaver", "checked_copy", "from_node_task", "graph_namespace"]

G = TypeVar("G", bound=CompiledStateGraph[Any, Any, Any, Any])

NODE_TASK_PATH = "~__pregel_pull,"
"""How the task path of a node's own task (not one a `Send` made) begins."""
NAMESPACE_SEP = "|"
"""What joins the parts of a nested task's checkpoint namespace."""


def checked_copy(cls: type[G], compiled: CompiledStateGraph[Any, Any, Any, Any]) -> G:
    """`compiled` as an instance of `cls`, a subclass of its class: what `Pregel.copy`
    does, with `cls` for the compiled graph's own class."""
    attributes = {k: v for k, v in vars(compiled).items() if k != "__orig_class__"}
    return cls(**attributes)


def from_node_task(task_path: str) -> bool:
    """Whether writes handed to `put_writes` with `task_path` come from a node's own task
    (True), not from a task a `Send` made (False)."""
    return task_path.startswith(NODE_TASK_PATH)


def graph_namespace(task_namespace: str) -> str:
    """The checkpoint namespace of the graph a task runs in ("" for the top graph),
    from the task's own (`Runtime.execution_info.checkpoint_ns`)."""
    return task_namespace.rpartition(NAMESPACE_SEP)[0]


class OpeningSqliteSaver(SqliteSaver):
    """`SqliteSaver` whose every statement runs in a transaction that `opening()` begins."""

    def opening(self, cur: sqlite3.Cursor, transaction: bool) -> None:
        """Run first in the transaction of each statement this saver runs, holding its lock
        (`transaction`: whether the saver commits at the statement's end)."""

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        """A cursor whose transaction `opening()` has begun."""
        with super().cursor(transaction) as cur:
            self.opening(cur, transaction)
            yield cur
