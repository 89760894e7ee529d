"""The package as a user installs it: sdist and wheel built, checked, installed into a fresh venv.

An editable install from the source tree hides missing package data and entry points;
here nothing of the source tree is on the path: the commands run from an empty folder
with the fresh venv's own Python.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Installed:
    """A fresh virtual environment with the built wheel installed."""

    wheel: Path
    sdist: Path
    bin: Path
    home: Path

    def run(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """Run a program of the venv from an empty folder, with no source tree on the path."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env.update(LANGSMITH_TRACING="false", LANGGRAPH_CLI_NO_ANALYTICS="1")
        env.update(LANGGRAPH_NO_VERSION_CHECK="true")
        return subprocess.run(
            [str(self.bin / args[0]), *args[1:]],
            cwd=self.home,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _check(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, f"{done.args} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    """Build sdist and wheel, `twine check` them, install the wheel into a new venv."""
    dist = tmp_path_factory.mktemp("dist")
    build = [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(dist), str(ROOT)]
    _check(subprocess.run(build, capture_output=True, text=True, timeout=600))
    wheel = next(dist.glob("*.whl"))
    sdist = next(dist.glob("*.tar.gz"))
    _check(
        subprocess.run(
            [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    )
    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=True)
    pip = [str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    _check(subprocess.run([*pip, f"{wheel}[studio]"], capture_output=True, text=True, timeout=900))
    home = tmp_path_factory.mktemp("home")
    yield Installed(wheel=wheel, sdist=sdist, bin=env_dir / "bin", home=home)


def test_wheel_holds_every_package_file_of_the_source_tree(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    source = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "self_refine").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert source, "no package files found in the source tree"
    assert sorted(source - names) == []
    assert "self_refine/py.typed" in names


def test_installed_program_answers_help_and_profiles(installed: Installed) -> None:
    help_text = _check(installed.run("self-refine", "--help")).stdout
    for command in ("run", "show", "resume", "batch", "report", "profiles", "studio"):
        assert command in help_text
    profiles = _check(installed.run("self-refine", "profiles")).stdout
    assert "constrained_generation" in profiles and "math" in profiles


def test_installed_program_refines_a_one_item_batch(installed: Installed) -> None:
    item = {
        "id": "dog",
        "task": "Write one sentence using the words: dog, frisbee, park.",
        "reference": {"concepts": ["dog", "frisbee", "park"]},
    }
    (installed.home / "items.jsonl").write_text(json.dumps(item) + "\n")
    done = installed.run(
        "self-refine", "batch", "items.jsonl", "-o", "out.jsonl", "--model", "offline"
    )
    _check(done)
    records = [json.loads(line) for line in (installed.home / "out.jsonl").read_text().splitlines()]
    assert [record["id"] for record in records] == ["dog"]
    assert records[0]["answer"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_installed_package_serves_its_graphs_with_langgraph_dev(installed: Installed) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(LANGSMITH_TRACING="false", LANGGRAPH_CLI_NO_ANALYTICS="1")
    env.update(LANGGRAPH_NO_VERSION_CHECK="true", SELF_REFINE_MODEL="offline")
    process = subprocess.Popen(
        [str(installed.bin / "self-refine"), "studio", "--port", str(port)],
        cwd=installed.home,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        graphs = _graph_ids(port, process)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        output = process.communicate(timeout=60)[0].decode(errors="replace")
    assert graphs == {"self_refine", "chat"}, output


def _graph_ids(port: int, process: subprocess.Popen[bytes]) -> set[str]:
    """The graph ids the server offers, once it answers (at most two minutes)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/assistants/search",
            data=b"{}",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as reply:
                return {assistant["graph_id"] for assistant in json.load(reply)}
        except OSError:
            time.sleep(0.5)
    return set()
