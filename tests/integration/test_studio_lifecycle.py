"""`self-refine studio` as a real process: every way it stops takes `langgraph dev` with it,
and the reload watcher sees the graphs' code, not the files written next to the config."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from self_refine.cli.devserver import free_port

pytestmark = pytest.mark.integration

READY = "LangGraph Studio: "


def _children() -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            found.setdefault(parent, []).append(int(entry))
    return found


def _descendants(pid: int) -> list[int]:
    children, found, todo = _children(), [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


class Studio:
    """A running `self-refine studio` whose output is collected in a file."""

    def __init__(self, cwd: Path, *args: str) -> None:
        self.port = free_port(preferred=None)
        self.server: list[int] = []  # the processes it started, once it answers
        self.log = cwd / "studio.log"
        env = {**os.environ, "SELF_REFINE_MODEL": "offline", "LANGSMITH_TRACING": "false"}
        command = [sys.executable, "-m", "self_refine.cli", "studio", "--port", str(self.port)]
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(
                [*command, *args],
                cwd=cwd,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # the test's own handle on everything it started
            )
        deadline = time.monotonic() + 120
        while READY not in self.text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"self-refine studio did not start:\n{self.text()[-3000:]}")
            time.sleep(0.25)
        self.server = _descendants(self.process.pid)

    def text(self) -> str:
        return re.sub(r"\x1b\[[0-9;]*m", "", self.log.read_text(errors="replace"))

    def kill(self) -> None:
        """Kill what the test started, even what an old `studio` would leave behind."""
        pids = {self.process.pid, *self.server, *_descendants(self.process.pid)}
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()


@pytest.fixture
def studio(tmp_path: Path) -> Iterator[Any]:
    started: list[Studio] = []

    def start(*args: str) -> Studio:
        started.append(Studio(tmp_path, *args))
        return started[-1]

    yield start
    for running in started:
        if running.process.poll() is None:
            running.kill()


def _config(folder: Path) -> Path:
    """A project whose graph lives in a package of its own, `agent/`."""
    (folder / "agent").mkdir()
    (folder / "agent" / "__init__.py").write_text("")
    (folder / "agent" / "graph.py").write_text("from self_refine.graphs.studio import graph\n")
    config = folder / "studio.json"
    graphs = {"self_refine": "./agent/graph.py:graph"}
    config.write_text(json.dumps({"dependencies": ["."], "graphs": graphs}))
    return config


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_stopping_the_command_stops_the_server(
    sig: signal.Signals, studio: Any, tmp_path: Path
) -> None:
    running = studio("--config", str(_config(tmp_path)))
    server = running.server
    assert server and _listening(running.port)
    running.process.send_signal(sig)
    code = running.process.wait(timeout=30)
    # After kill -9 the server notices its parent died (a parent-death signal) and stops.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (_listening(running.port) or any(map(_running, server))):
        time.sleep(0.2)
    assert not _listening(running.port), "the server still listens"
    assert not [pid for pid in server if _running(pid)], "a server process was left running"
    if sig != signal.SIGKILL:
        assert code == 128 + sig, running.text()[-2000:]


def test_files_written_beside_the_config_do_not_reload_the_server(
    studio: Any, tmp_path: Path
) -> None:
    running = studio("--config", str(_config(tmp_path)))
    time.sleep(2)  # the watcher is up and settled
    (tmp_path / "checkpoints.sqlite").write_bytes(b"SQLite format 3\0")
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "model.bin").write_bytes(b"x" * 1000)
    (tmp_path / "notes.py").write_text("# a script beside the config, not a graph's code\n")
    time.sleep(5)  # more than the watcher's 1.6 s debounce, twice over
    text = running.text()
    assert "change detected" not in text and "changes detected" not in text, text[-2000:]
    assert "Reloading" not in text

    # The graph's own code is still watched: editing it reloads the server.
    (tmp_path / "agent" / "graph.py").write_text(
        "from self_refine.graphs.studio import graph  # edited\n"
    )
    deadline = time.monotonic() + 20
    while "Reloading" not in running.text() and time.monotonic() < deadline:
        time.sleep(0.25)
    assert "detected changes in 'agent/graph.py'. Reloading" in running.text()
    running.process.send_signal(signal.SIGTERM)
    assert running.process.wait(timeout=30) == 128 + signal.SIGTERM
