"""`make run`'s task, measured: each reply's length and the time of the step of candidates.

`make run` asks the local model (Qwen2.5-Coder-0.5B) for one or two sentences using four
words, four candidates at once, with the concepts verifier. This runs the same settings
(the Makefile's task, reference, profile and `--candidates 4`, the model given as the
string "local", so the profile's reply caps apply) `--runs` times, each with a seed of
its own (seed 0 is `make run` itself), and records:

- every model reply: its role, candidate, tokens written, finish reason ("stop",
  "length": it reached its cap, "repetition": the loop stop ended it) and seconds;
- the step of candidates' wall time (from the end of `begin` to the end of `pick`), with
  `first_verified` on (the step ends at its first verified candidate) and off (every
  candidate is written and judged), on the same seeds;
- with `--interrupt N`, N runs of `make run`'s own command stopped with SIGINT 8 s into
  the step of candidates: the seconds from the signal to the program's exit.

Each run starts from a cold cache (nothing read before), as a new `make run` process
does; the model is loaded once, before anything is timed.

    python -m benchmarks.make_run [--runs 20] [--interrupt 3] [--out benchmarks/results/make-run]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

ROOT = Path(__file__).resolve().parent.parent


def make_run_command() -> list[str]:
    """The arguments `make run` gives `self-refine` (read with `make -n`, nothing is run)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "TASK")}
    printed = subprocess.run(
        ["make", "-n", "-s", "run"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    line = next(line for line in printed.splitlines() if "bin/self-refine run " in line)
    return shlex.split(line)[1:]


class _Replies(BaseCallbackHandler):
    """Each model reply: role, candidate, tokens written, finish reason, seconds."""

    def __init__(self) -> None:
        self.started: dict[Any, tuple[float, dict[str, Any]]] = {}
        self.replies: list[dict[str, Any]] = []

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: Any, metadata: Any = None, **kw: Any
    ) -> None:
        self.started[run_id] = (time.perf_counter(), dict(metadata or {}))

    def _record(self, run_id: Any, **fields: Any) -> None:
        began, metadata = self.started.pop(run_id, (time.perf_counter(), {}))
        self.replies.append(
            {
                "role": metadata.get("role"),
                "candidate": metadata.get("candidate"),
                "iteration": metadata.get("iteration"),
                "seconds": round(time.perf_counter() - began, 2),
                **fields,
            }
        )

    def on_llm_end(self, response: Any, *, run_id: Any, **kw: Any) -> None:
        message = response.generations[0][0].message
        usage = message.usage_metadata or {}
        self._record(
            run_id,
            output_tokens=int(usage.get("output_tokens", 0)),
            finish=message.response_metadata.get("finish_reason"),
        )

    def on_llm_error(self, error: BaseException, *, run_id: Any, **kw: Any) -> None:
        self._record(run_id, output_tokens=None, finish=f"cancelled ({type(error).__name__})")


def _cold() -> None:
    from self_refine.models.local import forget_kept_prompts

    forget_kept_prompts()


def one_run(task: str, reference: Any, seed: int, first_verified: bool) -> dict[str, Any]:
    """One run of `make run`'s settings with this seed; its replies and step times."""
    from langgraph.checkpoint.memory import InMemorySaver

    from self_refine import RefineContext, create_self_refine_graph

    settings = RefineContext(
        candidates=4,
        profile="constrained_generation",
        seed=seed,
        first_verified=first_verified,
    )
    graph = create_self_refine_graph("local", settings=settings)
    graph = graph.compile(checkpointer=InMemorySaver())
    replies = _Replies()
    config: Any = {
        "configurable": {"thread_id": f"seed-{seed}"},
        "callbacks": [replies],
    }
    _cold()
    start = time.perf_counter()
    marks: list[tuple[str, float]] = []
    for update in graph.stream({"task": task, "reference": reference}, config):
        marks.extend((node, time.perf_counter() - start) for node in update)
    values = graph.get_state(config).values
    begin = next(t for node, t in marks if node == "begin")
    pick = next(t for node, t in marks if node == "pick")
    step = values["attempts"][0]
    return {
        "seed": seed,
        "first_verified": first_verified,
        "candidate_step_seconds": round(pick - begin, 2),
        "run_seconds": round(marks[-1][1], 2),
        "stop_reason": values["stop_reason"],
        "refine_steps": values["iterations"],
        "answer": values["answer"],
        "first_step_verified": bool(step["critique"].get("verified")),
        "stopped_candidates": sum(
            1
            for c in step.get("candidates", [])
            if (c.get("rejected") or {}).get("reason") == "stopped"
        ),
        "replies": replies.replies,
    }


def interrupted_exit(command: list[str], wait: float = 8.0) -> float:
    """Seconds from SIGINT (sent `wait` s after the run's first line) to the program's exit."""
    with tempfile.TemporaryDirectory() as folder:
        run = subprocess.Popen(
            [str(ROOT / ".venv" / "bin" / "self-refine"), *command, "--db", f"{folder}/db"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert run.stdout is not None
        run.stdout.readline()  # "thread: ..." once the run starts
        time.sleep(wait)
        sent = time.perf_counter()
        run.send_signal(signal.SIGINT)
        run.communicate(timeout=120)
        assert run.returncode == 130, run.returncode
        return time.perf_counter() - sent


def summary(runs: list[dict[str, Any]], exits: list[float]) -> str:
    """The results as Markdown."""
    lines = ["# `make run`'s task, measured", ""]
    replies = [r for run in runs for r in run["replies"] if r["output_tokens"] is not None]
    lines += [
        f"{len(runs)} runs ({len({r['seed'] for r in runs})} seeds, `first_verified` "
        f"{sorted({str(r['first_verified']).lower() for r in runs})}), {len(replies)} replies.",
        "",
        "| role | replies | tokens written: median | max | cap | finish reasons |",
        "|---|---|---|---|---|---|",
    ]
    from self_refine.prompts import get_profile

    profile = get_profile("constrained_generation")
    for role in ("generator", "critic", "refiner"):
        mine = [r for r in replies if r["role"] == role]
        if not mine:
            continue
        tokens = [r["output_tokens"] for r in mine]
        cap = profile.critique_tokens if role == "critic" else profile.draft_tokens
        finishes = ", ".join(f"{k} {v}" for k, v in Counter(r["finish"] for r in mine).items())
        lines.append(
            f"| {role} | {len(mine)} | {statistics.median(tokens):.0f} | {max(tokens)} | {cap} "
            f"| {finishes} |"
        )
    lines += [
        "",
        "| first_verified | runs | candidate step: median s | max s | verified first step |",
    ]
    lines += ["|---|---|---|---|---|"]
    for flag in (True, False):
        mine = [r for r in runs if r["first_verified"] is flag]
        if not mine:
            continue
        seconds = [r["candidate_step_seconds"] for r in mine]
        verified = sum(r["first_step_verified"] for r in mine)
        lines.append(
            f"| {str(flag).lower()} | {len(mine)} | {statistics.median(seconds):.1f} | "
            f"{max(seconds):.1f} | {verified} of {len(mine)} |"
        )
    if exits:
        shown = ", ".join(f"{s:.1f}" for s in exits)
        lines += ["", f"Ctrl-C 8 s into `make run`'s step of candidates: exit after {shown} s."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="seeds 0..N-1 (0: make run's own)")
    parser.add_argument(
        "--first-verified",
        choices=("on", "off", "both"),
        default="both",
        help="the step of candidates ends at its first verified candidate, or not, or both",
    )
    parser.add_argument("--interrupt", type=int, default=0, help="Ctrl-C measurements to make")
    parser.add_argument("--out", type=Path, help="write OUT.json (every reply) and OUT.md")
    args = parser.parse_args()
    command = make_run_command()
    task = command[1]
    reference = json.loads(command[command.index("--reference") + 1])
    flags = {"on": [True], "off": [False], "both": [True, False]}[args.first_verified]
    from self_refine.models.resolve import resolve_model

    resolve_model("local").invoke("Say hello.")  # the model loaded before anything is timed
    runs = []
    for seed in range(args.runs):
        for flag in flags:
            run = one_run(task, reference, seed, flag)
            runs.append(run)
            longest = max((r["output_tokens"] or 0 for r in run["replies"]), default=0)
            print(
                f"seed {seed:2d} first_verified {str(flag).lower():5s}: candidate step "
                f"{run['candidate_step_seconds']:5.1f} s, run {run['run_seconds']:5.1f} s, "
                f"{len(run['replies'])} replies (longest {longest} tokens), {run['stop_reason']}",
                flush=True,
            )
    exits = [interrupted_exit(command) for _ in range(args.interrupt)]
    text = summary(runs, exits)
    print(text)
    if args.out:
        args.out.with_suffix(".json").write_text(
            json.dumps({"command": command, "runs": runs, "interrupt_exits": exits}, indent=1)
        )
        args.out.with_suffix(".md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
