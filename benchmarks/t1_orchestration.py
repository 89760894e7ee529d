"""Targets 1 and 2: the time the graph adds around each refine iteration, beside the peers.

A plain Python loop and the library's graph make the same calls to the same
scripted model (2 KB drafts and 2 KB critiques, answered at once) with the
same prompts, for 10 and for 50 refine iterations. The difference per
iteration is what the orchestration costs: LangGraph's step machinery, the
nodes' own work (settings, stop policies, bookkeeping) and the checkpointer.
The peers (langgraph-reflection, DSPy's Refine and a plain loop over DSPy
modules, see `peers/loops.py`) do the same work in a child process of their
own environment, which times its own plain loop too. Runs alternate and the
medians are compared; CPU time is reported beside wall time, since on a shared
machine wall time also counts other people's work.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from benchmarks.report import Row, median, suite_main
from benchmarks.scripted import ScriptedModel
from benchmarks.timing import Clock, Timed, alternate
from self_refine import RefineContext
from self_refine.critics.llm import CritiqueReply
from self_refine.graphs import create_self_refine_graph
from self_refine.persistence.storage import open_checkpointer
from self_refine.prompts import feedback_messages, generate_messages, get_profile, refine_messages
from self_refine.state import Attempt, add_usage

LENGTHS = (10, 50)
TASK = "Write a two-kilobyte essay on the topic given."
Saver = AbstractContextManager[BaseCheckpointSaver[Any] | None]


def plain_loop(iterations: int) -> Timed:
    """Wall and CPU seconds for the same model calls made by a plain loop keeping a list."""
    model, prompts = ScriptedModel(), get_profile("general")
    critic = model.with_structured_output(CritiqueReply, include_raw=True)
    clock = Clock()
    draft = model.invoke(generate_messages(prompts, TASK)).text
    attempts: list[Attempt] = []
    for iteration in range(iterations + 1):
        reply = critic.invoke(feedback_messages(prompts, TASK, draft))
        critique = reply["parsed"].model_dump()
        attempts.append(
            {"iteration": iteration, "draft": draft, "critique": critique, "usage": add_usage()}
        )
        if iteration == iterations:
            break
        draft = model.invoke(refine_messages(prompts, TASK, attempts, critique, None)).text
    return clock.read()


def graph_run(saver: Saver, iterations: int) -> Timed:
    """Wall and CPU seconds for one thread of the graph, streamed as the command line does.

    The stream ends only once LangGraph has written every checkpoint (the
    command line runs with durability "sync"); closing the database afterwards
    (SQLite folds its write-ahead log into the file) is not counted.
    """
    with saver as checkpointer:
        graph = create_self_refine_graph(
            ScriptedModel(), settings=RefineContext(max_iterations=iterations)
        ).compile(checkpointer=checkpointer)
        config: Any = {"configurable": {"thread_id": "bench"}}
        durability: Any = "sync" if checkpointer is not None else None
        clock = Clock()
        steps = asked_again = 0
        for update in graph.stream(
            {"task": TASK}, config, stream_mode="updates", durability=durability
        ):
            steps += 1
            asked_again += any((value or {}).get("ask_again") for value in update.values())
        elapsed = clock.read()
    # begin, generate, critique, (refine, critique) x n, finalize; and a step for each
    # reply asked for again (a scripted draft now and then repeats earlier feedback).
    expected = 2 * iterations + 4 + asked_again
    if steps != expected:
        raise RuntimeError(f"expected {expected} steps, got {steps}")
    return elapsed


@contextmanager
def _sqlite_defaults(path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    """SqliteSaver as `from_conn_string` opens it: WAL, synchronous=FULL (a flush per commit)."""
    with SqliteSaver.from_conn_string(str(path)) as saver:
        yield saver


def lock_cost(folder: Path, quick: bool) -> float:
    """Seconds to take and release a thread's writer lock on an SQLite file (once per run)."""
    from self_refine.persistence.locks import try_lock

    with open_checkpointer(str(folder / "lock.sqlite")) as saver:
        release = try_lock(saver, "warm")
        if release is not None:
            release()
        count = 200 if quick else 2000
        clock = Clock()
        for index in range(count):
            release = try_lock(saver, f"thread-{index}")
            if release is not None:
                release()
        return clock.read()[0] / count


def _ours(iterations: int, repeats: int, folder: Path) -> dict[str, Timed]:
    counter = iter(range(10**6))

    def path(name: str) -> Path:
        return folder / f"{name}-{iterations}-{next(counter)}.sqlite"

    return alternate(
        {
            "loop": lambda: plain_loop(iterations),
            "none": lambda: graph_run(nullcontext(None), iterations),
            "cli": lambda: graph_run(open_checkpointer(str(path("cli"))), iterations),
            "defaults": lambda: graph_run(_sqlite_defaults(path("defaults")), iterations),
        },
        repeats,
    )


def _peers(iterations: int, repeats: int, folder: Path) -> dict[str, Timed]:
    from benchmarks.peers import run_peer

    got = run_peer("loops", str(iterations), str(repeats), str(folder))
    return {name: (value[0], value[1]) for name, value in got.items()}


def _ms(seconds: float, iterations: int) -> float:
    return seconds / iterations * 1000


def _rows(n: int, ours: dict[str, Timed], peers: dict[str, Timed]) -> list[Row]:
    wall = {k: _ms(v[0], n) for k, v in ours.items()}
    cpu = {k: _ms(v[1], n) for k, v in ours.items()}
    pwall = {k: _ms(v[0], n) for k, v in peers.items()}
    pcpu = {k: _ms(v[1], n) for k, v in peers.items()}
    loop, added = wall["loop"], wall["none"] - wall["loop"]
    beats = wall["none"] < min(pwall["reflection"], pwall["dspy_refine"])
    sqlite_added = wall["cli"] - loop
    peer_note = f"the peers' own process timed its plain loop at {pwall['loop']:.2f} ms"
    return [
        Row(
            1,
            f"ms per refine iteration at {n} iterations, no checkpointer: the library's graph",
            "ms",
            wall["none"],
            loop,
            "plain loop",
            "<= 1.5 ms over the loop; below both peers",
            added <= 1.5 and beats,
            f"adds {added:.2f} ms; CPU {cpu['none']:.2f} ms vs {cpu['loop']:.2f} ms",
        ),
        Row(
            1,
            f"the same, langgraph-reflection (create_reflection_graph), {n} iterations",
            "ms",
            pwall["reflection"],
            loop,
            "plain loop",
            "peer",
            note=f"CPU {pcpu['reflection']:.2f} ms; {peer_note}",
        ),
        Row(
            1,
            f"the same, DSPy Refine (N = {n + 1}, its feedback module as critic), {n} iterations",
            "ms",
            pwall["dspy_refine"],
            loop,
            "plain loop",
            "peer",
            note=f"CPU {pcpu['dspy_refine']:.2f} ms; {2 * n + 1} calls (no last critique); "
            "its prompts carry the latest advice, not the history",
        ),
        Row(
            1,
            f"the same, a plain loop over DSPy modules (dspy.Predict), {n} iterations",
            "ms",
            pwall["dspy_loop"],
            loop,
            "plain loop",
            "peer",
            note=f"CPU {pcpu['dspy_loop']:.2f} ms",
        ),
        Row(
            2,
            f"ms per refine iteration at {n} iterations, SQLite as the CLI opens it "
            "(WAL, synchronous=NORMAL, durability sync)",
            "ms",
            wall["cli"],
            loop,
            "plain loop",
            "<= 4 ms over the loop",
            sqlite_added <= 4,
            f"adds {sqlite_added:.2f} ms; CPU {cpu['cli']:.2f} ms vs {cpu['loop']:.2f} ms",
        ),
        Row(
            2,
            f"the same, langgraph-reflection with the same SQLite settings, {n} iterations",
            "ms",
            pwall["reflection_sqlite"],
            loop,
            "plain loop",
            "peer",
            note=f"CPU {pcpu['reflection_sqlite']:.2f} ms",
        ),
        Row(
            2,
            f"the library, SqliteSaver.from_conn_string defaults (synchronous=FULL), n={n}",
            "ms",
            wall["defaults"],
            loop,
            "plain loop",
            "reference",
            note=f"adds {wall['defaults'] - loop:.2f} ms: a disk flush per commit",
        ),
    ]


def run(quick: bool) -> list[Row]:
    """Alternate the loop and the graph variants here, and the peers in their process."""
    repeats = 3 if quick else 7
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="self-refine-bench-") as name:
        folder = Path(name)
        for n in LENGTHS:
            ours = _ours(n, repeats * (50 // n if n < 50 else 1), folder)
            peers = _peers(n, repeats * (50 // n if n < 50 else 1), folder)
            rows += _rows(n, ours, peers)
        per_lock = lock_cost(folder, quick)
    iteration = median([row.value for row in rows if row.target == 2 and row.goal.startswith("<=")])
    rows.append(
        Row(
            2,
            "thread writer lock, taken and released once per run (SQLite lock file)",
            "ms",
            per_lock * 1000,
            iteration,
            "one refine iteration, graph + SQLite",
            "reference",
            note="paid once per run (per batch item), not per iteration",
        )
    )
    return rows


if __name__ == "__main__":
    sys.exit(suite_main(run))
