"""Unusable databases, reference files and text are refused in one line that says what to do.

Before: a damaged SQLite file said "database disk image is malformed", `--db
:memory:` "no such table", `--db /dev/null` created `/dev/null-journal`,
`--reference @/dev/urandom` never returned, and a task with a lone surrogate
failed on every rerun while the advice said "run again".
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest

from self_refine import ConfigError, refine
from self_refine.batch.items import read_items
from self_refine.cli.main import main

TASK = "Write one sentence using the words: dog, frisbee, park."


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(err: str, *words: str) -> None:
    assert err.startswith("self-refine: error: ") and err.count("\n") == 1, err
    for word in words:
        assert word in err, err


@pytest.mark.parametrize(
    ("db", "words"),
    [
        (":memory:", ("--db ':memory:' is not a file", "give the path of an SQLite file")),
        ("/dev/null", ("--db '/dev/null' is not a regular file",)),
        (".", ("is not a regular file",)),
        ("notes.txt", ("--db 'notes.txt' is not an SQLite database",)),
    ],
)
def test_a_db_that_cannot_hold_threads_is_refused(
    db: str,
    words: tuple[str, ...],
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("notes.txt").write_text("my notes, not a database\n" * 20)
    before = set(os.listdir("/dev"))
    code, out, err = _cli(capsys, "run", TASK, "--db", db)
    assert code == 2 and out == ""
    _one_line(err, *words)
    assert set(os.listdir("/dev")) == before, "nothing was created beside a device"
    assert Path("notes.txt").read_text().startswith("my notes"), "the file is untouched"


def _damage(path: Path) -> None:
    """Zero most of the first page (the schema) of an SQLite file, keeping its header."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the file itself
    conn.close()
    data = bytearray(path.read_bytes())
    data[100:4000] = bytes(3900)
    path.write_bytes(bytes(data))


@pytest.mark.usefixtures("workdir")
@pytest.mark.parametrize("command", ["run", "show", "resume"])
def test_a_damaged_database_gets_advice(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(capsys, "run", TASK, "--thread-id", "t", "--db", "c.sqlite")[0] == 0
    _damage(Path("c.sqlite"))
    argv = ["run", TASK] if command == "run" else [command, "t"]
    code, _, err = _cli(capsys, *argv, "--db", "c.sqlite")
    assert code == 2
    _one_line(err, "the database 'c.sqlite' is damaged", "sqlite3 c.sqlite .recover", "--db")
    assert "model" not in err


@pytest.mark.usefixtures("workdir")
@pytest.mark.parametrize(
    ("make", "words"),
    [
        ("device", ("is not a regular file",)),
        ("folder", ("is not a regular file",)),
        ("large", ("is over 1 MB",)),
        ("binary", ("is not UTF-8 text (byte 14)", "save it as UTF-8 JSON")),
        ("deep", ("nested too deeply",)),
    ],
)
def test_a_reference_file_that_is_no_json_file_is_refused(
    make: str, words: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    path = {"device": "/dev/urandom", "folder": "."}.get(make, "ref.json")
    if make == "large":
        Path(path).write_text('{"answer": "' + "4" * 1_100_000 + '"}')
    elif make == "binary":
        Path(path).write_bytes(b'{"answer": "42\xff\xfe"}')
    elif make == "deep":
        Path(path).write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = _cli(capsys, "run", TASK, "--reference", f"@{path}", "--db", "c.sqlite")
    assert code == 2
    _one_line(err, f"--reference file '{path}'", *words)
    assert not Path("c.sqlite").exists(), "no thread was started"


@pytest.mark.usefixtures("workdir")
def test_a_reference_from_a_pipe_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo("ref.fifo")

    def write() -> None:
        fd = os.open("ref.fifo", os.O_WRONLY)  # waits for the reader (a daemon: never blocks exit)
        os.write(fd, b'{"answer": "42"}')
        os.close(fd)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    code, _, err = _cli(capsys, "run", "What is 6 * 7?", "--profile", "math",
                        "--reference", "@ref.fifo", "--db", "c.sqlite")  # fmt: skip
    assert code == 0, err


@pytest.mark.usefixtures("workdir")
@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["run", "a task \udcff from bytes that were not UTF-8"], "task holds '\\udcff'"),
        (["run", TASK, "--draft", "half a pair \ud800"], "draft holds '\\ud800'"),
        (["run", TASK, "--reference", '{"answer": "\\ud800"}'], "reference holds '\\ud800'"),
    ],
)
def test_text_with_a_lone_surrogate_is_refused_before_a_thread_starts(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, *argv, "--db", "c.sqlite")
    assert code == 2 and out == ""
    _one_line(err, named, "not Unicode text", "fix the text's encoding")
    assert "run again" not in err
    assert not Path("c.sqlite").exists()


def test_the_python_api_refuses_a_lone_surrogate_too() -> None:
    with pytest.raises(ConfigError, match="task holds '\\\\ud800' at character 4"):
        refine("bad \ud800 task", model="offline")


def test_a_batch_line_with_a_lone_surrogate_is_an_input_problem(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(
        '{"id": "a", "task": "bad \\ud800 x"}\n'
        '{"id": "b", "task": "fine", "reference": {"answer": "\\udcff"}}\n'
        '{"id": "c", "task": "fine too"}\n'
    )
    items, problems = read_items(path)
    assert [item.id for item in items] == ["c"]
    assert [p.line for p in problems] == [1, 2]
    assert '"task" holds' in problems[0].message and '"reference" holds' in problems[1].message
