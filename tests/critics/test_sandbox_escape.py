"""Hostile code trying to reach past the sandbox: other processes, host sockets, a dead host.

Each attack runs twice where it matters: as plain code without the Python
audit hook (only the kernel contains it), and through `_posixsubprocess.fork_exec`,
which starts a fresh interpreter the audit hook never sees.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from self_refine.critics.sandbox.host import (
    CodeTest,
    SandboxLimits,
    SandboxRun,
    remove_stale_dirs,
    run_python_tests,
)

PASS = [CodeTest("assert True")]
ROOT = Path(__file__).resolve().parents[2]
ISOLATION = ROOT / "self_refine" / "critics" / "sandbox" / "isolation.py"

# Runs PAYLOAD in a new interpreter started by fork_exec, which raises no audit event.
BYPASS = """
import os, sys, _posixsubprocess
found = [
    p for p in (sys.executable, '/usr/bin/python3', '/usr/local/bin/python3') if os.path.exists(p)
]
if not found:
    print('no interpreter to start')
    raise SystemExit(0)
python = found[0]
out_r, out_w = os.pipe()
err_r, err_w = os.pipe()
pid = _posixsubprocess.fork_exec(
    [python, '-c', PAYLOAD], [os.fsencode(python)], True,
    tuple(sorted((out_w, err_w))), None, None, -1, -1, -1, out_w, -1, out_w, err_r, err_w,
    True, False, -1, None, None, None, -1, None, False)
os.close(out_w)
os.close(err_w)
output = b''
while chunk := os.read(out_r, 65536):
    output += chunk
os.waitpid(pid, 0)
print('bypass ran')
print(output.decode())
"""


def _attack(payload: str, via: str) -> SandboxRun:
    """Run `payload` as the code (kernel only) or through fork_exec (audit hook on)."""
    if via == "direct":
        return run_python_tests(payload, PASS, guards=False)
    run = run_python_tests(f"PAYLOAD = {payload!r}\n{BYPASS}", PASS, guards=True)
    if "no interpreter to start" in run.stdout:
        pytest.skip("no Python interpreter is reachable inside the sandbox to start")
    assert "bypass ran" in run.stdout, run  # the hook did not stop it: the kernel must
    return run


def _require(run: SandboxRun, aspect: str, holds: str) -> None:
    """Skip when the run reports that the kernel refused what `aspect` needs."""
    if not run.isolation.get(aspect, holds).startswith(holds):
        pytest.skip(
            f"the kernel refused the namespace here: {aspect} = {run.isolation.get(aspect)}"
        )


@pytest.fixture
def canary() -> Iterator[tuple[str, int]]:
    """A host process holding a secret on its command line and in its environment."""
    secret = f"sk-canary-{uuid.uuid4().hex}"
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", f"--api-key={secret}"],
        env={**os.environ, "CANARY_API_KEY": secret},
    )
    yield secret, process.pid
    process.kill()
    process.wait()


@pytest.mark.parametrize("via", ["direct", "fork_exec"])
def test_other_processes_command_lines_and_environments_are_out_of_sight(
    canary: tuple[str, int], via: str
) -> None:
    secret, pid = canary
    payload = (
        # in halves, so that the payload's own command line does not hold the secret
        f"SECRET = {secret[:12].encode()!r} + {secret[12:].encode()!r}\n"
        "import os\n"
        "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
        "found = 0\n"
        "for p in pids:\n"
        "    for name in ('cmdline', 'environ'):\n"
        "        try:\n"
        "            found += SECRET in open(f'/proc/{p}/{name}', 'rb').read()\n"
        "        except OSError:\n"
        "            pass\n"
        f"print('found', found, 'canary' if os.path.exists('/proc/{pid}') else 'no-canary')\n"
        "print('pids', len(pids))\n"
    )
    run = _attack(payload, via)
    _require(run, "processes", "only this run's")
    assert "found 0" in run.stdout, run.stdout
    assert secret not in run.stdout + run.stderr
    if pid > 50:  # a low pid may exist inside the namespace by coincidence
        assert "no-canary" in run.stdout
    visible = int(run.stdout.split("pids ", 1)[1].split()[0])
    assert visible <= 4  # init, the worker, and the fork_exec child when there is one


@pytest.fixture
def unix_listeners() -> Iterator[tuple[str, str, list[bytes]]]:
    """A socket file under the host's /tmp and an abstract socket, recording what arrives."""
    name = f"self-refine-canary-{uuid.uuid4().hex}"
    path = str(Path(tempfile.gettempdir()) / f"{name}.sock")
    servers = []
    for address in (path, f"\0{name}"):
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(address)
        if not address.startswith("\0"):
            os.chmod(address, 0o777)  # open to every user, as many host services' sockets are
        server.listen()
        server.settimeout(0.2)
        servers.append(server)
    received: list[bytes] = []
    stop = threading.Event()

    def serve(server: socket.socket) -> None:
        while not stop.is_set():
            try:
                connection = server.accept()[0]
            except TimeoutError:
                continue
            connection.settimeout(2)
            try:
                received.append(connection.recv(100) or b"(connected)")
            except OSError:
                received.append(b"(connected)")
            connection.close()

    threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    yield path, name, received
    stop.set()
    for thread in threads:
        thread.join()
    for server in servers:
        server.close()
    os.unlink(path)


@pytest.mark.parametrize("via", ["direct", "fork_exec"])
def test_host_unix_sockets_file_and_abstract_are_unreachable(
    unix_listeners: tuple[str, str, list[bytes]], via: str
) -> None:
    path, name, received = unix_listeners
    payload = (
        "import os, socket\n"
        f"print('socket file visible' if os.path.exists({path!r}) else 'socket file hidden')\n"
        f"for address in ({path!r}, '\\0' + {name!r}):\n"
        "    try:\n"
        "        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "        s.settimeout(2)\n"
        "        s.connect(address)\n"
        "        s.sendall(b'leak')\n"
        "        print('connected')\n"
        "    except OSError as error:\n"
        "        print('refused', error.errno)\n"
    )
    run = _attack(payload, via)
    _require(run, "network", "none")
    _require(run, "filesystem", "read-only")
    assert "socket file hidden" in run.stdout, run.stdout
    assert run.stdout.count("refused") == 2 and "connected" not in run.stdout, run.stdout
    assert received == []


HOST_SCRIPT = """
from self_refine.critics.sandbox.host import CodeTest, SandboxLimits, run_python_tests
code = (
    "import os, time\\n"
    "if os.fork() == 0:\\n"
    "    os.setsid()\\n"
    "    time.sleep(100000)\\n"
    "time.sleep(100000)\\n"
)
run_python_tests(code, [CodeTest("assert True")], limits=SandboxLimits(timeout=3600))
"""


def _descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except (OSError, ValueError):
            continue
        if entry.isdigit() and " Z " not in stat[stat.rfind(")") :][:4]:
            parents[int(entry)] = int(stat[stat.rfind(")") + 2 :].split()[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_sandboxed_code_does_not_outlive_its_host(how: signal.Signals) -> None:
    env = {**os.environ, "LANGSMITH_TRACING": "false", "PYTHONPATH": str(ROOT)}
    host = subprocess.Popen([sys.executable, "-c", HOST_SCRIPT], env=env, cwd=ROOT)
    try:
        run_processes: set[int] = set()
        for _ in range(600):  # the runner, init, the worker and its sleeping child
            run_processes = _descendants(host.pid)
            if len(run_processes) >= 4 or host.poll() is not None:
                break
            time.sleep(0.05)
        assert len(run_processes) >= 3, f"the sandbox did not start: {run_processes}"
        time.sleep(0.5)  # let the payload fork and sleep
        run_processes |= _descendants(host.pid)
        dirs = list(Path(tempfile.gettempdir()).glob(f"self-refine-*-{host.pid}-*"))
        assert len(dirs) == 2
        host.send_signal(how)
        host.wait(timeout=30)
        for _ in range(100):  # at most ~5 s
            left = [pid for pid in run_processes if _alive(pid)]
            if not left:
                break
            time.sleep(0.05)
        assert not left, f"still running after the host died: {left}"
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    removed = remove_stale_dirs()
    assert set(dirs) <= set(removed)
    assert not [d for d in dirs if d.exists()]


def test_temp_dirs_of_a_live_host_are_kept(tmp_path: Path) -> None:
    mine = Path(tempfile.mkdtemp(prefix=f"self-refine-work-{os.getpid()}-"))
    try:
        run = run_python_tests("x = 1", PASS, limits=SandboxLimits(timeout=5))
        assert run.passed
        assert mine.exists()
    finally:
        mine.rmdir()


def _load_isolation() -> Any:
    found = importlib.util.spec_from_file_location("sandbox_isolation", ISOLATION)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


@pytest.mark.skipif(os.geteuid() != 0, reason="simulating an unprivileged host needs root")
def test_unprivileged_host_gets_a_private_pid_namespace_and_tmp(canary: tuple[str, int]) -> None:
    """The path a non-root host takes: the runner's user namespace carries the PID namespace."""
    iso = _load_isolation()
    uid = random.randrange(1_800_000_000, 1_900_000_000)
    work = Path(tempfile.mkdtemp(prefix="self-refine-test-"))  # the user must reach it
    os.chown(work, uid, uid)
    report_r, report_w = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked child (the runner's part)
        out: dict[str, Any] = {}
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            out["outer"] = sorted(iso.enter_pid_namespace(False))
            if out["outer"] == ["pid", "user"] and (inner := os.fork()) == 0:
                iso.enter_namespaces(True)  # the worker's part, as the namespace's first process
                out["filesystem"] = iso.lock_filesystem(str(work), [], str(work / "x"), True)
                out["pids"] = [p for p in os.listdir("/proc") if p.isdigit()]
                out["canary"] = os.path.exists(f"/proc/{canary[1]}")
                out["tmp"] = os.listdir(tempfile.gettempdir())
            elif out["outer"] == ["pid", "user"]:
                os.waitpid(inner, 0)
                os._exit(0)
        except Exception as error:  # noqa: BLE001 - reported to the test
            out["error"] = repr(error)
        os.write(report_w, json.dumps(out).encode())
        os._exit(0)
    os.close(report_w)
    os.waitpid(child, 0)
    out = json.loads(os.read(report_r, 100_000) or b"{}")
    shutil.rmtree(work)
    if out.get("outer") != ["pid", "user"]:
        pytest.skip(f"unprivileged user namespaces are not available here: {out}")
    assert "error" not in out, out
    assert out["filesystem"] == "read-only except the working directory"
    assert out["pids"] == ["1"] and out["canary"] is False
    assert out["tmp"] == [work.name]  # the host's /tmp is covered; only the run's dir is back
