"""Batches sharing a database, batches whose disk fills up, and what a failed item prints.

Before: a second batch on the same database and settings (another -o) aborted
with an API message or paid for the same calls twice; a full database disk
gave one error per item; a full output disk ended in "unhandled errors in a
TaskGroup"; failure notes printed a server's escape sequences raw.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from self_refine import RefineContext, arefine_batch
from tests.fakes import FakeChatModel
from tests.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]
ITEMS = 40


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_"))}
    env.update(PYTHONPATH=str(ROOT), LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false")
    return env


def _dataset(folder: Path, count: int = ITEMS) -> Path:
    path = folder / "in.jsonl"
    task = "Write one sentence using the words: dog, park, item{}."
    lines = [json.dumps({"id": f"i{n}", "task": task.format(n)}) for n in range(count)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _batch(*args: str) -> list[str]:
    return [sys.executable, "-m", "self_refine.cli", "batch", "in.jsonl", *args]


def _records(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text().split("\n")
    assert lines[-1] == "", "the file ends with a whole line"
    return [json.loads(line) for line in lines[:-1]]


@pytest.fixture
def slow_server() -> Iterator[OpenAIServer]:
    with OpenAIServer(latency=0.05) as running:
        yield running


def test_two_batches_on_one_database_share_threads_and_pay_once(
    slow_server: OpenAIServer, tmp_path: Path
) -> None:
    _dataset(tmp_path, 12)
    model = ["--model", "test-model", "--base-url", slow_server.base_url, "--api-key", "k"]
    common = [*model, "--db", "c.sqlite", "--concurrency", "4", "--max-iterations", "2"]
    runs = [
        subprocess.Popen(
            _batch("-o", f"out{n}.jsonl", *common),
            cwd=tmp_path,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in (1, 2)
    ]
    outputs = [run.communicate(timeout=300) for run in runs]
    for run, (_, err) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, err
        assert "failed" not in err and "unfinished refinement" not in err
    first, second = (_records(tmp_path / f"out{n}.jsonl") for n in (1, 2))
    assert len(first) == len(second) == 12
    answers = {r["id"]: (r["thread_id"], r["answer"]) for r in first}
    assert {r["id"]: (r["thread_id"], r["answer"]) for r in second} == answers
    # Each item's first draft was generated once: the second batch waited, then reused it.
    assert len(slow_server.chat_requests("generator")) == 12


def _small_disk_supported() -> bool:
    probe = ["unshare", "--user", "--map-root-user", "--mount", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


small_disk = pytest.mark.skipif(
    not _small_disk_supported(),
    reason="needs `unshare --user --mount` (util-linux, unprivileged user namespaces) "
    "to give the batch a small tmpfs",
)


def _on_small_disk(cwd: Path, size: str, script: str) -> subprocess.CompletedProcess[str]:
    """Run a shell script with ./small a tmpfs of `size`, in a mount namespace of its own."""
    (cwd / "small").mkdir()
    mount = f"mount -t tmpfs -o size={size} tmpfs small && {script}"
    return subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", mount],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _cli() -> str:
    return f"{sys.executable} -m self_refine.cli"


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("self-refine: error:")]


@small_disk
def test_a_full_database_disk_stops_the_batch_with_one_message(tmp_path: Path) -> None:
    _dataset(tmp_path)
    done = _on_small_disk(
        tmp_path, "300k", f"{_cli()} batch in.jsonl -o out.jsonl --db small/c.sqlite"
    )
    assert done.returncode == 1, done.stderr
    errors = _errors(done.stderr)
    assert len(errors) == 1, done.stderr
    # the disk may fill before the first thread is saved or after some are, by how much
    # room the machine's SQLite takes up front: either way one line says what failed and what
    # to do, and offers a rerun only where a thread was saved
    assert "database" in errors[0] and "failed (database or disk is full)" in errors[0]
    assert "free some disk space" in errors[0]
    saved = "no thread was saved" not in errors[0]
    assert ("run the batch again" in errors[0]) is saved, errors[0]
    assert " failed: " not in done.stderr, "no note per item"
    _records(tmp_path / "out.jsonl")  # whole lines only


@small_disk
def test_a_full_output_disk_stops_the_batch_and_a_rerun_finishes_it(tmp_path: Path) -> None:
    _dataset(tmp_path)
    first = f"{_cli()} batch in.jsonl -o small/out.jsonl --db c.sqlite"
    done = _on_small_disk(tmp_path, "24k", f"{first}; code=$?; cp small/out.jsonl .; exit $code")
    assert done.returncode == 1, done.stderr
    errors = _errors(done.stderr)
    assert len(errors) == 1 and "TaskGroup" not in done.stderr, done.stderr
    assert "cannot write small/out.jsonl (No space left on device)" in errors[0]
    kept = _records(tmp_path / "out.jsonl")
    assert 0 < len(kept) < ITEMS

    again = subprocess.run(
        [sys.executable, "-m", "self_refine.cli", "batch", "in.jsonl", "-o", "out.jsonl"]
        + ["--db", "c.sqlite"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    ids = [r["id"] for r in _records(tmp_path / "out.jsonl")]
    assert sorted(ids) == sorted(f"i{n}" for n in range(ITEMS)), "nothing lost or repeated"


def test_failure_notes_show_a_servers_escapes_as_escapes(tmp_path: Path) -> None:
    _dataset(tmp_path, 2)
    with OpenAIServer() as server:
        server.fail_next("500_escapes", times=10, role="generator")
        model = ["--model", "test-model", "--base-url", server.base_url, "--api-key", "k"]
        done = subprocess.run(
            _batch("-o", "out.jsonl", *model, "--db", "c.sqlite", "--max-retries", "0"),
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 1
    notes = [line for line in done.stderr.splitlines() if " failed: " in line]
    assert len(notes) == 2, done.stderr
    assert not any(char in done.stderr for char in "\x1b\x07\x9b"), done.stderr
    assert "\\x1b]0;owned\\x07" in notes[0]


async def test_batch_errors_keep_no_key() -> None:
    key = "sk-batch-secret-0123456789"
    model = FakeChatModel(
        script={"*": [RuntimeError(f"the server refused {key} (and {key[:12]})")]}
    )
    result = await arefine_batch(
        ["Write a haiku."], model=model, context=RefineContext(api_key=key), verifiers=()
    )
    assert result.errors, "the item failed"
    assert key not in result.errors[0] and key[:12] not in result.errors[0]
    assert "***" in result.errors[0]
