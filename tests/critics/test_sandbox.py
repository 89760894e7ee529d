"""Hostile code in the sandbox: every attempt is contained and reported, and the host survives."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from self_refine.critics.sandbox.host import CodeTest, IOTest, SandboxLimits, run_python_tests

FAST = SandboxLimits(timeout=1)
PASS = [CodeTest("assert True")]
AS_ROOT = os.geteuid() == 0


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in state


def _pids(stdout: str) -> list[int]:
    return [int(word) for line in stdout.splitlines() for word in line.split() if word.isdigit()]


def _left_behind(run: Any, printed: list[int]) -> list[int]:
    """Live host processes of a finished run, given the pids its code printed.

    In a private PID namespace the printed pids mean nothing to the host, so
    the run's one-off uid finds them instead (as root).
    """
    if not run.isolation.get("processes", "").startswith("only this run's"):
        return [pid for pid in printed if _alive(pid)]
    if not AS_ROOT:
        pytest.skip("a run in a private PID namespace is found by its uid, which needs root")
    uid = int(run.isolation["user"].split()[1])
    return [
        int(p) for p in os.listdir("/proc") if p.isdigit() and _uid_of(p) == uid and _alive(int(p))
    ]


def test_passing_and_failing_tests_are_reported_with_values() -> None:
    run = run_python_tests(
        "def add(a, b):\n    return a + b + (a == 2)\n",
        [CodeTest("assert add(1, 2) == 3"), CodeTest("assert add(2, 2) == 4")],
    )
    assert [o.passed for o in run.outcomes] == [True, False]
    assert run.outcomes[1].detail == "add(2, 2) returned 5, expected 4"
    assert not run.passed


def test_infinite_loop_times_out() -> None:
    run = run_python_tests(
        "def f():\n    while True:\n        pass\n", [CodeTest("f()")], limits=FAST
    )
    assert run.problem == "timed out after 1 s"
    assert run.outcomes[0].detail == "timed out after 1 s"
    assert not run.passed


def test_infinite_loop_while_loading_is_reported_as_such() -> None:
    run = run_python_tests("while True:\n    pass\n", PASS, limits=FAST)
    assert run.load_error == "timed out after 1 s, while running the code before any test"
    assert not run.outcomes[0].ran


def test_cpu_limit_stops_a_busy_loop_before_the_wall_clock() -> None:
    run = run_python_tests(
        "while True:\n    pass\n", PASS, limits=SandboxLimits(timeout=30, cpu_seconds=1)
    )
    assert run.problem == "CPU time limit exceeded (1 s)"


def test_memory_bomb_hits_the_memory_limit() -> None:
    run = run_python_tests(
        "blocks = [bytearray(10**7) for _ in range(10**4)]",
        PASS,
        limits=SandboxLimits(memory_mb=256),
    )
    assert run.load_error == "memory limit exceeded (256 MB)"


def test_memory_bomb_inside_a_test_is_reported_on_that_test() -> None:
    run = run_python_tests("def grow():\n    return bytearray(8 * 2**30)\n", [CodeTest("grow()")])
    assert run.outcomes[0].detail == "memory limit exceeded (512 MB)"


def test_huge_output_is_bounded_and_truncated() -> None:
    limits = SandboxLimits(output_chars=1000, file_size_mb=2)
    run = run_python_tests("while True:\n    print('x' * 10000)\n", PASS, limits=limits)
    assert run.load_error == "file size limit exceeded (2 MB)"
    assert len(run.stdout) < 1200
    assert "output truncated" in run.stdout


def test_big_file_hits_the_file_size_limit() -> None:
    code = "with open('big.bin', 'wb') as f:\n    f.write(b'x' * (3 << 20))\n"
    run = run_python_tests(code, PASS, limits=SandboxLimits(file_size_mb=1))
    assert run.load_error == "file size limit exceeded (1 MB)"


_FILL = (
    "def fill():\n"
    "    for n in range(40):  # 600 MB in files each under the 16 MB file size limit\n"
    "        with open(f'part{n}', 'wb') as f:\n"
    "            f.write(b'x' * (15 << 20))\n"
    "    return 'filled'\n"
)


def _disk_capped(run: Any) -> None:
    if run.isolation.get("disk", "").startswith("not capped"):
        pytest.skip(f"the kernel gives no private mount namespace here: {run.isolation['disk']}")


def test_files_that_together_fill_the_disk_cap_fail_the_test_not_the_host() -> None:
    run = run_python_tests(_FILL, [CodeTest("assert fill() == 'filled'")])
    _disk_capped(run)
    assert run.isolation["disk"] == "64 MB for the working directory (a tmpfs of its own)"
    assert not run.passed
    assert run.outcomes[0].detail.startswith("disk quota exceeded (64 MB for the working")


def test_a_flood_of_empty_files_hits_the_same_cap() -> None:
    code = "for n in range(100_000):\n    open(f'e{n}', 'w').close()\n"
    run = run_python_tests(code, PASS, limits=SandboxLimits(disk_mb=2))
    _disk_capped(run)
    assert run.load_error == "disk quota exceeded (2 MB for the working directory)"


def test_open_file_limit() -> None:
    run = run_python_tests("files = [open(f'f{i}', 'w') for i in range(1000)]", PASS)
    assert run.load_error is not None
    assert "Too many open files" in run.load_error and "open file limit: 64" in run.load_error


def test_fork_attempts_are_bounded_by_the_process_limit_and_cleaned_up() -> None:
    code = (
        "import os, time\n"
        "ready, told = os.pipe()\n"
        "forked = 0\n"
        "try:\n"
        "    for _ in range(1000):\n"
        "        if os.fork() == 0:\n"
        "            print(os.getpid(), flush=True)\n"
        "            os.write(told, b'x')\n"
        "            time.sleep(60)\n"
        "            os._exit(0)\n"
        "        forked += 1\n"
        "except OSError as error:\n"
        "    print('forked', forked, error.errno, flush=True)\n"
        "seen = 0\n"
        "while seen < forked:\n"
        "    seen += len(os.read(ready, 64))\n"
    )
    run = run_python_tests(code, PASS, limits=SandboxLimits(max_processes=8))
    summary = [line for line in run.stdout.splitlines() if line.startswith("forked")]
    assert summary, run
    forked = int(summary[0].split()[1])
    assert 0 < forked < 8
    assert summary[0].split()[2] == "11"  # EAGAIN: the kernel refused the next fork
    children = _pids("\n".join(line for line in run.stdout.splitlines() if line != summary[0]))
    assert len(children) == forked
    assert not _left_behind(run, children)
    assert run.passed


def test_endless_fork_bomb_is_contained_and_leaves_nothing_behind() -> None:
    code = (
        "import os\n"
        "print(os.getpid(), flush=True)\n"
        "while True:\n"
        "    try:\n"
        "        os.fork()\n"
        "    except OSError:\n"
        "        pass\n"
    )
    run = run_python_tests(code, PASS, limits=FAST)
    assert "timed out after 1 s" in (run.load_error or "")
    if AS_ROOT:
        uid = int(run.isolation["user"].split()[1])
        left = [p for p in os.listdir("/proc") if p.isdigit() and _uid_of(p) == uid]
        assert not [p for p in left if _alive(int(p))]


def _uid_of(pid: str) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("Uid:"))


def test_process_that_escapes_its_session_is_still_killed() -> None:
    code = (
        "import os, time\n"
        "ready, told = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        print(os.getpid(), flush=True)\n"
        "        os.write(told, b'x')\n"
        "        time.sleep(60)\n"
        "    os._exit(0)\n"
        "os.read(ready, 1)\n"
    )
    run = run_python_tests(code, PASS)
    escaped = _pids(run.stdout)
    assert len(escaped) == 1
    assert not _left_behind(run, escaped)


@pytest.fixture
def secret_holder(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A host process holding an API key in its environment, as a server would."""
    secret = f"sk-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], env={**os.environ}
    )
    yield secret
    holder.kill()
    holder.wait()


def test_api_keys_are_not_visible_to_the_code(secret_holder: str) -> None:
    code = (
        f"SECRET = {secret_holder!r}\n"
        "import os\n"
        "print('env', os.environ.get('OPENAI_API_KEY'))\n"
        "print('keys', sorted(os.environ))\n"
        "found = 0\n"
        "for pid in os.listdir('/proc'):\n"
        "    try:\n"
        "        found += SECRET in open(f'/proc/{pid}/environ', 'rb').read().decode('latin-1')\n"
        "    except OSError:\n"
        "        pass\n"
        "print('found', found)\n"
    )
    run = run_python_tests(code, PASS)
    assert "env None" in run.stdout
    keys = run.stdout.split("keys ", 1)[1].splitlines()[0]
    assert "OPENAI_API_KEY" not in keys and "KEY" not in keys and "TOKEN" not in keys
    if AS_ROOT:  # as another user, other processes' environments are unreadable
        assert "found 0" in run.stdout
    assert secret_holder not in run.stdout + run.stderr


@pytest.mark.parametrize("guards", [True, False], ids=["python-guard", "kernel-only"])
def test_writing_outside_the_working_directory_fails(tmp_path: Path, guards: bool) -> None:
    targets = [tmp_path / "escape.txt", Path("/tmp") / f"escape-{uuid.uuid4().hex}.txt"]
    code = "import os\n" + "".join(
        f"try:\n    open({str(t)!r}, 'w').write('x')\n    print('wrote', {str(t)!r})\n"
        f"except OSError as error:\n    print('refused', type(error).__name__, error.errno)\n"
        for t in targets
    )
    code += "open('inside.txt', 'w').write('fine')\nprint('inside ok')\n"
    run = run_python_tests(code, PASS, guards=guards)
    if not guards and not run.isolation.get("filesystem", "").startswith("read-only"):
        pytest.skip(f"no mount namespace here: {run.isolation.get('filesystem')}")
    assert run.stdout.count("refused") == 2, run.stdout
    assert "inside ok" in run.stdout
    assert not any(t.exists() for t in targets)


def test_working_directory_is_fresh_and_removed_afterwards() -> None:
    code = "import os\nprint(os.getcwd())\nprint(sorted(os.listdir('.')))\nopen('a.txt', 'w')\n"
    first = run_python_tests(code, PASS)
    second = run_python_tests(code, PASS)
    cwd1, listing1 = first.stdout.splitlines()[:2]
    cwd2, listing2 = second.stdout.splitlines()[:2]
    assert cwd1 != cwd2
    assert listing1 == listing2 == "[]"
    assert not Path(cwd1).exists() and not Path(cwd2).exists()


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    """A TCP server on 127.0.0.1 that records every connection it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


@pytest.mark.parametrize("guards", [True, False], ids=["python-guard", "kernel-only"])
def test_opening_a_socket_does_not_reach_the_network(
    listener: tuple[int, list[object]], guards: bool
) -> None:
    port, accepted = listener
    code = (
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "    print('connected')\n"
        "except OSError as error:\n"
        "    print('refused', error)\n"
    )
    run = run_python_tests(code, PASS, guards=guards)
    if not guards and not run.isolation.get("network", "").startswith("none"):
        pytest.skip(f"no network namespace here: {run.isolation.get('network')}")
    assert "refused" in run.stdout and "connected" not in run.stdout
    if guards:
        assert "network access is not allowed in the sandbox" in run.stdout
    assert accepted == []


def test_signalling_the_host_is_refused() -> None:
    run = run_python_tests("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n", PASS)
    assert run.load_error is not None and "signalling processes is not allowed" in run.load_error


def test_running_other_programs_and_ctypes_are_refused() -> None:
    code = (
        "import ctypes, subprocess\n"
        "for attempt in (lambda: subprocess.run(['true']), lambda: ctypes.CDLL(None)):\n"
        "    try:\n"
        "        attempt()\n"
        "    except PermissionError as error:\n"
        "        print(error)\n"
    )
    run = run_python_tests(code, PASS)
    assert "running other programs is not allowed in the sandbox" in run.stdout
    assert "ctypes is not allowed in the sandbox" in run.stdout


def test_exiting_early_is_reported() -> None:
    run = run_python_tests("import os\nos._exit(0)\n", PASS)
    assert run.load_error is not None
    assert "ended the process (exit status 0) before the tests finished" in run.load_error


def test_io_tests_feed_stdin_and_compare_stdout() -> None:
    code = "a, b = map(int, input().split())\nprint(a + b)\n"
    run = run_python_tests(code, [IOTest("1 2\n", "3\n"), IOTest("2 2", "5")])
    assert [o.passed for o in run.outcomes] == [True, False]
    assert run.outcomes[1].detail == "expected output '5', got '4\\n'"


def test_common_modules_import_inside_the_sandbox() -> None:
    code = (
        "import math, collections, itertools, functools, heapq, re, json\nprint(math.isqrt(17))\n"
    )
    run = run_python_tests(code, PASS)
    assert run.load_error is None and run.stdout.strip() == "4"


def test_bad_limits_are_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="sandbox limit timeout must be a positive number"):
        SandboxLimits(timeout=0)


def test_a_sandbox_that_cannot_start_is_an_error_not_a_failed_draft(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from self_refine.critics.sandbox import process as sandbox_process
    from self_refine.errors import SelfRefineError

    monkeypatch.setattr(sandbox_process, "_RUNNER", tmp_path / "missing_runner.py")
    with pytest.raises(SelfRefineError, match=r"the sandbox did not start .*missing_runner.py"):
        run_python_tests("x = 1", PASS)


def test_other_platforms_are_told_the_sandbox_needs_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    from self_refine.critics import VERIFIERS

    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(ValueError, match="running generated code needs Linux"):
        VERIFIERS["python_tests"]("t", "x = 1", {"tests": ["assert x == 1"]})


def _load_isolation() -> object:
    import importlib.util

    from self_refine.critics.sandbox import process as sandbox_process

    path = sandbox_process._HERE / "isolation.py"
    found = importlib.util.spec_from_file_location("sandbox_isolation", path)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


@pytest.mark.skipif(not AS_ROOT, reason="simulating an unprivileged host needs root")
def test_unprivileged_host_isolation_holds() -> None:
    """The path a non-root host takes: a user namespace instead of root's privileges."""
    import encodings.idna  # noqa: F401 - the unprivileged child cannot read root's stdlib
    import json
    import random

    iso: Any = _load_isolation()
    uid = random.randrange(1_800_000_000, 1_900_000_000)
    work = Path(tempfile.mkdtemp(prefix="self-refine-test-"))  # the user must reach it
    os.chown(work, uid, uid)
    outside = Path("/tmp") / f"escape-{uuid.uuid4().hex}.txt"
    report_r, report_w = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked child
        out: dict[str, Any] = {}
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            out["uncapped"] = iso.cap_disk(str(work), 1)  # no mount namespace yet: refused
            out["entered"] = sorted(iso.enter_namespaces(False))
            if "mount" in out["entered"]:
                out["filesystem"] = iso.lock_filesystem(str(work), [], str(work / "x"))
                out["capped"] = iso.cap_disk(str(work), 1)
            iso.forbid_new_privileges()
            os.chdir(work)
            iso.apply_limits(5, 256, 1, 64, iso.count_processes(uid) + 4)
            for name, attempt in (
                ("disk", lambda: [Path(f"b{n}").write_bytes(b"x" * (512 << 10)) for n in range(3)]),
                ("outside", lambda: open(outside, "w")),
                ("network", lambda: socket.create_connection(("127.0.0.1", 9), timeout=1)),
            ):
                try:
                    attempt()
                    out[name] = "allowed"
                except OSError as error:
                    out[name] = error.strerror
            hold_r, hold_w = os.pipe()
            forks = 0
            try:
                for _ in range(100):
                    if os.fork() == 0:
                        os.close(hold_w)
                        os.read(hold_r, 1)  # returns once the forking process has ended
                        os._exit(0)
                    forks += 1
            except OSError as error:
                out["forks"] = [forks, error.strerror]
        except Exception as error:  # noqa: BLE001 - reported to the test
            out["error"] = repr(error)
        os.write(report_w, json.dumps(out).encode())
        os._exit(0)
    os.close(report_w)
    os.waitpid(child, 0)
    out = json.loads(os.read(report_r, 100_000) or b"{}")
    shutil.rmtree(work)
    if not {"mount", "network"} <= set(out.get("entered", [])):
        pytest.skip(f"unprivileged user namespaces are not available here: {out}")
    assert "error" not in out, out
    assert out["filesystem"] == "read-only except the working directory"
    assert out["uncapped"] is False and out["capped"] is True
    assert out["disk"] == "No space left on device"
    assert out["outside"] == "Read-only file system" and not outside.exists()
    assert out["network"] == "Network is unreachable"
    assert out["forks"] == [4, "Resource temporarily unavailable"]
