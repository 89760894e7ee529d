"""A thread that lost its input in the database (its `task` writes, or its first
checkpoint): a batch fails that item alone, naming its thread, and runs the rest;
`show` says the thread is damaged; `resume` refuses it before any model call.

Before: the batch continued such a thread with an empty task (or, for a task with
images and candidates, stopped whole with exit 2), and `show` printed `task: `.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from self_refine.cli.main import main
from tests.cli.conftest import Calls

TASK = "Write one sentence using the words: dog, park, ball{}."


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _damage(db: Path, thread_id: str, how: str) -> None:
    """Take the thread back to an unfinished step, then remove its input as `how` says."""
    with sqlite3.connect(db) as connection:
        ids = [
            row[0]
            for row in connection.execute(
                "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id",
                (thread_id,),
            )
        ]
        gone = ids[6:] + (ids[:1] if how == "first checkpoint" else [])
        for checkpoint in ids[6:]:
            connection.execute(
                "DELETE FROM writes WHERE thread_id = ? AND checkpoint_id = ?",
                (thread_id, checkpoint),
            )
        for checkpoint in gone:
            connection.execute(
                "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?",
                (thread_id, checkpoint),
            )
        if how == "task writes":
            removed = connection.execute(
                "DELETE FROM writes WHERE thread_id = ? AND channel = 'task'", (thread_id,)
            ).rowcount
            assert removed == 1


@pytest.mark.parametrize("how", ["task writes", "first checkpoint"])
def test_a_damaged_thread_fails_its_item_and_the_others_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    calls: Calls,
    how: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    items = [{"id": f"q{n}", "task": TASK.format(n)} for n in range(3)]
    Path("in.jsonl").write_text("".join(json.dumps(item) + "\n" for item in items))
    batch = ["batch", "in.jsonl", "--model", "offline", "--db", "c.sqlite", "-o"]
    assert main([*batch, "first.jsonl"]) == 0
    threads = {r["id"]: r["thread_id"] for r in _records(Path("first.jsonl"))}
    _damage(Path("c.sqlite"), threads["q1"], how)
    capsys.readouterr()
    asked = len(calls.roles)

    code = main([*batch, "again.jsonl"])

    err = capsys.readouterr().err
    assert code == 1
    assert sorted(r["id"] for r in _records(Path("again.jsonl"))) == ["q0", "q2"]
    assert f"thread {threads['q1']} is damaged: its task is missing" in err
    assert len(calls.roles) == asked, "no model call: q0 and q2 were finished, q1 is refused"

    assert main(["show", threads["q1"], "--db", "c.sqlite"]) == 0
    shown = capsys.readouterr()
    assert "\ntask: (missing)\n" in shown.out
    assert f"thread {threads['q1']} is damaged" in shown.err

    assert main(["resume", threads["q1"], "--db", "c.sqlite"]) == 2
    assert f"thread {threads['q1']} is damaged" in capsys.readouterr().err
    assert len(calls.roles) == asked
