"""Run untrusted Python code and its tests in a contained child process.

What holds, and how (see the threat model in docs/guides/sandbox.md):

- a separate process tree whose code runs in a private PID namespace with its
  own /proc (no other process's cmdline or environ is visible); when the
  namespace's first process ends, the kernel kills all of it; parent-death
  signals tie the tree to the host, so nothing outlives a killed host;
- hard rlimits on CPU time, address space, file size, open files and processes;
- as root: a uid of its own, so the process limit bounds fork bombs and the host
  user's files and processes are out of reach;
- where the kernel allows it: private network (no interfaces, no abstract
  sockets), IPC and mount namespaces, with /tmp, /var/tmp, /dev/shm, /run
  covered by empty tmpfs mounts and every mount read-only except the fresh
  working directory, itself a tmpfs of `disk_mb` (so the code's files, together,
  never reach the host's disk);
- an environment with no secrets; temp dirs named after the host's pid, removed
  afterwards or, after a crash of the host, at the next start;
- inside the child, a Python audit hook (a second line only) that refuses
  sockets, other programs, signals, ctypes and writes outside the working directory.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from self_refine.critics.sandbox.process import (
    RunFiles,
    read_bounded,
    read_events,
    run_contained,
)
from self_refine.errors import ConfigError, SelfRefineError

_PREFIX = "self-refine-"
_STALE = re.compile(rf"{_PREFIX}(?:sandbox|work)-(\d+)-")

__all__ = [
    "CodeTest",
    "IOTest",
    "SandboxLimits",
    "SandboxRun",
    "TestOutcome",
    "remove_stale_dirs",
    "require_sandbox",
    "run_python_tests",
]


@dataclass(frozen=True)
class SandboxLimits:
    """Bounds on one sandboxed run; every one is enforced by the kernel, not by the code."""

    timeout: float = 5.0
    cpu_seconds: int = 10
    memory_mb: int = 512
    file_size_mb: int = 16
    disk_mb: int = 64
    max_processes: int = 32
    max_open_files: int = 64
    output_chars: int = 4000

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"sandbox limit {name} must be a positive number, got {value!r}")


@dataclass(frozen=True)
class CodeTest:
    """A Python statement run after the code, usually an assert."""

    source: str
    counts: bool = True  # False for setup (imports, helper definitions) that is not a test


@dataclass(frozen=True)
class IOTest:
    """Run the code as a program on `stdin`; its output must equal `stdout` (up to spacing)."""

    stdin: str
    stdout: str


@dataclass(frozen=True)
class TestOutcome:
    """What happened to one test."""

    test: CodeTest | IOTest
    passed: bool
    detail: str = ""
    ran: bool = True


@dataclass(frozen=True)
class SandboxRun:
    """The result of one sandboxed run."""

    outcomes: list[TestOutcome]
    load_error: str | None = None
    problem: str | None = None
    stdout: str = ""
    stderr: str = ""
    isolation: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when the code loaded, the run finished in bounds and every test passed."""
        return (
            self.load_error is None
            and self.problem is None
            and all(o.passed for o in self.outcomes)
        )


def require_sandbox() -> None:
    """Raise ConfigError on platforms the sandbox does not support (it needs Linux)."""
    if not sys.platform.startswith("linux"):
        raise ConfigError(
            f"running generated code needs Linux (this is {sys.platform}): run python_tests "
            "on a Linux host or container, or leave it out of the critics"
        )


def _owner_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_dirs() -> list[Path]:
    """Remove the temp dirs of sandbox runs whose host process is gone; return them.

    A host killed mid-run cannot clean up after itself; the next run does.
    """
    removed = []
    root = Path(tempfile.gettempdir())
    for entry in os.scandir(root):
        found = _STALE.match(entry.name)
        if found and entry.is_dir(follow_symlinks=False):
            if not _owner_alive(int(found.group(1))):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(root / entry.name)
    return removed


def _spec_test(test: CodeTest | IOTest) -> dict[str, str]:
    if isinstance(test, IOTest):
        return {"stdin": test.stdin, "stdout": test.stdout}
    return {"source": test.source}


def _truncate(data: bytes, limit: int, total: int) -> str:
    text = data.decode("utf-8", "replace")
    if total > limit or len(text) > limit:
        return text[:limit] + f"\n... [output truncated: {total:,} bytes in all]"
    return text


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _problem(returncode: int, finished: bool, timed_out: bool, limits: SandboxLimits) -> str | None:
    if timed_out:
        return f"timed out after {_seconds(limits.timeout)}"
    if returncode < 0:
        sig = -returncode
        if sig == signal.SIGXCPU:
            return f"CPU time limit exceeded ({_seconds(limits.cpu_seconds)})"
        if sig == signal.SIGKILL:
            return "killed by the kernel (SIGKILL: the CPU or memory limit)"
        if sig == signal.SIGSEGV:
            return "crashed (segmentation fault; deep recursion or the memory limit)"
        return f"killed by signal {signal.Signals(sig).name}"
    if not finished:
        return f"the code ended the process (exit status {returncode}) before the tests finished"
    return None


def run_python_tests(
    code: str,
    tests: Sequence[CodeTest | IOTest],
    *,
    limits: SandboxLimits | None = None,
    guards: bool = True,
) -> SandboxRun:
    """Run `code` and then `tests` in a contained child process and report each test.

    `guards=False` leaves out the Python-level audit hook, so that only the
    kernel's mechanisms contain the code (used to test that they hold).
    """
    require_sandbox()
    limits = limits or SandboxLimits()
    remove_stale_dirs()
    owner = os.getpid()
    private = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}sandbox-{owner}-"))
    work = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}work-{owner}-")).resolve()
    try:
        return _run(code, list(tests), limits, guards, private, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(private, ignore_errors=True)


def _run(
    code: str,
    tests: list[CodeTest | IOTest],
    limits: SandboxLimits,
    guards: bool,
    private: Path,
    work: Path,
) -> SandboxRun:
    spec = {
        "code": code,
        "tests": [_spec_test(t) for t in tests],
        "limits": {
            **asdict(limits),
            "cpu_seconds": math.ceil(limits.cpu_seconds),
            "disk_mb": math.ceil(limits.disk_mb),
        },
        "work": str(work),
        "private": str(private),
        "guards": guards,
    }
    files = RunFiles(private)
    finished_in_time = run_contained(spec, files, work, limits.timeout)
    return _report(tests, limits, files, not finished_in_time)


def _report(
    tests: list[CodeTest | IOTest],
    limits: SandboxLimits,
    files: RunFiles,
    timed_out: bool,
) -> SandboxRun:
    events = read_events(files.results)
    ended = next((e for e in events if e.get("event") == "exit"), None)
    returncode = os.waitstatus_to_exitcode(int(ended["status"])) if ended else -signal.SIGKILL
    kinds = {e.get("event") for e in events}
    setup = next((e for e in events if e.get("event") == "setup_error"), None)
    if setup is not None:
        raise SelfRefineError(f"the sandbox could not isolate the code: {setup.get('error')}")
    if "ready" not in kinds:
        detail = (
            read_bounded(files.stderr, 2000).decode("utf-8", "replace").strip().splitlines()[-1:]
        )
        raise SelfRefineError(
            f"the sandbox did not start (runner status {returncode}): "
            f"{detail[0] if detail else 'no error output'}"
        )
    load = next((e for e in events if e.get("event") == "load_error"), None)
    isolation: dict[str, Any] = next(
        (e.get("isolation", {}) for e in events if e.get("event") == "ready"), {}
    )
    problem = _problem(returncode, "done" in kinds, timed_out, limits)
    done = {e.get("index"): e for e in events if e.get("event") == "result"}
    started = [e.get("index") for e in events if e.get("event") == "start"]
    if problem and load is None and started[-1:] == [-1]:
        load = {"error": f"{problem}, while running the code before any test"}
    outcomes = []
    for index, test in enumerate(tests):
        if index in done:
            event = done[index]
            outcomes.append(TestOutcome(test, bool(event.get("passed")), str(event.get("detail"))))
        elif index in started and load is None and problem:
            outcomes.append(TestOutcome(test, False, problem))
        else:
            outcomes.append(TestOutcome(test, False, "not run", ran=False))
    size = limits.output_chars
    return SandboxRun(
        outcomes=outcomes,
        load_error=str(load.get("error")) if load else None,
        problem=problem,
        stdout=_truncate(read_bounded(files.stdout, size * 4), size, files.stdout.stat().st_size),
        stderr=_truncate(read_bounded(files.stderr, size * 4), size, files.stderr.stat().st_size),
        isolation={str(k): str(v) for k, v in isolation.items()},
    )
