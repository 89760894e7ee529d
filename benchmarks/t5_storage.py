"""Target 5: reading a thread back, and what it is traded against: storage that grows linearly.

Runs the library's graph for 50 and for 100 iterations of 2 KB drafts and
2 KB critiques (a scripted model) and measures the database it leaves: the
SQLite file (the command line's own storage) and the PostgreSQL tables; and
the time to read the thread back (`get_state`, and for SQLite `self-refine
show` in this process). The same graph with the naive layout (an
`operator.add` attempts list, plain channels for the texts, so a read is one
plain checkpoint read) runs beside it, and so does the library's layout with
DeltaChannel's default snapshot cadence. The storage rows were round one's
targets (kept as its goals); reads are round two's target 5.
"""

from __future__ import annotations

import contextlib
import io
import json
import operator
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.channels.delta import DeltaChannel
from langgraph.channels.last_value import LastValue
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph

import self_refine.settings.fields
from benchmarks.pg import PostgresUnavailable, throwaway_postgres
from benchmarks.report import Row, median, suite_main
from benchmarks.scripted import ScriptedModel
from self_refine import RefineContext
from self_refine.graphs import create_self_refine_graph
from self_refine.persistence.storage import open_checkpointer

LIBRARY, DEFAULT_CADENCE, NAIVE = "library", "default cadence", "operator.add"
INCOMPRESSIBLE = "made-up words"
SQLITE_PARTS = ("", "-wal", "-shm")
PG_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations")


def _builder(layout: str, iterations: int) -> StateGraph[Any, Any, Any, Any]:
    """The library's graph, with the attempts and text channels swapped for the layout."""
    model = ScriptedModel(english=layout != INCOMPRESSIBLE)
    builder = create_self_refine_graph(model, settings=RefineContext(max_iterations=iterations))
    attempts = builder.channels["attempts"]
    assert isinstance(attempts, DeltaChannel)
    if layout == DEFAULT_CADENCE:
        builder.channels["attempts"] = DeltaChannel(attempts.reducer, list)
    elif layout == NAIVE:  # no delta channel at all: a read is one plain checkpoint read
        builder.channels["attempts"] = BinaryOperatorAggregate(list, operator.add)
        for name, channel in list(builder.channels.items()):
            if isinstance(channel, DeltaChannel):
                builder.channels[name] = LastValue(channel.typ)
    return builder


def _run(saver: BaseCheckpointSaver[Any], layout: str, iterations: int) -> dict[str, float]:
    """Run one thread; return its raw history bytes and the times to read it back, in ms."""
    graph = _builder(layout, iterations).compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "bench"}}
    result = graph.invoke({"task": "Write a two-kilobyte essay on the topic given."}, config)
    attempts = result["attempts"]
    if len(attempts) != iterations + 1:
        raise RuntimeError(f"expected {iterations + 1} attempts, got {len(attempts)}")
    times = []
    for _ in range(21):
        start = time.perf_counter()
        state = graph.get_state(config)
        times.append((time.perf_counter() - start) * 1000)
    if state.values["attempts"] != attempts:
        raise RuntimeError("get_state did not read the attempts back")
    start = time.perf_counter()
    history = list(graph.get_state_history(config))
    history_ms = (time.perf_counter() - start) * 1000
    if history[-1].values.get("attempts") or history[0].values["attempts"] != attempts:
        raise RuntimeError("get_state_history did not read the attempts back")
    return {
        "raw": len(json.dumps(attempts).encode()),
        "read_ms": median(times),
        "history_ms": history_ms,
    }


def _show_ms(path: Path) -> float:
    """`self-refine show THREAD --json` in this process (its start-up is not counted), in ms."""
    from self_refine import cli

    times = []
    for _ in range(11):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            start = time.perf_counter()
            code = cli.main(["show", "bench", "--db", str(path), "--json"])
            times.append((time.perf_counter() - start) * 1000)
        if code != 0 or '"attempts"' not in out.getvalue():
            raise RuntimeError(f"show failed with exit code {code}")
    return median(times)


def _sqlite(folder: Path, layout: str, iterations: int) -> dict[str, float]:
    path = folder / f"{layout.replace(' ', '-')}-{iterations}.sqlite"
    with open_checkpointer(str(path)) as saver:
        figures = _run(saver, layout, iterations)
    if layout == LIBRARY and iterations == 50:
        figures["show_ms"] = _show_ms(path)
    size = sum(
        os.path.getsize(f"{path}{part}") for part in SQLITE_PARTS if os.path.exists(f"{path}{part}")
    )
    return {"size": size, **figures}


@contextmanager
def _postgres_database(dsn: str, name: str) -> Iterator[str]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    yield dsn.replace("dbname=postgres", f"dbname={name}")


def _pg_tables_size(url: str) -> float:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relname = ANY(%s)",
            (list(PG_TABLES),),
        ).fetchone()
    return float(row[0] if row else 0)


def _postgres(dsn: str, layout: str, iterations: int) -> dict[str, float]:
    from langgraph.checkpoint.postgres import PostgresSaver

    name = "bench_" + re.sub(r"\W", "_", f"{layout}_{iterations}")
    with _postgres_database(dsn, name) as url:
        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
            empty = _pg_tables_size(url)
            figures = _run(saver, layout, iterations)
        size = _pg_tables_size(url)
    return {"size": size, "empty": empty, **figures}


def _share(figures: dict[str, float]) -> str:
    """How much of a PostgreSQL size is the empty schema, and the ratio without it."""
    thread = (figures["size"] - figures["empty"]) / figures["raw"]
    empty = figures["empty"] / 1e6
    return f"{empty:.2f} MB of it is the empty schema; the thread's own rows are {thread:.2f}x"


def _rows(store: str, measure: Any) -> list[Row]:
    """The figures for one store; `measure(layout, iterations)` returns size, raw, read_ms."""
    runs = {(layout, n): measure(layout, n) for layout in (LIBRARY, NAIVE) for n in (50, 100)}
    cadence = {n: measure(DEFAULT_CADENCE, n) for n in (50, 100)}
    lib50, lib100 = runs[LIBRARY, 50], runs[LIBRARY, 100]
    naive50, naive100 = runs[NAIVE, 50], runs[NAIVE, 100]
    size_ratio = lib50["size"] / lib50["raw"]
    growth = lib100["size"] / lib50["size"]
    what = "file" if store == "SQLite" else "tables"
    share = _share(lib50) if "empty" in lib50 else ""
    read_ratio = lib50["read_ms"] / naive50["read_ms"]
    show = []
    if "show_ms" in lib50:
        show.append(
            Row(
                5,
                "`self-refine show` of that thread (in-process: opens the file, builds the "
                "graph, reads, prints JSON)",
                "ms",
                lib50["show_ms"],
                naive50["read_ms"],
                "operator.add get_state",
                "reference",
            )
        )
    return [
        Row(
            5,
            f"{store} {what} after 50 iterations of 2 KB drafts",
            "bytes",
            lib50["size"],
            lib50["raw"],
            "raw history",
            "<= 6x history (round one)",
            size_ratio <= 6,
            share,
        ),
        Row(
            5,
            f"{store} {what} after 50 iterations, operator.add layout",
            "bytes",
            naive50["size"],
            naive50["raw"],
            "raw history",
            "reference",
        ),
        Row(
            5,
            f"{store} growth, 100 vs 50 iterations",
            "bytes",
            lib100["size"],
            lib50["size"],
            "at 50",
            "<= 2.3x (round one)",
            growth <= 2.3,
        ),
        Row(
            5,
            f"{store} growth, 100 vs 50 iterations, operator.add layout",
            "bytes",
            naive100["size"],
            naive50["size"],
            "at 50",
            "reference",
        ),
        Row(
            5,
            f"{store} growth, 100 vs 50, attempts snapshot every 100 writes (DeltaChannel default)",
            "bytes",
            cadence[100]["size"],
            cadence[50]["size"],
            "at 50",
            "reference",
            note="why attempts snapshot only every 1000 writes",
        ),
        Row(
            5,
            f"{store} get_state after 50 iterations (reads replay the deltas)",
            "ms",
            lib50["read_ms"],
            naive50["read_ms"],
            "operator.add: one plain checkpoint read",
            "<= 2x",
            read_ratio <= 2,
        ),
        *show,
        Row(
            5,
            f"{store} get_state_history after 50 iterations (105 checkpoints)",
            "ms",
            lib50["history_ms"],
            naive50["history_ms"],
            "operator.add",
            "reference",
        ),
    ]


def _incompressible(figures: dict[str, float]) -> Row:
    return Row(
        5,
        "PostgreSQL tables after 50 iterations, drafts of made-up words (no compression)",
        "bytes",
        figures["size"],
        figures["raw"],
        "raw history",
        "worst case",
        note=_share(figures),
    )


def run(quick: bool) -> list[Row]:
    """Measure SQLite, then PostgreSQL when a throwaway cluster can be started."""
    # The library caps a run at 50 refine steps; this process lifts the cap to measure 100.
    self_refine.settings.fields.MAX_ITERATIONS_LIMIT = 100
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="self-refine-bench-") as folder:
        rows += _rows("SQLite", lambda layout, n: _sqlite(Path(folder), layout, n))
    cluster: AbstractContextManager[str] = throwaway_postgres()
    try:
        with cluster as dsn:
            rows += _rows("PostgreSQL", lambda layout, n: _postgres(dsn, layout, n))
            rows.append(_incompressible(_postgres(dsn, INCOMPRESSIBLE, 50)))
    except PostgresUnavailable as error:
        rows.append(Row(5, "PostgreSQL tables", "bytes", note=f"not measured: {error}"))
    return rows


if __name__ == "__main__":
    sys.exit(suite_main(run))
