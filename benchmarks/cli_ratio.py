"""The command line's SQLite path over the plain loop, one figure per process (issue 41).

    python -m benchmarks.cli_ratio [LABEL]

Target 1's plain loop (`t1_orchestration.plain_loop`) and the graph streamed as
`self-refine run` streams it (the command line's `StopNewCalls`, tags, metadata
and context, durability "sync", `stream_mode=["updates"]`), SQLite opened as the
command line opens it, each for 50 iterations of the scripted model, alternating
5 times after a warm-up (`timing.alternate`); beside them the graph with no
checkpointer, as target 1 times it. Prints one line: the SQLite path's wall and
CPU medians over the plain loop's, milliseconds per iteration and the load
average. Run it from two checkouts in turn to compare a change in one sitting;
a benchmark, not a test: it never fails.
"""

from __future__ import annotations

import itertools
import os
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path

from benchmarks.cprofile_top import cli_stream
from benchmarks.t1_orchestration import graph_run, plain_loop
from benchmarks.timing import Clock, Timed, alternate

ITERATIONS = 50
REPEATS = 5


def cli_timed(db: Path, iterations: int) -> Timed:
    """Wall and CPU seconds of one thread streamed as `self-refine run` streams it."""
    with cli_stream(db, iterations) as stream:
        clock = Clock()
        stream()
        return clock.read()


def main(argv: list[str] | None = None) -> int:
    """Print the figures of one alternating sitting, labelled."""
    label = " ".join(sys.argv[1:] if argv is None else argv)
    numbers = itertools.count()
    with tempfile.TemporaryDirectory(prefix="self-refine-cli-ratio-") as folder:
        got = alternate(
            {
                "loop": lambda: plain_loop(ITERATIONS),
                "cli": lambda: cli_timed(Path(folder) / f"{next(numbers)}.sqlite", ITERATIONS),
                "none": lambda: graph_run(nullcontext(None), ITERATIONS),
            },
            REPEATS,
        )
    ms = {name: wall / ITERATIONS * 1000 for name, (wall, _) in got.items()}
    print(
        f"{label} SQLite path over the plain loop: wall {got['cli'][0] / got['loop'][0]:.2f}x, "
        f"CPU {got['cli'][1] / got['loop'][1]:.2f}x; ms per iteration: loop {ms['loop']:.2f}, "
        f"SQLite path {ms['cli']:.2f}, no checkpointer {ms['none']:.2f} "
        f"(+{ms['none'] - ms['loop']:.2f} over the loop); load {os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    sys.exit(main())
