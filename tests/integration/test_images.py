"""A task with an image, through the real ChatOpenAI client and a local OpenAI-compatible server."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import SecretStr

from self_refine import RefineContext, create_self_refine_graph
from tests.images import IMAGE_TASK_TEXT, image_task, png_base64
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration


def _images(request: Any) -> list[str]:
    """The image URLs of a recorded request, in every message."""
    return [
        block["image_url"]["url"]
        for message in request.messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "image_url"
    ]


def _rows_holding(db: Path, needle: str) -> dict[str, int]:
    """How many rows of each table of the database hold `needle`."""
    found: dict[str, int] = {}
    with sqlite3.connect(db) as conn:
        tables = [
            name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        for table in tables:
            for row in conn.execute(f"SELECT * FROM {table}"):
                cells = [c if isinstance(c, bytes) else str(c).encode() for c in row]
                if any(needle.encode() in cell for cell in cells):
                    found[table] = found.get(table, 0) + 1
    return found


@pytest.mark.parametrize("form", ["conversation", "single"])
def test_image_blocks_reach_every_role_and_the_thread_stores_the_image_once(
    server: OpenAIServer, tmp_path: Path, form: str
) -> None:
    model = ChatOpenAI(
        model="test-model", base_url=server.base_url, api_key=SecretStr("unused"), max_retries=0
    )
    data = png_base64()
    db = tmp_path / "threads.sqlite"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = create_self_refine_graph(
            model,
            settings=RefineContext(refine_form=form),  # type: ignore[arg-type]
        ).compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "picture"}}
        result = graph.invoke({"task": image_task()}, config)
        steps = len(list(saver.list(config)))

    assert result["stop_reason"] == "critic_done" and result["iterations"] == 2
    assert "red" in result["answer"] and "dot" in result["answer"]
    requests = server.chat_requests()
    assert {r.role for r in requests} == {"generator", "critic", "refiner"}
    for request in requests:
        # Every request carries the image once, as the provider's image block, after the text.
        assert _images(request) == [f"data:image/png;base64,{data}"]
        assert IMAGE_TASK_TEXT in request.text
    # Stored with the input only (its checkpoint and the write of the task channel),
    # not in any of the run's later checkpoints.
    assert steps > 8
    assert _rows_holding(db, data) == {"checkpoints": 1, "writes": 1}


def test_an_image_given_by_url_reaches_the_model_as_that_url(server: OpenAIServer) -> None:
    model = ChatOpenAI(model="test-model", base_url=server.base_url, api_key=SecretStr("unused"))
    url = "https://example.com/red-dot.png"
    task = image_task({"type": "image", "url": url})
    create_self_refine_graph(model).compile().invoke({"task": task})
    assert {tuple(_images(r)) for r in server.chat_requests()} == {(url,)}
