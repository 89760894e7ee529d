"""Check, in a child process, that llama.cpp can load a GGUF file and evaluate a few tokens.

The local model runs llama.cpp in this process, where a crash is a bare
"Segmentation fault": a llama-cpp-python built natively for another CPU (pip's
wheel cache can hold such a build, from any earlier install) dies in its first
decode, and a truncated GGUF file fails only once a thread is saved. So before a
local model is used, a child process loads the file and evaluates a few tokens;
a child killed by a signal means the build does not run here (the message gives
the fix), one that exits with an error means the file cannot be loaded. A pass is
remembered in the model cache folder, by build and file, so it costs a child
process once per build and file, and a few stat calls after.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from self_refine.errors import ConfigError, SelfRefineError
from self_refine.models.fetch import cache_dir
from self_refine.safe_files import read_own_file, replace_file

__all__ = ["REBUILD_COMMAND", "check_local_runtime"]

REBUILD_COMMAND = "make local-runtime"
"""What reinstalls llama-cpp-python portable (see the Makefile)."""
_REBUILD_DETAIL = (
    "pip install --no-cache-dir --force-reinstall llama-cpp-python with "
    "CMAKE_ARGS=-DGGML_NATIVE=OFF"
)
_RECORD = "runtime-checks.json"
_KEPT = 32
_TIMEOUT = 300.0
_CHECK = """
import os, sys
from llama_cpp import Llama
llama = Llama(model_path=sys.argv[1], n_ctx=64, n_batch=16,
              n_threads=os.cpu_count() or 1, verbose=False)
llama.eval(llama.tokenize(b"Hello, world. Refine this.", add_bos=True)[:8])
"""
_passed: set[str] = set()


def _child_command(path: Path) -> list[str]:
    """The child that loads `path` and evaluates a few tokens (a seam for tests)."""
    return [sys.executable, "-c", _CHECK, str(path)]


def _build() -> dict[str, object]:
    """What tells this llama-cpp-python build apart: its compiled libraries' identities."""
    found = importlib.util.find_spec("llama_cpp")
    if found is None or found.origin is None:
        from self_refine.models.local import LOCAL_EXTRA_HINT

        raise ConfigError(LOCAL_EXTRA_HINT)
    package = Path(found.origin).parent
    libraries = sorted(p for p in package.rglob("*.so*") if p.is_file() and not p.is_symlink())
    return {"package": str(package), "libraries": [_identity(p) for p in libraries]}


def _identity(path: Path) -> list[object]:
    found = path.stat()
    return [str(path), found.st_size, found.st_ino, found.st_mtime_ns, found.st_ctime_ns]


def _key(path: Path) -> str:
    return json.dumps({"build": _build(), "file": _identity(path.resolve())}, sort_keys=True)


def _recorded() -> list[str]:
    data = read_own_file(cache_dir() / _RECORD, 1 << 20)
    try:
        passed = json.loads(data) if data else []
    except ValueError:
        return []
    return [k for k in passed if isinstance(k, str)] if isinstance(passed, list) else []


def _remember(key: str) -> None:
    """Record a pass; a cache folder that cannot be written just checks again next time."""
    _passed.add(key)
    passed = [k for k in _recorded() if k != key][-(_KEPT - 1) :] + [key]
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        replace_file(cache_dir() / _RECORD, json.dumps(passed).encode())
    except (OSError, ConfigError):
        pass


def check_local_runtime(path: Path) -> None:
    """Raise when llama.cpp cannot load `path` and evaluate a few tokens in a child process.

    SelfRefineError when the child dies by a signal (this build does not run
    here: reinstall it portable); ConfigError when it cannot load the file.
    Checked once per build and file (remembered in the model cache folder).
    """
    key = _key(path)
    if key in _passed or key in _recorded():
        _passed.add(key)
        return
    try:
        done = subprocess.run(
            _child_command(path),
            capture_output=True,
            text=True,
            errors="replace",
            timeout=_TIMEOUT,
            env={**os.environ, "PYTHONFAULTHANDLER": ""},
        )
    except subprocess.TimeoutExpired:
        raise SelfRefineError(
            f"llama.cpp took over {_TIMEOUT:.0f} s to load {path} and read 8 tokens in a test "
            "process: the machine is too busy or the file too large for it; try a smaller model"
        ) from None
    if done.returncode < 0:
        raise SelfRefineError(_crash_message(path, -done.returncode))
    if done.returncode != 0:
        said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        reason = said[-1][:300] if said else f"exit status {done.returncode}"
        raise ConfigError(
            f"llama.cpp cannot load {path} ({reason}): check that it is a whole GGUF file (a "
            "download cut short is truncated), or use another model"
        )
    _remember(key)


def _crash_message(path: Path, number: int) -> str:
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    what = {"SIGSEGV": "a segmentation fault", "SIGILL": "an illegal instruction"}.get(name, name)
    return (
        f"the local model's runtime, llama.cpp, crashed ({what}, {name}) reading a few tokens "
        f"of {path.name} in a test process: this llama-cpp-python build does not run on this "
        "machine (one compiled for another CPU, such as a native build kept in pip's wheel "
        f"cache); reinstall it portable with `{REBUILD_COMMAND}` ({_REBUILD_DETAIL}), or use "
        "another model (--model offline)"
    )
