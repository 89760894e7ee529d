"""Commands refuse, before any work, what would lose data or fail every item.

Every path a command writes is its own: never the input, another output, the
database or a file beside it (compared after links); an -o file must hold this
project's results, and be a regular file. What was there is left byte for byte.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from self_refine.cli.main import main

DATASET = '{"id": "a", "task": "What is 6 * 7?"}\n'


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["-o", "res.jsonl", "--summary", "res.jsonl"], ("--output", "--summary")),
        (["-o", "res.jsonl", "--summary", "in.jsonl"], ("input file", "--summary")),
        (["-o", "in.jsonl"], ("input file", "--output")),
        (["-o", "link.jsonl"], ("input file", "--output")),
    ],
)
def test_batch_refuses_paths_that_are_one_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    named: tuple[str, str],
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("in.jsonl").write_text(DATASET)
    Path("res.jsonl").write_text("")
    os.symlink("in.jsonl", "link.jsonl")
    code = main(["batch", "in.jsonl", *flags, "--model", "offline", "--db", "c.sqlite"])
    assert code == 2
    error = capsys.readouterr().err
    assert named[0] in error and named[1] in error
    assert Path("in.jsonl").read_text() == DATASET
    assert Path("res.jsonl").read_text() == ""
    assert not Path("c.sqlite").exists()


def test_report_refuses_a_plot_over_an_output_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("res.jsonl").write_text('{"id": "a"}\n')
    assert main(["report", "res.jsonl", "--plot", "./res.jsonl"]) == 2
    assert "--plot" in capsys.readouterr().err
    assert Path("res.jsonl").read_text() == '{"id": "a"}\n'


def test_batch_refuses_the_human_critic_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("in.jsonl").write_text(DATASET)
    argv = ["batch", "in.jsonl", "-o", "res.jsonl", "--critics", "human", "--model", "offline"]
    assert main([*argv, "--db", "c.sqlite"]) == 2
    assert "human critic asks a person about every draft" in capsys.readouterr().err
    assert not Path("res.jsonl").exists() and not Path("c.sqlite").exists()


# --- every path a command writes is its own (issue 24, items 1-3 and 5) ---------------------


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, byte for byte."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def with_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding a database with one finished thread, t1, and a dataset."""
    monkeypatch.chdir(tmp_path)
    argv = ["run", "a task about dogs", "--model", "offline", "--thread-id", "t1"]
    assert main([*argv, "--db", "p.sqlite"]) == 0
    Path("in.jsonl").write_text(DATASET)
    Path("r.jsonl").write_text("")
    os.symlink("p.sqlite", "link.sqlite")
    return tmp_path


_BATCH = ["batch", "in.jsonl", "--model", "offline", "--db", "p.sqlite"]


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "t1", "--db", "p.sqlite", "--html", "p.sqlite"],
        ["show", "t1", "--db", "p.sqlite", "--html", "./link.sqlite"],
        ["show", "t1", "--db", "p.sqlite", "--html", "p.sqlite-wal"],
        ["show", "t1", "--db", "link.sqlite", "--html", "p.sqlite-shm"],
        ["show", "t1", "--db", "p.sqlite", "--html", "p.sqlite-locks/page.html"],
        [*_BATCH, "-o", "p.sqlite"],
        [*_BATCH, "-o", "r.jsonl", "--html", "p.sqlite"],
        [*_BATCH, "-o", "r.jsonl", "--summary", "link.sqlite"],
        [*_BATCH, "-o", "p.sqlite-journal"],
        ["run", "a task", "--model", "offline", "--db", "p.sqlite", "--reference", "@p.sqlite-wal"],
    ],
)
def test_no_command_writes_over_the_database_or_a_file_beside_it(
    with_thread: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    before = _snapshot(with_thread)
    capsys.readouterr()
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "the database" in error, error
    assert _snapshot(with_thread) == before
    assert main(["show", "t1", "--db", "p.sqlite"]) == 0


def test_report_refuses_its_default_plot_over_an_output_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    record = '{"id": "a", "answer": "42", "stop_reason": "verified"}\n'
    Path("results.png").write_text(record)  # a results file with an unlucky name
    assert main(["report", "results.png"]) == 2
    assert "the plot and output file" in capsys.readouterr().err
    assert Path("results.png").read_text() == record


@pytest.mark.parametrize(
    ("held", "why"),
    [
        ('{"name":"cfg","secret":"keep"}', "no id, answer, stop_reason"),
        ('{"name": "cfg"}\n{"name": "other"}\n', "no id, answer, stop_reason"),
        (DATASET, "looks like batch input"),
        ('{"id": "a", "task": "What is 6 * 7?"}', "looks like batch input"),
        ("plain notes\nwithout a final newline", "not JSON"),
    ],
)
def test_an_output_that_is_not_a_results_file_is_refused_and_kept(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    held: str,
    why: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("in.jsonl").write_text(DATASET)
    Path("config.json").write_text(held)
    argv = ["batch", "in.jsonl", "-o", "config.json", "--model", "offline"]
    code = main([*argv, "--db", "c.sqlite"])
    error = capsys.readouterr().err
    assert code == 2 and why in error and error.count("\n") == 1, error
    assert Path("config.json").read_bytes() == held.encode()
    assert not Path("c.sqlite").exists(), "refused before any work"


def _batch_child(cwd: Path, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "self_refine.cli", "batch", "in.jsonl", *args]
    return subprocess.run(
        [*argv, "--model", "offline", "--db", "c.sqlite"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        **kwargs,  # type: ignore[call-overload]
    )


@pytest.mark.parametrize("output", ["out.fifo", "/dev/full", "/dev/null"])
def test_an_output_that_is_not_a_regular_file_is_refused_at_once(
    tmp_path: Path, output: str
) -> None:
    (tmp_path / "in.jsonl").write_text(DATASET)
    os.mkfifo(tmp_path / "out.fifo")
    done = _batch_child(tmp_path, "-o", output)
    assert done.returncode == 2, done.stderr
    assert "not a regular file" in done.stderr and "-o -" in done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "c.sqlite").exists()


def test_dev_stdout_into_a_pipe_is_refused_and_dash_streams_the_results(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text(DATASET + '{"id": "b", "task": "Name a colour."}\n')
    refused = _batch_child(tmp_path, "-o", "/dev/stdout")
    assert refused.returncode == 2 and "not a regular file" in refused.stderr
    streamed = _batch_child(tmp_path, "-o", "-")
    assert streamed.returncode == 0, streamed.stderr
    records = [json.loads(line) for line in streamed.stdout.splitlines()]
    assert sorted(r["id"] for r in records) == ["a", "b"]
    assert "accuracy" in streamed.stderr or "items: 2" in streamed.stderr
    assert "results written to standard output" in streamed.stderr
    again = _batch_child(tmp_path, "-o", "-")
    assert sorted(json.loads(line)["id"] for line in again.stdout.splitlines()) == ["a", "b"]


def test_dash_output_has_no_page_to_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("in.jsonl").write_text(DATASET)
    argv = ["batch", "in.jsonl", "-o", "-", "--html", "p.html", "--model", "offline"]
    assert main([*argv, "--db", "c.sqlite"]) == 2
    assert "-o -" in capsys.readouterr().err


def test_an_error_without_a_message_still_says_what_it_was(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    program = importlib.import_module("self_refine.cli.main")

    def out_of_memory(args: object) -> int:
        raise MemoryError

    monkeypatch.setitem(program.COMMANDS, "profiles", out_of_memory)
    assert main(["profiles"]) == 1
    assert capsys.readouterr().err == "self-refine: error: MemoryError, with no message\n"
