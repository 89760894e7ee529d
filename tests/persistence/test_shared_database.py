"""Several commands opening one new SQLite database at the same moment.

Before: each switched the new file to WAL mode, and SQLite answers that switch
"database is locked" at once, without waiting, when another process is making
the same switch; a batch started beside another on a new --db ended at its
first item (seen in CI: `test_two_batches_on_one_database_share_threads_and_pay_once`).
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import time
from pathlib import Path

from self_refine.persistence.storage import open_async_checkpointer, open_checkpointer

PROCESSES = 3
ROUNDS = 40


def _open_at(db: str, start: float, use_async: bool) -> str:
    while time.time() < start:  # all processes open the file together
        pass
    try:
        if use_async:
            import asyncio

            async def opened() -> None:
                async with open_async_checkpointer(db) as saver:
                    await saver.aget_tuple({"configurable": {"thread_id": "t"}})

            asyncio.run(opened())
        else:
            with open_checkpointer(db) as saver:
                saver.get_tuple({"configurable": {"thread_id": "t"}})
    except sqlite3.Error as error:
        return str(error)
    return "ok"


def test_commands_opening_a_new_database_together_all_get_it(tmp_path: Path) -> None:
    # Spawned, not forked: a fork copies this process's threads' held locks (a decode
    # loop's, a Ray client's) into children that then never start.
    context = multiprocessing.get_context("spawn")
    outcomes: list[str] = []
    with context.Pool(PROCESSES) as pool:
        for round_ in range(ROUNDS):
            db = tmp_path / f"r{round_}.sqlite"
            sqlite3.connect(db).close()  # a new, empty file, as `sqlite_path` leaves it
            start = time.time() + 0.05
            jobs = [(str(db), start, n % 2 == 1) for n in range(PROCESSES)]
            outcomes += pool.starmap(_open_at, jobs)
    failures = [outcome for outcome in outcomes if outcome != "ok"]
    assert not failures, f"{len(failures)} of {len(outcomes)} opens failed: {failures[:3]}"
    assert all(
        sqlite3.connect(tmp_path / f"r{n}.sqlite").execute("PRAGMA journal_mode").fetchone()[0]
        == "wal"
        for n in range(ROUNDS)
    )
