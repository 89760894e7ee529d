"""The peers the figures are compared with, run in a virtual environment of their own.

langgraph-reflection and DSPy are never dependencies of the library: they live in
`benchmarks/.venv-peers` (or the folder `SELF_REFINE_PEERS_VENV` names), made on
first use from `requirements.txt` (pinned), with the library installed there too
(editable) so that both sides run on the same LangGraph and LangChain. Each peer
measurement runs in a child process of that environment (`python -m
benchmarks.peers.<module> ...`), which prints one JSON object: its rows come back
into the same table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

__all__ = ["PEERS_VENV", "peer_python", "peer_versions", "run_peer"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PEERS_VENV = Path(os.environ.get("SELF_REFINE_PEERS_VENV") or HERE.parent / ".venv-peers")
_STAMP = PEERS_VENV / ".installed"


def _requirements() -> str:
    return (HERE / "requirements.txt").read_text()


def peer_python() -> Path:
    """The peers' interpreter, after making their environment if it is missing or stale."""
    python = PEERS_VENV / "bin" / "python"
    if _STAMP.exists() and _STAMP.read_text() == _requirements() and python.exists():
        return python
    print(f"making {PEERS_VENV} (the peers: dspy, langgraph-reflection)...", file=sys.stderr)
    venv.EnvBuilder(with_pip=True, clear=True).create(PEERS_VENV)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "-r", str(HERE / "requirements.txt")]
        + ["-e", str(ROOT)],
        check=True,
    )
    _STAMP.write_text(_requirements())
    return python


def _env() -> dict[str, str]:
    env = dict(os.environ, LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["DSPY_CACHEDIR"] = env.get("DSPY_CACHEDIR") or str(PEERS_VENV / "dspy-cache")
    return env


def run_peer(module: str, *args: str, timeout: float = 1800) -> Any:
    """Run `benchmarks.peers.<module>` in the peers' environment; the JSON it printed last."""
    done = subprocess.run(
        [str(peer_python()), "-m", f"benchmarks.peers.{module}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"peer {module} failed: {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def peer_versions() -> dict[str, str]:
    """The peers' versions, as their environment reports them."""
    versions: dict[str, str] = run_peer("versions")
    return versions
