"""The real `langgraph dev` server, started by `self-refine studio`, driven with langgraph_sdk."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from self_refine import RefineContext
from self_refine.cli.devserver import free_port, studio_url

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TASK = "Write one sentence using the words: dog, frisbee, park."
FIRST_DRAFT = "this is a very rough draft about dog"
EDITED = {"feedback": ['Mention "zebra"'], "score": 0.2, "done": False, "source": "human"}
READY_LINE = "LangGraph Studio: "


@dataclasses.dataclass(frozen=True)
class Server:
    url: str
    port: int
    log: Path


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the command and the server it started: they share one process group."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            time.sleep(0.5)  # let the server's workers exit with their leader
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("studio") / "server.log"
    with serving(log, {"SELF_REFINE_MODEL": "offline"}) as running:
        yield running


@contextlib.contextmanager
def serving(log: Path, settings: dict[str, str]) -> Iterator[Server]:
    """`self-refine studio` on a free port with `settings` in its environment, its output
    in `log`, until the block ends."""
    port = free_port(preferred=None)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        **settings,
    }
    command = [sys.executable, "-m", "self_refine.cli", "studio", "--port", str(port)]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*command, "--no-reload", "--config", str(ROOT / "studio.json")],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while READY_LINE not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"self-refine studio did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.25)
        yield Server(f"http://127.0.0.1:{port}", port, log)
    finally:
        _stop(process)


@pytest.fixture
async def client(server: Server) -> AsyncIterator[LangGraphClient]:
    client = get_client(url=server.url)
    yield client
    await client.aclose()


async def _assistant(client: LangGraphClient, graph_id: str) -> dict[str, Any]:
    """The assistant the server made for a graph of studio.json (users may add others)."""
    found = await client.assistants.search(
        graph_id=graph_id, metadata={"created_by": "system"}, limit=10
    )
    assert len(found) == 1
    return dict(found[0])


def test_studio_command_prints_the_studio_url(server: Server) -> None:
    text = server.log.read_text()
    assert f"{READY_LINE}{studio_url(server.port)}" in text
    assert studio_url(server.port) == (
        f"https://smith.langchain.com/studio/?baseUrl=http://127.0.0.1:{server.port}"
    )


async def test_both_graphs_are_listed(client: LangGraphClient) -> None:
    assistants = await client.assistants.search(limit=100)
    assert {"self_refine", "chat"} <= {a["graph_id"] for a in assistants}


@pytest.mark.parametrize("graph_id", ["self_refine", "chat"])
async def test_context_schema_describes_every_setting(
    client: LangGraphClient, graph_id: str
) -> None:
    assistant = await _assistant(client, graph_id)
    schemas = await client.assistants.get_schemas(assistant["assistant_id"])
    properties = schemas["context_schema"]["properties"]
    for field in dataclasses.fields(RefineContext):
        assert properties[field.name]["description"] == field.metadata["description"]


async def test_streamed_run_yields_every_step(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    nodes: list[str] = []
    async for part in client.runs.stream(
        thread["thread_id"], "self_refine", input={"task": TASK}, stream_mode="updates"
    ):
        if part.event == "updates":
            nodes.extend(part.data)
    assert nodes[:2] == ["begin", "generate"] and nodes[-1] == "finalize"
    assert {"critique", "refine"} <= set(nodes)
    state = await client.threads.get_state(thread["thread_id"])
    assert state["values"]["stop_reason"] == "critic_done"
    assert all(word in state["values"]["answer"] for word in ("dog", "frisbee", "park"))


@pytest.mark.parametrize("graph_id", ["self_refine", "chat"])
async def test_the_answer_message_streams_last(client: LangGraphClient, graph_id: str) -> None:
    thread = await client.threads.create()
    payload = {"task": TASK} if graph_id == "self_refine" else {"messages": [("user", TASK)]}
    messages: list[tuple[dict[str, Any], dict[str, Any]]] = []
    async for part in client.runs.stream(
        thread["thread_id"], graph_id, input=payload, stream_mode="messages-tuple"
    ):
        if part.event == "messages":
            message, metadata = part.data
            messages.append((message, metadata))
    drafts = [m for m, _ in messages[:-1] if m.get("name") != "answer"]
    answer, metadata = messages[-1]
    assert drafts and answer["name"] == "answer" and answer["type"] == "ai"
    assert all(word in answer["content"] for word in ("dog", "frisbee", "park"))
    assert metadata["langgraph_node"] == (
        "finalize" if graph_id == "self_refine" else "refine_reply"
    )
    state = await client.threads.get_state(thread["thread_id"])
    values = state["values"]
    final = values["answer"] if graph_id == "self_refine" else values["messages"][-1]["content"]
    assert answer["content"] == final


async def test_step_edit_resume_and_fork(client: LangGraphClient) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    pause = {"interrupt_before": ["refine"]}
    await client.runs.wait(thread_id, "self_refine", input={"task": TASK}, **pause)
    state = await client.threads.get_state(thread_id)
    assert state["next"] == ["refine"]
    assert state["values"]["draft"] == FIRST_DRAFT
    assert 'Mention "frisbee", which the task asks for.' in state["values"]["critique"]["feedback"]

    await client.threads.update_state(thread_id, {"critique": EDITED}, as_node="critique")
    await client.runs.wait(thread_id, "self_refine", input=None, **pause)
    state = await client.threads.get_state(thread_id)
    assert state["next"] == ["refine"]
    # The refiner acted on the edited item only: the offline refiner applies what it is sent.
    assert state["values"]["draft"] == f"{FIRST_DRAFT}. It also covers zebra."

    history = await client.threads.get_history(thread_id, limit=100)
    steps = [h["metadata"]["step"] for h in history]
    assert steps == list(range(steps[0], -2, -1))  # every step, newest first, down to the input
    sources = [h["metadata"]["source"] for h in history]
    assert sources.count("input") == 1 and sources.count("update") == 1
    edited = next(h for h in history if h["metadata"]["source"] == "update")
    assert edited["values"]["critique"] == EDITED

    # Fork from the first pause (before the edit) with other feedback.
    first_pause = history[sources.index("update") + 1]
    assert first_pause["next"] == ["refine"]
    await client.threads.update_state(
        thread_id,
        {"critique": {**EDITED, "feedback": ['Mention "yak"']}},
        as_node="critique",
        checkpoint=first_pause["checkpoint"],
    )
    await client.runs.wait(thread_id, "self_refine", input=None, **pause)
    forked = await client.threads.get_state(thread_id)
    assert forked["values"]["draft"] == f"{FIRST_DRAFT}. It also covers yak."
    assert forked["values"]["attempts"][0] == state["values"]["attempts"][0]
    everything = await client.threads.get_history(thread_id, limit=100)
    drafts = {h["values"].get("draft") for h in everything}
    assert f"{FIRST_DRAFT}. It also covers zebra." in drafts  # the first branch is intact


async def test_human_critic_is_answered_through_the_sdk(client: LangGraphClient) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    human = {"context": {"critics": ["human"]}}
    await client.runs.wait(thread_id, "self_refine", input={"task": TASK}, **human)
    state = await client.threads.get_state(thread_id)
    (question,) = state["interrupts"]
    assert question["value"]["task"] == TASK
    assert question["value"]["draft"] == FIRST_DRAFT
    assert question["value"]["attempts"] == []

    await client.runs.wait(thread_id, "self_refine", command={"resume": 'Mention "zebra"'}, **human)
    state = await client.threads.get_state(thread_id)
    (question,) = state["interrupts"]
    assert question["value"]["draft"] == f"{FIRST_DRAFT}. It also covers zebra."
    assert question["value"]["attempts"][0]["critique"]["feedback"] == ['Mention "zebra"']

    result = await client.runs.wait(
        thread_id, "self_refine", command={"resume": {"done": True, "score": 0.8}}, **human
    )
    assert isinstance(result, dict)
    assert result["stop_reason"] == "critic_done"
    assert result["answer"] == f"{FIRST_DRAFT}. It also covers zebra."
    assert [a["critique"]["source"] for a in result["attempts"]] == ["human", "human"]


async def test_human_critic_resumes_without_repeating_the_run_s_context(
    client: LangGraphClient,
) -> None:
    # As Studio and most SDK users do: the context goes with the first run only.
    thread_id = (await client.threads.create())["thread_id"]
    human = {"critics": ["human"], "max_iterations": 1}
    await client.runs.wait(thread_id, "self_refine", input={"task": TASK}, context=human)
    state = await client.threads.get_state(thread_id)
    kept = state["values"]["run_context"]
    assert {key: kept[key] for key in human} == human

    await client.runs.wait(thread_id, "self_refine", command={"resume": 'Mention "zebra"'})
    state = await client.threads.get_state(thread_id)
    (question,) = state["interrupts"]
    assert question["value"]["draft"] == f"{FIRST_DRAFT}. It also covers zebra."
    assert question["value"]["attempts"][0]["critique"]["source"] == "human"

    result = await client.runs.wait(thread_id, "self_refine", command={"resume": "Add a yak"})
    assert isinstance(result, dict)
    assert result["stop_reason"] == "max_iterations"  # the run's limit, not the default 3
    assert [a["critique"]["source"] for a in result["attempts"]] == ["human", "human"]


async def test_chat_agent_streams_its_refine_subgraph(client: LangGraphClient) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    events: list[tuple[str, list[str]]] = []
    async for part in client.runs.stream(
        thread_id,
        "chat",
        input={"messages": [{"role": "user", "content": TASK}]},
        stream_mode="updates",
        stream_subgraphs=True,
    ):
        if part.event.startswith("updates"):
            events.append((part.event, list(part.data)))
    assert events[0] == ("updates", ["draft_reply"])
    assert events[-1] == ("updates", ["refine_reply"])
    inner = {
        node
        for event, nodes in events
        if event.startswith("updates|refine_reply:")
        for node in nodes
    }
    assert {"critique", "refine", "finalize"} <= inner
    state = await client.threads.get_state(thread_id)
    user, reply = state["values"]["messages"]
    assert reply["type"] == "ai"
    assert reply["content"] == (
        "This is a rough draft about dog. It also covers frisbee. It also covers park."
    )
    assert reply["response_metadata"]["self_refine"]["stop_reason"] == "critic_done"


def test_the_guide_s_stepping_example_runs_against_the_server(server: Server) -> None:
    readme = (ROOT / "docs" / "guides" / "studio.md").read_text()
    (code,) = [
        b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "get_sync_client" in b
    ]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(code.replace("http://127.0.0.1:2024", server.url), {})
    assert printed.getvalue().strip() == f"{FIRST_DRAFT}. It also covers zebra."
