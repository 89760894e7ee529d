"""The sandbox's child process: isolate itself, then run untrusted code and its tests.

Started by host.py as `python -I runner.py SPEC`; stdlib only. It
reports JSON lines on the file descriptor the spec names: `ready` (with what
isolation holds), `start` and `result` per test, then `done`. The code under
test runs in this same process, after every isolation step.

Longer than the ~300 lines a module should hold: it is one program, run by path in
the confined child with the standard library only, and a second file would be one
more thing to load (and to trust) before the guard is in place.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import os
import select
import signal
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

_PID = os.getpid()
_SPEC: dict[str, Any] = {}
_PRELOAD = (
    "abc array bisect calendar cmath collections collections.abc contextlib copy csv "
    "dataclasses datetime decimal enum fractions functools hashlib heapq itertools math "
    "numbers operator random re statistics string struct textwrap time typing unicodedata"
).split()


def _emit(**event: Any) -> None:
    """Report one event to the host; a forked copy of this process says nothing and ends."""
    if os.getpid() != _PID:
        os._exit(0)
    try:
        os.write(_SPEC["results_fd"], (json.dumps(event) + "\n").encode())
    except OSError:
        pass


def _isolate(spec: dict[str, Any], iso: ModuleType, outer: set[str]) -> dict[str, str]:
    """Apply every isolation step the platform allows; describe what holds.

    `outer` names the namespaces the runner entered before starting this worker.
    """
    as_root = os.geteuid() == 0
    work = spec["work"]
    report: dict[str, str] = {}
    entered = iso.enter_namespaces(as_root or "user" in outer)
    report["network"] = (
        "none (private network namespace)"
        if "network" in entered
        else "not removed by the kernel here; blocked in Python only"
    )
    limits = spec["limits"]
    uncapped = f"not capped here: each file is capped at {limits['file_size_mb']} MB, not their sum"
    if "mount" in entered:
        expose = [p for p in {*sys.path, os.path.dirname(os.__file__)} if p] if as_root else []
        stash = os.path.join(spec["private"], "x")
        fresh = "pid" in outer
        report["filesystem"] = iso.lock_filesystem(work, expose, stash, fresh_proc=fresh)
        private_proc = fresh and "/proc could not" not in report["filesystem"]
        report["disk"] = (
            f"{limits['disk_mb']} MB for the working directory (a tmpfs of its own)"
            if iso.cap_disk(work, limits["disk_mb"])
            else uncapped + " (the kernel refused a tmpfs)"
        )
    else:
        report["filesystem"] = "not locked by the kernel here; writes guarded in Python only"
        report["disk"] = uncapped + " (no private mount namespace)"
        private_proc = False
    report["processes"] = (
        "only this run's (private PID namespace and /proc)"
        if private_proc
        else "the host's processes are visible in /proc (no private PID namespace here)"
    )
    if as_root:
        if iso.blocking_ancestor(os.path.dirname(os.__file__)):
            for name in _PRELOAD:  # the unprivileged user could not import them later
                __import__(name)
        uid = iso.drop_privileges(spec["uids"], work)
        report["user"] = f"uid {uid} (unprivileged, this run only)"
        processes = spec["limits"]["max_processes"]
    else:
        report["user"] = "the host's own user"
        processes = spec["limits"]["max_processes"] + iso.count_processes(os.getuid())
    os.chdir(work)
    iso.die_with_parent()  # after the uid change, which clears it
    try:
        iso.forbid_new_privileges()
    except OSError:
        report["privileges"] = "could not drop capabilities"
    iso.apply_limits(
        limits["cpu_seconds"],
        limits["memory_mb"],
        limits["file_size_mb"],
        limits["max_open_files"],
        processes,
    )
    return report


def _describe(error: BaseException) -> str:
    """One line for an exception, naming the sandbox limit behind it when there is one."""
    limits = _SPEC["limits"]
    if isinstance(error, MemoryError):
        return f"memory limit exceeded ({limits['memory_mb']} MB)"
    if isinstance(error, SystemExit):
        return f"the code exited with status {error.code}"
    errno = getattr(error, "errno", None)
    if errno == 27:  # EFBIG
        return f"file size limit exceeded ({limits['file_size_mb']} MB)"
    if errno in (28, 122):  # ENOSPC, EDQUOT
        return f"disk quota exceeded ({limits['disk_mb']} MB for the working directory)"
    text = f"{type(error).__name__}: {error}".strip().rstrip(":")
    if errno == 11 and isinstance(error, OSError):  # EAGAIN from fork
        text += f" (process limit: {limits['max_processes']})"
    elif errno == 24:  # EMFILE
        text += f" (open file limit: {limits['max_open_files']})"
    elif errno == 30:  # EROFS
        text += " (only the working directory is writable)"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == "<solution>"]
    if frames:
        text += f" (line {frames[-1].lineno} of the code)"
    return text[:500]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def _check_assert(source: str, namespace: dict[str, Any]) -> str | None:
    """Run one test statement; return None when it passes, else what went wrong."""
    tree = ast.parse(source)
    node = tree.body[0] if len(tree.body) == 1 else None
    if (
        isinstance(node, ast.Assert)
        and isinstance(node.test, ast.Compare)
        and len(node.test.ops) == 1
        and isinstance(node.test.ops[0], ast.Eq)
    ):
        left = eval(compile(ast.Expression(node.test.left), "<test>", "eval"), namespace)
        right = eval(compile(ast.Expression(node.test.comparators[0]), "<test>", "eval"), namespace)
        if left == right:
            return None
        verb = "returned" if isinstance(node.test.left, ast.Call) else "is"
        return f"{ast.unparse(node.test.left)} {verb} {_short(left)}, expected {_short(right)}"
    try:
        exec(compile(tree, "<test>", "exec"), namespace)
    except AssertionError as error:
        return f"assertion failed{': ' + str(error) if str(error) else ''}"
    return None


class _CappedOutput(io.BytesIO):
    """Captured standard output that refuses to grow past the file size limit."""

    def write(self, data: Any) -> int:
        if self.tell() + len(data) > _SPEC["limits"]["file_size_mb"] << 20:
            raise OSError(27, "output too large")
        return super().write(data)


def _run_program(code: Any, stdin: str) -> tuple[str, str | None]:
    """Run the code as a program with `stdin`; return its output and any failure."""
    out = io.TextIOWrapper(_CappedOutput(), encoding="utf-8", write_through=True)
    saved = sys.stdin, sys.stdout
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8")
    sys.stdout = out
    failure = None
    try:
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
    except SystemExit as stop:
        if stop.code not in (None, 0):
            failure = f"exited with status {stop.code}"
    except BaseException as error:  # noqa: BLE001 - report whatever the program raised
        failure = _describe(error)
    finally:
        sys.stdin, sys.stdout = saved
    if os.getpid() != _PID:
        os._exit(0)
    out.flush()
    buffer = out.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode("utf-8", "replace"), failure


def _same_output(got: str, expected: str) -> bool:
    return got.split() == expected.split()


def _run_tests(source: str, tests: list[dict[str, Any]]) -> None:
    try:
        code = compile(source, "<solution>", "exec")
    except SyntaxError as error:
        _emit(event="load_error", error=f"SyntaxError: {error.msg} (line {error.lineno})")
        return
    namespace: dict[str, Any] | None = None
    for index, test in enumerate(tests):
        if "stdin" not in test and namespace is None:
            _emit(event="start", index=-1)  # loading the code, before any test
            namespace = {"__name__": "solution", "__builtins__": __builtins__}
            try:
                exec(code, namespace)
            except BaseException as error:  # noqa: BLE001 - the code itself failed
                if os.getpid() != _PID:
                    os._exit(0)
                if not isinstance(error, SystemExit) or error.code not in (None, 0):
                    _emit(event="load_error", error=_describe(error))
                    return
        _emit(event="start", index=index)
        try:
            if "stdin" in test:
                got, failure = _run_program(code, test["stdin"])
                if failure is None and not _same_output(got, test["stdout"]):
                    failure = f"expected output {_short(test['stdout'])}, got {_short(got)}"
            else:
                assert namespace is not None
                failure = _check_assert(test["source"], namespace)
        except BaseException as error:  # noqa: BLE001 - a test may raise anything
            failure = _describe(error)
        if os.getpid() != _PID:
            os._exit(0)
        if isinstance(failure, str) and failure.startswith("memory limit") and namespace:
            namespace.clear()  # free what the code holds so the report can be written
        _emit(event="result", index=index, passed=failure is None, detail=failure or "")


def _load(path: str, name: str) -> ModuleType:
    """Load a sibling module of this file by path (the package itself is not importable here)."""
    found = importlib.util.spec_from_file_location(name, path)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


def _work(iso: ModuleType, guard: ModuleType, outer: set[str], lifeline: int) -> None:
    """The worker: isolate, run the code and its tests, report, and end.

    `lifeline` reads end-of-file once the runner is gone: checked after the
    parent-death signal is set, it closes the race of a runner that died first.
    """
    global _PID
    _PID = os.getpid()
    try:
        report = _isolate(_SPEC, iso, outer)
    except Exception as error:  # noqa: BLE001 - setup failures go to the host, then stop
        _emit(event="setup_error", error=f"{type(error).__name__}: {error}")
        os._exit(3)
    if select.select([lifeline], [], [], 0)[0]:
        os._exit(4)  # the runner has already ended
    os.close(lifeline)
    if _SPEC["guards"]:
        guard.install(_SPEC["work"])
    _emit(event="ready", isolation=report, pid=_PID)
    _run_tests(_SPEC["code"], _SPEC["tests"])
    try:
        sys.stdout.flush()
    except BaseException:  # noqa: BLE001 - the code may have broken standard output
        pass
    _emit(event="done")
    os._exit(0)


def _init(iso: ModuleType, guard: ModuleType, outer: set[str], lifeline: int) -> None:
    """The first process of the private PID namespace: start the worker, reap, report its end.

    The worker is not init itself, since init ignores signals it has no
    handler for (the CPU limit's SIGXCPU among them). When init ends, the
    kernel kills every process left in the namespace.
    """
    global _PID
    _PID = os.getpid()
    iso.die_with_parent()
    if select.select([lifeline], [], [], 0)[0]:
        os._exit(4)  # the runner has already ended
    worker = os.fork()
    if worker == 0:
        _work(iso, guard, outer, lifeline)
    os.close(lifeline)
    while True:
        pid, raw = os.wait()
        if pid == worker:
            _emit(event="exit", status=raw)
            os._exit(0)


def _reap(worker: int, iso: ModuleType) -> int:
    """Wait for the worker, then kill and collect every process it left; return its status."""
    status: int | None = None
    while True:
        if status is not None:
            for pid in iso.children_of(_PID):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        try:
            pid, raw = os.wait()
        except ChildProcessError:
            return status or 0
        if pid == worker:
            status = raw


def main() -> None:
    """Fork the worker that runs the spec's code, and outlive everything it starts.

    The kernel kills the runner when the host dies, and the worker when the
    runner dies; the worker is the first process of a private PID namespace
    where there is one, so everything it started dies with it.
    """
    _SPEC.update(json.loads(Path(sys.argv[1]).read_text()))
    sys.dont_write_bytecode = True
    iso = _load(_SPEC["isolation_module"], "sandbox_isolation")
    guard = _load(_SPEC["guard_module"], "sandbox_guard")  # before privileges are dropped
    iso.die_with_parent()
    if os.getppid() != _SPEC["host_pid"]:
        os._exit(5)  # the host ended before the parent-death signal was set
    iso.become_subreaper()
    outer = iso.enter_pid_namespace(os.geteuid() == 0)
    lifeline, held = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(held)
        (_init if "pid" in outer else _work)(iso, guard, outer, lifeline)
    os.close(lifeline)
    _emit(event="worker", pid=child)
    status = _reap(child, iso)
    if "pid" not in outer or status != 0:  # else the namespace's init reported the exit
        _emit(event="exit", status=status)
    os._exit(0)


if __name__ == "__main__":
    main()
