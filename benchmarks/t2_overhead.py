"""Target 2: the time the graph adds around each refine iteration.

A plain Python loop and the library's graph make the same calls to the same
scripted model (2 KB drafts and 2 KB critiques, answered at once) with the
same prompts, for 50 refine iterations. The difference per iteration is what
the orchestration costs: LangGraph's step machinery, the nodes' own work
(settings, stop policies, bookkeeping) and the checkpointer. Runs alternate
between the two and the medians are compared.
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from benchmarks.report import Row, median, suite_main
from benchmarks.scripted import ScriptedModel
from self_refine import RefineContext
from self_refine.critics.llm import CritiqueReply
from self_refine.graphs import create_self_refine_graph, recursion_limit
from self_refine.persistence.storage import open_checkpointer
from self_refine.prompts import feedback_messages, generate_messages, get_profile, refine_messages
from self_refine.state import Attempt, add_usage

ITERATIONS = 50
TASK = "Write a two-kilobyte essay on the topic given."
Saver = AbstractContextManager[BaseCheckpointSaver[Any] | None]


class _Clock:
    """Wall and CPU seconds (all threads of the process) since it was started."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def plain_loop() -> tuple[float, float]:
    """Wall and CPU seconds for the same model calls made by a plain loop keeping a list."""
    model, prompts = ScriptedModel(), get_profile("general")
    critic = model.with_structured_output(CritiqueReply, include_raw=True)
    clock = _Clock()
    draft = model.invoke(generate_messages(prompts, TASK)).text
    attempts: list[Attempt] = []
    for iteration in range(ITERATIONS + 1):
        reply = critic.invoke(feedback_messages(prompts, TASK, draft))
        critique = reply["parsed"].model_dump()
        attempts.append(
            {"iteration": iteration, "draft": draft, "critique": critique, "usage": add_usage()}
        )
        if iteration == ITERATIONS:
            break
        draft = model.invoke(refine_messages(prompts, TASK, attempts, critique, None)).text
    return clock.read()


def graph_run(saver: Saver) -> tuple[float, float]:
    """Wall and CPU seconds for one thread of the graph, streamed as the command line does.

    The stream ends only once LangGraph has written every checkpoint; closing
    the database afterwards (SQLite folds its write-ahead log into the file)
    is not counted.
    """
    with saver as checkpointer:
        graph = create_self_refine_graph(
            ScriptedModel(), settings=RefineContext(max_iterations=ITERATIONS)
        ).compile(checkpointer=checkpointer)
        config: Any = {
            "configurable": {"thread_id": "bench"},
            "recursion_limit": recursion_limit(ITERATIONS),
        }
        clock = _Clock()
        steps = sum(1 for _ in graph.stream({"task": TASK}, config, stream_mode="updates"))
        elapsed = clock.read()
    if steps != 2 * ITERATIONS + 3:
        raise RuntimeError(f"expected {2 * ITERATIONS + 3} steps, got {steps}")
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
        clock = _Clock()
        for index in range(count):
            release = try_lock(saver, f"thread-{index}")
            if release is not None:
                release()
        return clock.read()[0] / count


def run(quick: bool) -> list[Row]:
    """Alternate the loop and each graph variant; compare medians per iteration."""
    repeats = 3 if quick else 11
    variants: dict[str, Callable[[Path], Saver]] = {
        "cli": lambda path: open_checkpointer(str(path)),
        "defaults": _sqlite_defaults,
        "none": lambda path: nullcontext(None),
    }
    times: dict[str, list[tuple[float, float]]] = {"loop": [], **{name: [] for name in variants}}
    with tempfile.TemporaryDirectory(prefix="self-refine-bench-") as folder:
        plain_loop(), graph_run(open_checkpointer(f"{folder}/warm.sqlite"))  # warm up
        for repeat in range(repeats):
            gc.collect()
            times["loop"].append(plain_loop())
            for name, saver in variants.items():
                gc.collect()
                times[name].append(graph_run(saver(Path(folder) / f"{name}-{repeat}.sqlite")))
        per_lock = lock_cost(Path(folder), quick)
    wall = {name: median([w for w, _ in t]) / ITERATIONS * 1000 for name, t in times.items()}
    cpu = {name: median([c for _, c in t]) / ITERATIONS * 1000 for name, t in times.items()}
    added = wall["cli"] - wall["loop"]
    return [
        Row(
            2,
            "time per refine iteration (critique + refine), graph + SQLite as the CLI opens it",
            "ms",
            wall["cli"],
            wall["loop"],
            "plain loop",
            "<= 3 ms added",
            added <= 3,
            f"adds {added:.2f} ms per iteration",
        ),
        Row(
            2,
            "CPU time per refine iteration, graph + SQLite as the CLI opens it",
            "ms",
            cpu["cli"],
            cpu["loop"],
            "plain loop",
            "reference",
            note=f"adds {cpu['cli'] - cpu['loop']:.2f} ms; steadier than wall time when busy",
        ),
        Row(
            2,
            "time per refine iteration, SqliteSaver.from_conn_string defaults (synchronous=FULL)",
            "ms",
            wall["defaults"],
            wall["loop"],
            "plain loop",
            "reference",
            note=f"adds {wall['defaults'] - wall['loop']:.2f} ms per iteration",
        ),
        Row(
            2,
            "time per refine iteration, no checkpointer (LangGraph's steps and the nodes alone)",
            "ms",
            wall["none"],
            wall["loop"],
            "plain loop",
            "reference",
            note=f"adds {wall['none'] - wall['loop']:.2f} ms per iteration",
        ),
        Row(
            2,
            "thread writer lock, taken and released once per run (SQLite lock file)",
            "ms",
            per_lock * 1000,
            wall["cli"],
            "one refine iteration, graph + SQLite",
            "reference",
            note="paid once per run (per batch item), not per iteration",
        ),
    ]


if __name__ == "__main__":
    sys.exit(suite_main(run))
