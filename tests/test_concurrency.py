"""Fifty runs at once on one database (PostgreSQL, one SQLite file): separate, intact histories.

The runs share one compiled graph, one checkpointer and one model client
(real ChatOpenAI over HTTP to the local server), as a service would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

from self_refine import RefineContext, create_self_refine_graph, refine
from self_refine.graphs import GRAPH_NAME
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

RUNS = 50


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(latency=0.01) as running:
        yield running


def _task(i: int) -> str:
    return f"Write one sentence using the words: dog, park, item{i}."


def _comparable(attempts: list[Any]) -> list[Any]:
    """Attempts without the critique's source ("llm" over HTTP, "offline" in process)."""
    return [{**a, "critique": {**a["critique"], "source": None}} for a in attempts]


async def _run_all(saver: BaseCheckpointSaver[Any], server: OpenAIServer) -> None:
    """Start all runs together, then check every thread against a run made alone."""
    graph = create_self_refine_graph(None).compile(checkpointer=saver, name=GRAPH_NAME)
    context = RefineContext(model="openai:test-model", base_url=server.base_url, api_key="k")

    async def one(i: int) -> dict[str, Any]:
        config: Any = {"configurable": {"thread_id": f"run-{i}"}}
        return dict(await graph.ainvoke({"task": _task(i)}, config, context=context))

    results = await asyncio.gather(*(one(i) for i in range(RUNS)))

    for i, result in enumerate(results):
        alone = refine(_task(i), model="offline")["attempts"]
        assert _comparable(result["attempts"]) == _comparable(alone), f"run {i} differs"
        config: Any = {"configurable": {"thread_id": f"run-{i}"}}
        history = [s async for s in graph.aget_state_history(config)]
        steps = [s.metadata["step"] for s in history if s.metadata]
        assert steps == list(range(len(history) - 2, -2, -1)), f"run {i} history has gaps"
        assert {s.values.get("task") for s in history[:-1]} == {_task(i)}
        assert history[0].values["attempts"] == result["attempts"]
    assert len(server.chat_requests()) == sum(1 + 2 * len(r["attempts"]) - 1 for r in results)


async def test_fifty_parallel_runs_on_one_postgres_database(
    postgres_url: str, server: OpenAIServer
) -> None:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(
        postgres_url, min_size=2, max_size=10, kwargs=kwargs, open=False
    ) as pool:
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        await saver.setup()
        await _run_all(saver, server)


async def test_fifty_parallel_runs_on_one_sqlite_file(tmp_path: Path, server: OpenAIServer) -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as saver:
        await _run_all(saver, server)
