"""Start the sandbox's runner, wait for it, and make sure nothing it started survives.

The host side of the sandbox; see host.py for what is contained and how.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["RunFiles", "read_bounded", "read_events", "run_contained"]

_HERE = Path(__file__).resolve().parent
_RUNNER = _HERE / "runner.py"
_MODULES = {"isolation_module": "isolation.py", "guard_module": "guard.py"}
_STARTUP_GRACE = 30.0  # seconds the child may take to isolate itself before its clock starts
_MAX_REPORT_BYTES = 1 << 20
_ENV_KEEP = ("LANG", "LC_ALL", "TZ")


@dataclass(frozen=True)
class RunFiles:
    """Where one run's spec, reports and output live: a directory only the host can enter."""

    private: Path

    @property
    def spec(self) -> Path:
        """The run's spec, read by the runner before it drops privileges."""
        return self.private / "spec.json"

    @property
    def results(self) -> Path:
        """The runner's JSON-lines reports."""
        return self.private / "results.jsonl"

    @property
    def stdout(self) -> Path:
        """What the code printed."""
        return self.private / "stdout"

    @property
    def stderr(self) -> Path:
        """What the code and the runner wrote to standard error."""
        return self.private / "stderr"


def _one_off_uids() -> list[int]:
    """One-off uids for a root host: a high range first, then one that user namespaces map."""
    return [random.randrange(1_800_000_000, 1_900_000_000), random.randrange(40_000, 60_000)]


def _environment(work: str) -> dict[str, str]:
    env = {key: os.environ[key] for key in _ENV_KEEP if key in os.environ}
    env.update(
        PATH="/usr/local/bin:/usr/bin:/bin",
        HOME=work,
        TMPDIR=work,
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONIOENCODING="utf-8",
    )
    return env


def read_bounded(path: Path, limit: int) -> bytes:
    """At most `limit` bytes from the start of a file."""
    with open(path, "rb") as handle:
        return handle.read(limit)


def read_events(path: Path) -> list[dict[str, Any]]:
    """The runner's reports (JSON objects, one per line), ignoring anything malformed."""
    events = []
    for line in read_bounded(path, _MAX_REPORT_BYTES).decode("utf-8", "replace").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _ready(path: Path) -> dict[str, Any] | None:
    return next((e for e in read_events(path) if e.get("event") in ("ready", "setup_error")), None)


def _live_processes(uids: Sequence[int]) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        uid = int(fields.get("Uid", "-1").split()[0])
        if uid in uids and not fields.get("State", "").strip().startswith("Z"):
            found.append(int(entry))
    return found


def _kill_all(proc: subprocess.Popen[bytes], uids: Sequence[int]) -> None:
    """Kill the run's process group and, as root, every process of its uids."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if os.geteuid() != 0:
        return
    for _ in range(200):
        pids = _live_processes(uids)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


def _kill(pid: Any) -> None:
    if isinstance(pid, int) and pid > 1:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _wait(proc: subprocess.Popen[bytes], results: Path, timeout: float) -> bool:
    """Wait for the run, its clock starting once the worker is isolated; False on timeout.

    On timeout the worker is killed; the runner then kills and collects whatever
    the worker left behind, and exits.
    """
    deadline = time.monotonic() + _STARTUP_GRACE
    while (ready := _ready(results)) is None:
        if proc.poll() is not None:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    try:
        proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        worker = next((e for e in read_events(results) if e.get("event") == "worker"), ready)
        _kill(worker.get("pid"))
    try:
        proc.wait(timeout=_STARTUP_GRACE)
    except subprocess.TimeoutExpired:
        pass
    return False


def run_contained(spec: dict[str, Any], files: RunFiles, work: Path, timeout: float) -> bool:
    """Run the runner on `spec`; return False when it had to be stopped for taking too long."""
    uids = _one_off_uids()
    paths = (files.results, files.stdout, files.stderr)
    fds = [os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) for p in paths]
    modules = {key: str(_HERE / name) for key, name in _MODULES.items()}
    files.spec.write_text(
        json.dumps({**spec, **modules, "uids": uids, "results_fd": fds[0], "host_pid": os.getpid()})
    )
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", str(_RUNNER), str(files.spec)],
            cwd=work,
            env=_environment(str(work)),
            stdin=subprocess.DEVNULL,
            stdout=fds[1],
            stderr=fds[2],
            pass_fds=(fds[0],),
            start_new_session=True,
        )
    finally:
        for fd in fds:
            os.close(fd)
    try:
        return _wait(proc, files.results, timeout)
    finally:
        _kill_all(proc, uids)
        proc.wait()
