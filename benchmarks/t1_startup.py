"""Target 1 (reference rows, round one's target 5): start-up time of the `self-refine` program.

Times `self-refine --help` against importing LangGraph and langchain-openai
alone (what the program would pay if it loaded them eagerly), and the time
from starting `self-refine run` to the first request reaching a model server
(the stand-in server, which notes each request's arrival) against a plain
script that imports langchain-openai and sends one `ChatOpenAI` request.
Each is run several times in fresh processes; medians are compared.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.openai_stub import serve
from benchmarks.report import Row, median, suite_main

HEAVY_IMPORTS = "import langgraph.graph, langchain_openai"
FIRST_REQUEST_SCRIPT = (
    "import sys\nfrom langchain_openai import ChatOpenAI\n"
    "ChatOpenAI(model='gpt-4o-mini', base_url=sys.argv[1], api_key='not-needed')"
    ".invoke('Write one sentence.')"
)


def _program() -> list[str]:
    """The installed `self-refine` script beside this interpreter, else the module."""
    script = Path(sys.executable).with_name("self-refine")
    return [str(script)] if script.exists() else [sys.executable, "-m", "self_refine.cli"]


def _env() -> dict[str, str]:
    env = dict(os.environ, LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false")
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def _seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=_env(), timeout=120)
    return time.perf_counter() - start


def _to_first_request(command: list[str], record: Path) -> float:
    """Seconds from starting `command` to the first request the server records."""
    before = len(record.read_text().splitlines()) if record.exists() else 0
    start = time.time()
    subprocess.run(command, check=True, capture_output=True, env=_env(), timeout=120)
    first = json.loads(record.read_text().splitlines()[before])
    return float(first["time"]) - start


def run(quick: bool) -> list[Row]:
    """Time the help text and the first model request, each beside its baseline."""
    repeats = 2 if quick else 5
    help_times = [_seconds([*_program(), "--help"]) for _ in range(repeats)]
    heavy_times = [_seconds([sys.executable, "-c", HEAVY_IMPORTS]) for _ in range(repeats)]
    bare = median([_seconds([sys.executable, "-c", "pass"]) for _ in range(repeats)])
    folder = Path(tempfile.mkdtemp(prefix="self-refine-bench-"))
    record = folder / "requests.jsonl"
    run_times, plain_times = [], []
    try:
        with serve(record=record) as url:
            for n in range(repeats):
                run_times.append(
                    _to_first_request(
                        [*_program(), "run", "Write one sentence about a park.", "--model"]
                        + ["gpt-4o-mini", "--base-url", url, "--max-iterations", "1"]
                        + ["--db", str(folder / f"run-{n}.sqlite")],
                        record,
                    )
                )
                plain_times.append(
                    _to_first_request([sys.executable, "-c", FIRST_REQUEST_SCRIPT, url], record)
                )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    help_s = median(help_times)
    return [
        Row(
            1,
            "`self-refine --help`",
            "s",
            help_s,
            median(heavy_times),
            "import langgraph + langchain-openai",
            "<= 0.6 s (round one)",
            help_s <= 0.6,
            f"a bare interpreter starts in {bare:.3f} s",
        ),
        Row(
            1,
            "start of `self-refine run` to its first model request",
            "s",
            median(run_times),
            median(plain_times),
            "script: import langchain-openai, one request",
            "reference",
        ),
    ]


if __name__ == "__main__":
    sys.exit(suite_main(run))
