"""A database in a read-only folder or mount is read, never called damaged.

`show` and `show --html` open it in SQLite's read-only mode and write nothing
beside it; `run`, `resume` and `batch`, which must save threads, say it is not
writable and name it, before any work; `report` says so of a plot it cannot write.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import read_only, run_cli


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def _made(tmp_path: Path) -> Path:
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    made = run_cli(
        "run",
        "a task about dogs",
        "--model",
        "offline",
        "--thread-id",
        "t1",
        "--db",
        str(shelf / "p.sqlite"),
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr
    return shelf


def test_show_reads_a_database_in_a_read_only_folder(tmp_path: Path) -> None:
    shelf = _made(tmp_path)
    before = _snapshot(shelf)
    db = str(shelf / "p.sqlite")
    with read_only(shelf) as prefix:
        shown = run_cli("show", "t1", "--db", db, cwd=tmp_path, prefix=prefix)
        paged = run_cli("show", "t1", "--db", db, "--html", "t.html", cwd=tmp_path, prefix=prefix)
    assert shown.returncode == 0, shown.stderr
    assert "stop reason: critic_done" in shown.stdout
    assert paged.returncode == 0, paged.stderr
    assert (tmp_path / "t.html").read_text().lower().startswith("<!doctype html")
    assert _snapshot(shelf) == before, "nothing was written beside the database"


def test_commands_that_save_threads_say_the_database_is_not_writable(tmp_path: Path) -> None:
    shelf = _made(tmp_path)
    before = _snapshot(shelf)
    db = str(shelf / "p.sqlite")
    (tmp_path / "in.jsonl").write_text('{"id": "a", "task": "Name a colour."}\n')
    commands = [
        ("run", "another task", "--model", "offline", "--db", db),
        ("resume", "t1", "--db", db),
        ("batch", "in.jsonl", "-o", "r.jsonl", "--model", "offline", "--db", db),
    ]
    with read_only(shelf) as prefix:
        done = [run_cli(*argv, cwd=tmp_path, prefix=prefix) for argv in commands]
    for argv, result in zip(commands, done, strict=True):
        assert result.returncode == 2, (argv, result.stderr)
        assert f"the database {db!r} is not writable" in result.stderr, result.stderr
        assert "damaged" not in result.stderr and result.stderr.count("\n") == 1
    assert _snapshot(shelf) == before
    assert not (tmp_path / "r.jsonl").exists(), "refused before any work"


def test_report_says_its_plot_is_not_writable(tmp_path: Path) -> None:
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    record = '{"id": "a", "answer": "42", "stop_reason": "verified"}\n'
    (shelf / "r.jsonl").write_text(record)
    with read_only(shelf) as prefix:
        plotted = run_cli(
            "report",
            str(shelf / "r.jsonl"),
            "--plot",
            str(shelf / "r.png"),
            cwd=tmp_path,
            prefix=prefix,
        )
        plain = run_cli("report", str(shelf / "r.jsonl"), "--no-plot", cwd=tmp_path, prefix=prefix)
    assert plotted.returncode == 2
    assert f"cannot write the plot {str(shelf / 'r.png')!r}" in plotted.stderr
    assert "is not writable" in plotted.stderr and plotted.stderr.count("\n") == 1
    assert plain.returncode == 0, plain.stderr


_LEAVE_A_WAL = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("CREATE TABLE IF NOT EXISTS notes (text TEXT)")
conn.execute("INSERT INTO notes VALUES ('not yet in the main file')")
conn.commit()
os._exit(0)  # no close: the write-ahead log stays beside the database
"""


def test_changes_left_in_a_write_ahead_log_are_named_not_skipped(tmp_path: Path) -> None:
    shelf = _made(tmp_path)
    db = shelf / "p.sqlite"
    subprocess.run([sys.executable, "-c", _LEAVE_A_WAL, str(db)], check=True)
    (shelf / "p.sqlite-shm").unlink()
    assert (shelf / "p.sqlite-wal").stat().st_size > 0
    with read_only(shelf) as prefix:
        shown = run_cli("show", "t1", "--db", str(db), cwd=tmp_path, prefix=prefix)
    assert shown.returncode == 2
    assert "has changes in" in shown.stderr and "copy both files" in shown.stderr
