"""Where a refine iteration and a batch's model call spend their time: cProfile's top entries.

    python -m benchmarks.cprofile_top [cli-sqlite|api-batch] [--top N]

`benchmarks.profiles` draws pyinstrument's call trees in the peers' environment;
this runs in the library's own environment, with the standard library's profiler,
on two small offline workloads (no network beyond the stand-in server on this
machine):

- `cli-sqlite`: 3 threads of 50 refine iterations with the scripted model, SQLite
  opened as the command line opens it and the graph streamed as `self-refine run`
  streams it (its callbacks, tags, context and durability "sync");
- `api-batch`: `arefine_batch` of 48 items x 8 calls to the stand-in server
  (20 ms per answer, 32 at once).

It prints the function calls per iteration (or per model call), which do not depend
on how busy the machine is, then the entries with the most time of their own, then
the library's own functions by time spent inside them. The profiler only sees the
main thread: the checkpointer's saves run on LangGraph's background thread, and the
main thread's wait for them shows as `lock.acquire`.
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import os
import pstats
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ITERATIONS = 50
THREADS = 3
ITEMS = 48
CALLS_PER_ITEM = 8


@contextmanager
def cli_stream(db: Path, iterations: int) -> Iterator[Callable[[], None]]:
    """One thread of the graph as `self-refine run` runs it (cli/threads.py): SQLite opened
    and the graph compiled here, the stream run by the function yielded (for timing it alone)."""
    from benchmarks.scripted import ScriptedModel
    from benchmarks.t1_orchestration import TASK
    from self_refine import RefineContext
    from self_refine.graphs import create_self_refine_graph
    from self_refine.models.cancel import StopNewCalls
    from self_refine.persistence.storage import open_checkpointer

    settings = RefineContext(max_iterations=iterations)
    with open_checkpointer(str(db)) as saver:
        graph = create_self_refine_graph(ScriptedModel(), settings=settings).compile(
            checkpointer=saver
        )
        config: Any = {
            "configurable": {"thread_id": "bench"},
            "tags": ["self-refine", "cli"],
            "metadata": {"model": "scripted"},
            "callbacks": [StopNewCalls()],
        }

        def stream() -> None:
            for _ in graph.stream(
                {"task": TASK}, config, context=settings, stream_mode=["updates"], durability="sync"
            ):
                pass

        yield stream


def cli_run(db: Path, iterations: int) -> None:
    """One thread of the graph, run as `self-refine run` runs it."""
    with cli_stream(db, iterations) as stream:
        stream()


def _profiled(name: str, folder: Path) -> tuple[cProfile.Profile, int, str]:
    """Warm up, then profile the scenario; the profile, its unit count and the unit."""
    profile = cProfile.Profile()
    if name == "cli-sqlite":
        cli_run(folder / "warm.sqlite", 3)
        profile.enable()
        for n in range(THREADS):
            cli_run(folder / f"{n}.sqlite", ITERATIONS)
        profile.disable()
        return profile, THREADS * ITERATIONS, "iteration"
    from benchmarks.batch_runs import _api
    from benchmarks.openai_stub import serve

    with serve(delay=0.02, max_concurrency=32) as url:
        (folder / "warm").mkdir()
        asyncio.run(_api(url, 4, folder / "warm"))
        profile.enable()
        asyncio.run(_api(url, ITEMS, folder))
        profile.disable()
    return profile, ITEMS * CALLS_PER_ITEM, "model call"


def _short(text: str) -> str:
    """A profile line with the folders before the package names cut off."""
    for marker in ("site-packages/", "/lib/python3.11/"):
        while marker in text:
            head, _, tail = text.partition(marker)
            cut = head.rfind(" ")
            text = head[: cut + 1] + tail
    here = str(Path(__file__).resolve().parent.parent) + "/"
    return text.replace(here, "")


def report(name: str, top: int) -> str:
    """The scenario's profile as text: calls per unit, top self time, the library's own."""
    with tempfile.TemporaryDirectory(prefix="self-refine-cprofile-") as folder:
        profile, units, unit = _profiled(name, Path(folder))
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    calls, seconds = vars(stats)["total_calls"], vars(stats)["total_tt"]
    out.write(
        f"# {name}: {calls / units:,.0f} function calls per {unit} ({calls:,} for {units} "
        f"{unit}s), {seconds / units * 1000:.2f} ms per {unit} under the profiler; load "
        f"average {os.getloadavg()[0]:.1f}\n"
    )
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumtime").print_stats("self_refine/", top)
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    return "\n".join(_short(line) for line in lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print each scenario's report (both by default)."""
    args = sys.argv[1:] if argv is None else argv
    top = 25
    if "--top" in args:
        index = args.index("--top")
        top = int(args[index + 1])
        del args[index : index + 2]
    for name in args or ["cli-sqlite", "api-batch"]:
        print(report(name, top))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    sys.exit(main())
