"""`self-refine batch --ray`: the items run on Ray's actors, the driver keeps the output file.

The unit tests check the flags, the missing-Ray message and the driver's handing
an item again when its actor is lost; one test continues a batch on a local Ray
instance; the integration test runs a batch on a two-node cluster on this machine
and kills the second node's raylet in the middle of it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from self_refine.batch.items import BatchItem
from self_refine.batch.ray_engine import RETRIES, RayEngine, _Pool
from self_refine.errors import ConfigError
from tests.batch_support import MathDataset, MathResponder, math_dataset
from tests.conftest import run_cli
from tests.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _model(server: OpenAIServer) -> list[str]:
    return ["--model", "test-model", "--base-url", server.base_url, "--api-key", "unused"]


def _ray_env(temp: Path) -> dict[str, str]:
    """Ray's files in the test's own folder; the tree under test importable by Ray's workers."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {"RAY_TMPDIR": str(temp), "PYTHONPATH": path, "LANGSMITH_TRACING": "false"}


def _one_machine(workdir: Path, model: OpenAIServer, output: str, db: str) -> list[dict[str, Any]]:
    """The records of the batch of in.jsonl run in this machine's process, without Ray."""
    done = run_cli("batch", "in.jsonl", "-o", output, "--db", db, *_model(model), cwd=workdir)
    assert done.returncode == 0, done.stderr
    return _records(workdir / output)


@pytest.fixture
def ray_temp() -> Iterator[Path]:
    """A short private folder for Ray's sockets and logs (a socket's path has at most 107
    bytes), removed after the test."""
    folder = Path(tempfile.mkdtemp(prefix="sr-ray-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --- flags and messages ---------------------------------------------------------------------


def test_ray_actors_without_ray_and_ray_with_server_are_refused(workdir: Path) -> None:
    (workdir / "in.jsonl").write_text('{"task": "t"}\n')
    alone = run_cli("batch", "in.jsonl", "-o", "o.jsonl", "--ray-actors", "2", cwd=workdir)
    assert alone.returncode != 0
    assert "--ray-actors says how many Ray actors run items: add --ray" in alone.stderr
    both = run_cli(
        "batch", "in.jsonl", "-o", "o.jsonl", "--ray", "--server", "http://127.0.0.1:1",
        cwd=workdir,
    )  # fmt: skip
    assert both.returncode != 0
    assert "--ray and --server are two places to run the items: choose one" in both.stderr
    assert not (workdir / "o.jsonl").exists()


def test_a_cluster_address_with_a_sqlite_database_is_refused_before_any_model_call(
    workdir: Path, server: OpenAIServer
) -> None:
    (workdir / "in.jsonl").write_text('{"task": "t"}\n')
    done = run_cli(
        "batch", "in.jsonl", "-o", "o.jsonl", "--ray", "10.0.0.5:6379", *_model(server),
        cwd=workdir,
    )  # fmt: skip
    assert done.returncode != 0
    assert "cannot open the SQLite file" in done.stderr
    assert "give --db postgresql://" in done.stderr
    assert server.chat_requests() == []
    assert not (workdir / "o.jsonl").exists()


def test_without_ray_installed_the_batch_says_how_to_install_it_before_any_model_call(
    workdir: Path, server: OpenAIServer
) -> None:
    (workdir / "in.jsonl").write_text('{"task": "t"}\n')
    argv = ["batch", "in.jsonl", "-o", "o.jsonl", "--ray", *_model(server)]
    code = (
        "import sys; sys.modules['ray'] = None\n"  # `import ray` raises ImportError
        "from self_refine.cli import main\n"
        f"sys.exit(main({argv!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=workdir, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "running a batch on Ray needs Ray" in done.stderr
    assert '[ray]"' in done.stderr and "pip install" in done.stderr
    assert server.chat_requests() == []
    assert not (workdir / "o.jsonl").exists()


def test_a_ray_engine_checks_its_settings() -> None:
    with pytest.raises(ConfigError, match="the Ray actors must be >= 1, got 0"):
        RayEngine(actors=0)
    with pytest.raises(ConfigError, match="the Ray address is empty"):
        RayEngine(" ")
    assert RayEngine(db="x.sqlite").database() == str(Path("x.sqlite").resolve())
    url = "postgresql://db.example/refine"
    assert RayEngine("head:6379", db=url).database() == url


# --- the driver hands an item again when its actor is lost ------------------------------------


class _Lost(Exception):
    """Stands for ray.exceptions.RayActorError."""


class _TaskError(Exception):
    """Stands for ray.exceptions.RayTaskError: an error raised inside the actor."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _Gone(_Lost):
    """Stands for ray.exceptions.ActorDiedError: the actor will not come back."""


class _FakeRay:
    class exceptions:  # noqa: N801 - the attribute names of the ray module
        RayActorError = _Lost
        ActorDiedError = _Gone
        ActorUnschedulableError = type("ActorUnschedulableError", (Exception,), {})
        WorkerCrashedError = type("WorkerCrashedError", (Exception,), {})
        NodeDiedError = type("NodeDiedError", (Exception,), {})
        ObjectLostError = type("ObjectLostError", (Exception,), {})
        RayTaskError = _TaskError


class _Ready:
    """An actor's `ready` method: it answers (the actor was restarted), or says it is gone."""

    def __init__(self, gone: bool = False) -> None:
        self.gone = gone

    def remote(self) -> Any:
        async def reply() -> str:
            if self.gone:
                raise _Gone("the actor's node died")
            return "node"

        return reply()


class _Actor:
    """An actor handle whose calls fail as scripted (an exception), else return a record."""

    def __init__(self, script: list[Exception | None], gone: bool = False) -> None:
        self.script = script
        self.calls = 0
        self.run_item = self
        self.ready = _Ready(gone)

    def remote(self, item: BatchItem) -> Any:
        self.calls += 1
        outcome = self.script.pop(0) if self.script else None

        async def reply() -> dict[str, Any]:
            if outcome is not None:
                raise outcome
            return {"id": item.id, "answer": "42"}

        return reply()


def _pool(actors: list[_Actor], notes: list[str], spawned: list[_Actor] | None = None) -> _Pool:
    def spawn(nodes: list[str]) -> tuple[Any, str]:
        assert spawned, "no actor was to be started"
        return spawned.pop(0), "another node"

    return _Pool(_FakeRay, list(actors), ["node"] * len(actors), spawn, notes.append)


def test_an_item_whose_actor_was_lost_is_handed_again_and_said_so() -> None:
    notes: list[str] = []
    actor = _Actor([_Lost("The actor died unexpectedly")])
    pool = _pool([actor], notes)
    record = asyncio.run(pool.run_item(BatchItem("q1", "task")))
    assert record == {"id": "q1", "answer": "42"}
    assert actor.calls == 2
    assert len(notes) == 1
    assert notes[0].startswith("item 'q1': its Ray worker was lost (_Lost: The actor died")
    assert "running it again from its last checkpoint (2 of 4 tries)" in notes[0]


def test_an_item_lost_every_time_fails_and_an_error_inside_the_actor_is_raised_as_it_was() -> None:
    notes: list[str] = []
    lost = _Actor([_Lost("gone")] * (RETRIES + 1))
    with pytest.raises(RuntimeError, match=f"its Ray worker was lost {RETRIES + 1} times"):
        asyncio.run(_pool([lost], notes).run_item(BatchItem("q1", "task")))
    assert lost.calls == RETRIES + 1 and len(notes) == RETRIES
    failing = _Actor([_TaskError(ConfigError("bad settings"))])
    with pytest.raises(ConfigError, match="bad settings"):
        asyncio.run(_pool([failing], notes).run_item(BatchItem("q2", "task")))
    assert failing.calls == 1


def test_an_actor_gone_with_its_node_is_replaced_and_its_items_go_to_the_others() -> None:
    notes: list[str] = []
    gone = _Actor([_Lost("socket closed")] * 2, gone=True)
    other, replacement = _Actor([]), _Actor([])

    async def batch() -> list[dict[str, Any]]:
        pool = _pool([gone, other], notes, spawned=[replacement])
        first = await pool.run_item(BatchItem("q1", "task"))  # gone, then the other actor
        await asyncio.sleep(0.05)  # the lost actor's probe starts its replacement
        later = [await pool.run_item(BatchItem(f"q{n}", "task")) for n in (2, 3)]
        pool.close()
        return [first, *later]

    records = asyncio.run(batch())
    assert [r["id"] for r in records] == ["q1", "q2", "q3"]
    # The replacement takes the first actor's place (the first in line when both are free).
    assert gone.calls == 1 and other.calls == 1 and replacement.calls == 2
    assert notes[0].startswith("item 'q1': its Ray worker was lost")
    assert notes[1] == (
        "Ray: actor 1 of 2 is gone with its node; another starts on a node that is alive"
    )


# --- on a local Ray instance ----------------------------------------------------------------


@pytest.mark.integration
def test_a_batch_begun_without_ray_continues_on_ray_running_only_the_items_left(
    workdir: Path, ray_temp: Path
) -> None:
    dataset = math_dataset(per_kind=2)
    dataset.write(workdir / "in.jsonl")
    with OpenAIServer(responder=MathResponder(dataset)) as model:
        whole = _one_machine(workdir, model, "out.jsonl", "one.sqlite")
        kept = (workdir / "out.jsonl").read_text().splitlines()[:6]
        (workdir / "out.jsonl").write_text("\n".join(kept) + "\n")
        before = len(model.chat_requests())
        # Another database: the items left run again rather than being read back.
        again = run_cli(
            "batch", "in.jsonl", "-o", "out.jsonl", "--db", "two.sqlite", "--ray",
            "--summary", "s.json", *_model(model),
            cwd=workdir, env=_ray_env(ray_temp),
        )  # fmt: skip
        asked = "\n".join(r.text for r in model.chat_requests()[before:])
    assert again.returncode == 0, again.stderr
    assert "6 of 10 items were done by an earlier run" in again.stderr
    assert "Ray: 1 actor(s) ready on 1 node(s)" in again.stderr
    records = _records(workdir / "out.jsonl")
    assert [r["id"] for r in records][:6] == [r["id"] for r in whole][:6]
    assert sorted(r["id"] for r in records) == sorted(r["id"] for r in whole)
    assert {r["id"]: r["answer"] for r in records} == {r["id"]: r["answer"] for r in whole}
    for item in dataset.items:
        assert (item["task"] in asked) == (item["id"] not in {r["id"] for r in whole[:6]})
    assert json.loads((workdir / "s.json").read_text())["items"] == 10


def test_the_batch_api_refuses_a_checkpointer_or_a_cluster_without_a_database() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from self_refine import arefine_batch

    with pytest.raises(ConfigError, match="keeps its threads in engine's db"):
        asyncio.run(
            arefine_batch(["t"], model="offline", engine=RayEngine(), checkpointer=InMemorySaver())
        )
    with pytest.raises(ConfigError, match="a batch on Ray needs a checkpoint database"):
        asyncio.run(arefine_batch(["t"], model="offline", engine=RayEngine("head:6379")))


@pytest.mark.integration
def test_the_batch_api_on_ray_answers_as_it_does_in_this_process(
    ray_temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from self_refine import RefineContext, arefine_batch

    dataset = math_dataset(per_kind=1)
    tasks = [item["task"] for item in dataset.items]
    references = [item["reference"] for item in dataset.items]
    for name, value in _ray_env(ray_temp).items():
        monkeypatch.setenv(name, value)
    with OpenAIServer(responder=MathResponder(dataset)) as model:
        settings = RefineContext(base_url=model.base_url, api_key="unused")
        given = {"model": "test-model", "references": references, "settings": settings}
        here = asyncio.run(arefine_batch(tasks, **given))
        on_ray = asyncio.run(arefine_batch(tasks, engine=RayEngine(actors=2), **given))
    assert on_ray.errors == {}
    assert on_ray.answers == here.answers
    for key in ("items", "accuracy_first", "accuracy_final", "transitions"):
        assert on_ray.summary[key] == here.summary[key], key
    assert on_ray.summary["accuracy_final"] > on_ray.summary["accuracy_first"]


# --- on a cluster of two nodes, one of which dies -------------------------------------------


@pytest.fixture
def two_nodes(ray_temp: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Any]]:
    """A Ray cluster of two nodes on this machine (a head and a second raylet, one CPU each),
    quick to notice a dead node; its address and the second node. Always torn down: only
    the processes this cluster started are stopped."""
    cluster_utils = pytest.importorskip("ray.cluster_utils", reason="Ray is not installed")
    config = {
        "health_check_initial_delay_ms": 0,
        "health_check_period_ms": 500,
        "health_check_timeout_ms": 1000,
        "health_check_failure_threshold": 3,
    }
    for name, value in _ray_env(ray_temp).items():
        monkeypatch.setenv(name, value)
    cluster = cluster_utils.Cluster(shutdown_at_exit=False)
    try:
        cluster.add_node(num_cpus=1, _system_config=config)  # files under RAY_TMPDIR
        second = cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster.address, second
    finally:
        cluster.shutdown()


@pytest.mark.integration
def test_a_batch_on_two_nodes_finishes_every_item_once_when_a_node_dies(
    workdir: Path, two_nodes: tuple[str, Any], postgres_url: str, ray_temp: Path
) -> None:
    address, second = two_nodes
    dataset: MathDataset = math_dataset(per_kind=8)  # 40 items
    dataset.write(workdir / "in.jsonl")
    with OpenAIServer(responder=MathResponder(dataset)) as model:
        alone = _one_machine(workdir, model, "alone.jsonl", "alone.sqlite")
        served_alone = len(model.chat_requests())
    answers = {r["id"]: r["answer"] for r in alone}

    # Slow answers: the batch is still going when the second node dies.
    with OpenAIServer(responder=MathResponder(dataset), latency=0.3) as model:
        command = [
            sys.executable, "-m", "self_refine.cli", "batch", "in.jsonl", "-o", "out.jsonl",
            "--ray", address, "--db", postgres_url, "--concurrency", "4", *_model(model),
        ]  # fmt: skip
        env = {**os.environ, **_ray_env(ray_temp)}
        with (workdir / "stderr.txt").open("w") as log:
            batch = subprocess.Popen(command, cwd=workdir, env=env, stdout=log, stderr=log)
            try:
                output = workdir / "out.jsonl"
                deadline = time.monotonic() + 240
                while time.monotonic() < deadline and batch.poll() is None:
                    if output.exists() and len(output.read_text().splitlines()) >= 8:
                        break
                    time.sleep(0.2)
                assert batch.poll() is None, (workdir / "stderr.txt").read_text()
                second.kill_raylet()
                batch.wait(timeout=300)
            finally:
                if batch.poll() is None:
                    batch.kill()
                    batch.wait()
        served = len(model.chat_requests())
    shown = (workdir / "stderr.txt").read_text()
    assert batch.returncode == 0, shown
    assert "Ray: 2 actor(s) ready on 2 node(s)" in shown
    assert "its Ray worker was lost" in shown and "from its last checkpoint" in shown
    assert "is gone with its node; another starts on a node that is alive" in shown
    records = _records(workdir / "out.jsonl")
    ids = [r["id"] for r in records]
    assert sorted(ids) == sorted(answers) and len(ids) == len(set(ids)) == 40
    assert {r["id"]: r["answer"] for r in records} == answers
    # The lost items went on from their checkpoints: at most the calls of the items the
    # dead actor had open (4: twice its 2 call slots) were made again.
    assert served_alone <= served <= served_alone + 4
