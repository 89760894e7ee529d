"""`langgraph dev` serving the local model, its blocking-call check on (its default).

The model is a tiny random Qwen2 GGUF file (`tests/training/tiny.py`) given as
`local:PATH.gguf`: the path a run takes is the one `SELF_REFINE_MODEL=local` takes
(model resolution, the runtime check in a child process and its record in the cache
folder, llama.cpp loading the file, the door's room check, the decode), only
faster than the 0.5B model's. Any blocking call on the server's event loop fails
the run with `BlockingError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.integration.test_studio_server import TASK, Server, serving

pytestmark = pytest.mark.integration

pytest.importorskip("llama_cpp")
pytest.importorskip("gguf")
pytest.importorskip("torch")


@pytest.fixture(scope="module")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    from tests.training.tiny import write_tiny_gguf

    folder = tmp_path_factory.mktemp("studio-local")
    model = folder / "tiny.gguf"
    write_tiny_gguf(model)
    settings = {
        "SELF_REFINE_MODEL": f"local:{model}",
        # An empty cache folder: the runtime check runs (and records its pass) in the server.
        "SELF_REFINE_MODELS": str(folder / "cache"),
    }
    with serving(folder / "server.log", settings) as running:
        yield running


@pytest.fixture
async def client(local_server: Server) -> AsyncIterator[LangGraphClient]:
    client = get_client(url=local_server.url)
    yield client
    await client.aclose()


SHORT = {"max_iterations": 1, "max_tokens": 12}


# The chat graph first: its own node resolves the model before any refine run has.
@pytest.mark.parametrize("graph_id", ["chat", "self_refine"])
async def test_a_run_with_the_local_model_finishes(
    client: LangGraphClient, local_server: Server, graph_id: str
) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    payload = {"task": TASK} if graph_id == "self_refine" else {"messages": [("user", TASK)]}
    result = await client.runs.wait(thread_id, graph_id, input=payload, context=SHORT)
    log = local_server.log.read_text(errors="replace")
    assert "BlockingError" not in log, log[-4000:]
    assert isinstance(result, dict) and "__error__" not in result, result
    state = await client.threads.get_state(thread_id)
    values = state["values"]
    if graph_id == "self_refine":
        assert values["stop_reason"] and values["attempts"]
    else:
        assert values["messages"][-1]["type"] == "ai"


async def test_a_paused_local_run_resumes(client: LangGraphClient, local_server: Server) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    pause = {"interrupt_before": ["refine"]}
    first = await client.runs.wait(
        thread_id, "self_refine", input={"task": TASK}, context=SHORT, **pause
    )
    assert isinstance(first, dict) and "__error__" not in first, first
    if (await client.threads.get_state(thread_id))["next"] == ["refine"]:
        result = await client.runs.wait(thread_id, "self_refine", input=None)
        assert isinstance(result, dict) and "__error__" not in result, result
    state = await client.threads.get_state(thread_id)
    assert state["next"] == [] and state["values"]["stop_reason"]
    assert "BlockingError" not in local_server.log.read_text(errors="replace")


async def test_a_local_run_streams_its_tokens_as_studio_asks(
    client: LangGraphClient, local_server: Server
) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    events: list[str] = []
    async for part in client.runs.stream(
        thread_id,
        "self_refine",
        input={"task": TASK},
        context=SHORT,
        stream_mode=["messages-tuple", "updates"],
    ):
        events.append(part.event)
        assert part.event != "error", part.data
    assert "messages" in events and "updates" in events
    state = await client.threads.get_state(thread_id)
    assert state["next"] == [] and state["values"]["stop_reason"]
    assert "BlockingError" not in local_server.log.read_text(errors="replace")
