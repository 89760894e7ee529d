"""A local model's runtime is checked in a child process before any thread is written.

A llama.cpp build that crashes on this CPU is told apart from a file that cannot
load, and each is said in one line with its fix; the check runs once per build and
file. The crash is made by a child that kills itself (no crashing build needed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from self_refine.cli.main import main
from self_refine.errors import ConfigError
from self_refine.models import runtime

ROOT = Path(__file__).resolve().parents[2]
SEGFAULT = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "models"
    monkeypatch.setenv("SELF_REFINE_MODELS", str(folder))
    monkeypatch.setattr(runtime, "_passed", set())
    monkeypatch.setattr(runtime, "_build", lambda: {"build": "a build made for the test"})
    return folder


def _gguf(folder: Path, data: bytes = b"GGUF" + b"\0" * 64) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mine.gguf"
    path.write_bytes(data)
    return path


def _children(monkeypatch: pytest.MonkeyPatch, code: str) -> list[Path]:
    """Replace the check's child with `code`; the files it was started for, in order."""
    started: list[Path] = []

    def command(path: Path) -> list[str]:
        started.append(path)
        return [sys.executable, "-c", code]

    monkeypatch.setattr(runtime, "_child_command", command)
    return started


def test_a_crashing_runtime_is_named_with_its_fix_before_any_thread(
    cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    started = _children(monkeypatch, SEGFAULT)
    model = _gguf(tmp_path)
    db = tmp_path / "c.sqlite"
    code = main(["run", "a task", "--model", f"local:{model}", "--db", str(db)])
    error = capsys.readouterr().err
    assert code == 1 and error.count("\n") == 1, error
    assert "crashed (a segmentation fault, SIGSEGV)" in error
    assert "make local-runtime" in error and "CMAKE_ARGS=-DGGML_NATIVE=OFF" in error
    assert "--no-cache-dir --force-reinstall" in error
    assert "endpoint" not in error and "Progress is saved" not in error
    assert started == [model]
    assert not db.exists()


def test_a_passing_check_is_made_once_per_build_and_file(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = _children(monkeypatch, "pass")
    model = _gguf(tmp_path)
    runtime.check_local_runtime(model)
    runtime.check_local_runtime(model)
    monkeypatch.setattr(runtime, "_passed", set())  # a later process: read back from the cache
    runtime.check_local_runtime(model)
    assert started == [model]
    model.write_bytes(b"GGUF" + b"\1" * 64)  # another file at the same path
    runtime.check_local_runtime(model)
    monkeypatch.setattr(runtime, "_build", lambda: {"build": "another build"})
    runtime.check_local_runtime(model)
    assert len(started) == 3


def test_a_file_that_cannot_load_is_a_usage_error(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _children(monkeypatch, "raise SystemExit('ValueError: Failed to load model from file')")
    with pytest.raises(ConfigError, match="Failed to load model from file.*whole GGUF file"):
        runtime.check_local_runtime(_gguf(tmp_path))


def test_a_truncated_gguf_is_refused_by_run_before_any_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("llama_cpp", reason='needs the local extra: pip install -e ".[local]"')
    monkeypatch.setenv("SELF_REFINE_MODELS", str(tmp_path / "models"))
    model = _gguf(tmp_path, b"GGUF\x03\x00\x00\x00" + b"\x07" * 200)
    db = tmp_path / "c.sqlite"
    code = main(["run", "a task", "--model", f"local:{model}", "--db", str(db)])
    error = capsys.readouterr().err
    assert code == 2 and error.count("\n") == 1, error
    assert f"llama.cpp cannot load {model}" in error and "whole GGUF file" in error
    assert "default endpoint" not in error and "Progress is saved" not in error
    assert not db.exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_the_make_target_reinstalls_the_runtime_portable_past_pips_cache() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")}
    planned = subprocess.run(
        ["make", "-n", "local-runtime"], cwd=ROOT, env=env, capture_output=True, text=True
    ).stdout
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF"' in planned
    assert "--no-cache-dir --force-reinstall" in planned
    assert '"llama-cpp-python>=' in planned
