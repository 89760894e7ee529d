"""The LangGraph details `self_refine.langgraph_private` relies on, checked on real graphs.

These run against every LangGraph release the project declares (`make test`): when an
upgrade changes one of the details, the test named after it fails here.
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import get_runtime
from langgraph.types import Send

from self_refine.langgraph_private import (
    OpeningSqliteSaver,
    checked_copy,
    from_node_task,
    graph_namespace,
)


class _State(TypedDict, total=False):
    x: str
    ys: Annotated[list[str], operator.add]
    seen: Annotated[list[tuple[str, str]], operator.add]


class _Parent(TypedDict, total=False):
    x: Annotated[str, lambda _, new: new]  # each nested run writes it back
    ys: Annotated[list[str], operator.add]
    seen: Annotated[list[tuple[str, str]], operator.add]


def _branch(state: Any) -> dict[str, Any]:
    """A branch a `Send` made: notes the graph it runs in and the checkpoint of its step."""
    task = get_runtime().execution_info
    assert task is not None
    return {"ys": [state["y"]], "seen": [(graph_namespace(task.checkpoint_ns), task.checkpoint_id)]}


def _fan_out(state: _State) -> list[Send]:
    return [Send("branch", {"y": f"{state['x']}{n}"}) for n in range(3)]


def _graph(**compile: Any) -> CompiledStateGraph[Any, Any, Any, Any]:
    """START -> start, which writes x -> three branches, each a `Send`, which write ys."""
    builder = StateGraph(_State)
    builder.add_node("start", lambda state: {"x": state["x"].upper()})
    builder.add_node("branch", _branch)
    builder.add_edge(START, "start")
    builder.add_conditional_edges("start", _fan_out, ["branch"])
    return builder.compile(**compile)


def _config(thread: str = "t") -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


class _Refusing(CompiledStateGraph[Any, Any, Any, Any]):
    """A compiled graph whose `stream` refuses the input "no"."""

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        if input == {"x": "no"}:
            raise ValueError("refused")
        yield from super().stream(input, config, **kwargs)


def test_checked_copy_runs_as_the_compiled_graph_and_refuses_before_the_input_is_written() -> None:
    saver = InMemorySaver()
    compiled = _graph(checkpointer=saver, name="fan")
    checked = checked_copy(_Refusing, compiled)

    assert isinstance(checked, _Refusing)
    assert checked.name == "fan" and checked.checkpointer is saver
    assert checked.get_graph().draw_mermaid() == compiled.get_graph().draw_mermaid()
    ran = checked.invoke({"x": "a"}, _config("one"))
    compiled_ran = compiled.invoke({"x": "a"}, _config("two"))
    assert (
        (ran["x"], ran["ys"])
        == (compiled_ran["x"], compiled_ran["ys"])
        == ("A", ["A0", "A1", "A2"])
    )
    assert isinstance(checked.with_config(recursion_limit=5), _Refusing)
    with pytest.raises(ValueError, match="refused"):
        checked.invoke({"x": "no"}, _config("three"))
    assert checked.get_state(_config("three")).values == {}  # nothing was written


class _Recording(InMemorySaver):
    def __init__(self) -> None:
        super().__init__()
        self.paths: list[tuple[str, tuple[str, ...]]] = []

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self.paths.append((task_path, tuple(channel for channel, _ in writes)))
        super().put_writes(config, writes, task_id, task_path)


def test_from_node_task_tells_a_node_s_own_task_from_one_a_send_made() -> None:
    saver = _Recording()
    _graph(checkpointer=saver).invoke({"x": "a"}, _config())
    # What each task wrote first (LangGraph adds channels of its own after): x, the input
    # and the node start, each its own task; ys, each branch.
    told = [(channels[0], from_node_task(path)) for path, channels in saver.paths]
    assert sorted(told) == [("x", True), ("x", True), ("ys", False), ("ys", False), ("ys", False)]


def test_graph_namespace_and_checkpoint_name_a_step_its_branches_share() -> None:
    graph = _graph(checkpointer=InMemorySaver())
    first = _steps(graph.invoke({"x": "a"}, _config())["seen"])
    assert len(first) == 1 and first[0][0] == ""  # one step, of the top graph
    both = _steps(graph.invoke({"x": "b"}, _config())["seen"])
    assert len(both) == 2 and {graph for graph, _ in both} == {""}  # the thread's next step

    # The graph nested twice in one step of a parent (two `Send`s on one thread): each
    # nested run's branches share a step, and the two runs' steps are apart.
    parent = StateGraph(_Parent)
    parent.add_node("nested", _graph())
    parent.add_conditional_edges(
        START, lambda state: [Send("nested", {"x": x}) for x in state["x"]], ["nested"]
    )
    seen = parent.compile(checkpointer=InMemorySaver()).invoke({"x": "cd"}, _config())["seen"]
    steps = _steps(seen)
    assert len(seen) == 6 and len(steps) == 2
    assert all(graph != "" for graph, _ in steps)
    assert len({graph for graph, _ in steps}) == 2


def _steps(seen: list[Any]) -> list[tuple[str, str]]:
    """The steps the branches noted, each once, in the order first seen."""
    return list(dict.fromkeys((graph, checkpoint) for graph, checkpoint in seen))


class _Opening(OpeningSqliteSaver):
    """Notes each transaction it begins, in the database, with whether it held the lock."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn)
        self.opened: list[tuple[bool, bool]] = []
        """Per transaction begun: whether the lock was held, whether the saver commits it."""

    def opening(self, cur: sqlite3.Cursor, transaction: bool) -> None:
        self.opened.append((self.lock.locked(), transaction))
        if transaction:
            cur.execute("INSERT INTO opened VALUES (?)", (len(self.opened),))


def _kind(sql: str) -> str:
    """What a statement writes: "opened" (the test's own), "saved" (the saver's), else ""."""
    if sql.startswith("INSERT INTO opened"):
        return "opened"
    return "saved" if "INTO checkpoints" in sql or "INTO writes" in sql else ""


@pytest.fixture
def opening(tmp_path: Path) -> Iterator[tuple[_Opening, list[str]]]:
    conn = sqlite3.connect(tmp_path / "db.sqlite", check_same_thread=False)
    conn.execute("CREATE TABLE opened (n INTEGER)")
    conn.commit()
    saver = _Opening(conn)
    saver.setup()
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        yield saver, statements
    finally:
        conn.close()


def test_every_statement_of_sqlite_saver_runs_in_a_transaction_opening_began(
    opening: tuple[_Opening, list[str]], tmp_path: Path
) -> None:
    saver, statements = opening
    graph = _graph(checkpointer=saver)
    graph.invoke({"x": "a"}, _config())
    assert graph.get_state(_config()).values["ys"] == ["A0", "A1", "A2"]

    transactions: list[list[str]] = [[]]
    for sql in statements:
        if sql.startswith("COMMIT"):
            transactions.append([])
        elif not sql.startswith("BEGIN"):
            transactions[-1].append(sql)
    writes = [[_kind(sql) for sql in t if _kind(sql)] for t in transactions]
    saved = [kinds for kinds in writes if "saved" in kinds]
    assert saved and all(kinds[0] == "opened" for kinds in saved)
    assert all(locked for locked, _ in saver.opened)  # each under the saver's lock
    with sqlite3.connect(tmp_path / "db.sqlite") as other:  # committed with its statement
        (rows,) = other.execute("SELECT count(*) FROM opened").fetchone()
    assert rows == sum(transaction for _, transaction in saver.opened)


def test_opening_runs_for_reads_too(opening: tuple[_Opening, list[str]]) -> None:
    saver, _ = opening
    _graph(checkpointer=saver).invoke({"x": "a"}, _config())
    before = len(saver.opened)
    saver.get_tuple(_config())
    list(saver.list(_config()))
    saver.delete_thread("t")
    assert len(saver.opened) == before + 3
