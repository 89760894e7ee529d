"""Profiles of the benchmark scenarios, kept with the results: `python -m benchmarks.profiles`.

Runs in the peers' environment (pyinstrument is installed there, with the library
itself), each scenario in a process of its own, and writes for each
`results/profiles/<scenario>.txt`: the call tree (pyinstrument, frames under 1%
hidden) and the flat list of where the time is spent (self time). `summaries()`
gives the few lines of each that the results table quotes.

    python -m benchmarks.profiles [SCENARIO ...]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "profiles"
SCENARIOS = {
    "graph-no-checkpointer": "the graph, 5 threads of 50 refine iterations, scripted model",
    "graph-sqlite": "the graph with SQLite as the CLI opens it, 3 threads of 50 iterations",
    "offline-batch": "`self-refine batch --model offline`, 1,000 tiny items",
    "api-batch-http": "`arefine_batch`, 100 items x 8 calls to the stand-in server (20 ms)",
}


def _scenario(name: str, folder: Path) -> None:
    """Run one scenario (in the profiled process)."""
    if name.startswith("graph-"):
        from benchmarks.t1_orchestration import graph_run
        from self_refine.persistence.storage import open_checkpointer

        for n in range(5 if name == "graph-no-checkpointer" else 3):
            saver = (
                nullcontext(None)
                if name == "graph-no-checkpointer"
                else open_checkpointer(str(folder / f"{n}.sqlite"))
            )
            graph_run(saver, 50)
    elif name == "offline-batch":
        from benchmarks.t4_offline import _items
        from self_refine import cli

        _items(folder / "in.jsonl", 1000)
        cli.main(
            ["batch", str(folder / "in.jsonl"), "-o", str(folder / "out.jsonl")]
            + ["--db", str(folder / "db.sqlite"), "--model", "offline"]
        )
    else:
        import asyncio

        from benchmarks.batch_runs import _api
        from benchmarks.openai_stub import serve

        with serve(delay=0.02, max_concurrency=32) as url:
            asyncio.run(_api(url, 100, folder))


def _warm_up(name: str) -> None:
    """Import what the scenario uses and run it briefly, so the profile shows steady work."""
    import benchmarks.batch_runs  # noqa: F401 - imports the CLI, the batch and LangChain
    from benchmarks.t1_orchestration import graph_run
    from self_refine.persistence.storage import open_checkpointer

    with tempfile.TemporaryDirectory(prefix="self-refine-profile-") as folder:
        graph_run(open_checkpointer(str(Path(folder) / "warm.sqlite")), 3)


def _profile(name: str) -> None:
    """Profile one scenario in this process and write its file."""
    from pyinstrument import Profiler
    from pyinstrument.renderers import ConsoleRenderer

    _warm_up(name)
    with tempfile.TemporaryDirectory(prefix="self-refine-profile-") as folder:
        profiler = Profiler(interval=0.0005, async_mode="enabled")
        with profiler:
            _scenario(name, Path(folder))
    session = profiler.last_session
    assert session is not None
    options = {"filter_threshold": 0.01}
    tree = ConsoleRenderer(processor_options=options, short_mode=True).render(session)
    flat = ConsoleRenderer(flat=True, time="percent_of_total").render(session)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.txt").write_text(
        f"# {name}: {SCENARIOS[name]}\n\n## Where the time goes (self time)\n\n"
        + "\n".join(flat.splitlines()[:60])
        + "\n\n## Call tree\n\n"
        + tree
    )


def summaries(top: int = 6) -> dict[str, list[str]]:
    """The first lines of each written profile's flat list."""
    found: dict[str, list[str]] = {}
    for name in SCENARIOS:
        path = OUT / f"{name}.txt"
        if not path.exists():
            continue
        lines = path.read_text().split("## Where the time goes (self time)", 1)[1]
        rows = [line.strip() for line in lines.splitlines() if "%" in line]
        found[name] = rows[:top]
    return found


def profile_all(names: list[str] | None = None) -> dict[str, Any]:
    """Profile every scenario in the peers' environment; the summaries, or why none."""
    from benchmarks.peers import _env, peer_python

    for name in names or list(SCENARIOS):
        done = subprocess.run(
            [str(peer_python()), "-m", "benchmarks.profiles", "--one", name],
            cwd=HERE.parent,
            env={**_env(), **{"PYTHONPATH": str(HERE.parent)}},
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if done.returncode != 0:
            print(f"profile {name} failed: {done.stderr.strip()[-500:]}", file=sys.stderr)
    return summaries()


def main() -> None:
    """Profile the scenarios given (all by default), or `--one NAME` in this process."""
    args = sys.argv[1:]
    if args[:1] == ["--one"]:
        _profile(args[1])
        return
    print(json.dumps(profile_all(args or None), indent=2))


if __name__ == "__main__":
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    main()
