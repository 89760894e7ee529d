"""The embedded model's decode loop against the serial path it replaced (issue 51).

    python -m benchmarks.local_decode [--rounds 5] [--tokens 64] [--concurrency 1,2,4,8]
        [--callers] [--agreement] [--busy N] [--make-run N]
        [--out benchmarks/results/local-decode]

`--agreement`: how many of 10 greedy replies (and of 4 seeded ones) the decode loop writes
token for token as today's path does, made one at a time and together. Then three
parts, each alternating the two paths within one process so that a shared machine's load
falls on both alike (the load average is printed beside every figure):

- concurrency: N requests of the same prompt (seeds 0..N-1, `--tokens` each at most),
  today's path (one call at a time under the model's lock, on the calling thread, with
  as many threads as cores: `decode_loop=False, n_threads=cpu_count()`) made one after
  another, and the decode loop's (the default) made together from N threads. Wall time
  and tokens written per second, median of `--rounds`.
- callers (`--callers`): one request from the main thread (as `self-refine run` and a
  sync `invoke` make it: LangGraph runs a step's single task inline) and from a worker
  thread, both paths.
- make run (`--make-run N`): `make run`'s step of candidates (benchmarks/make_run.py's
  `one_run`, first_verified on and off), seeds 0..N-1, each seed run both ways in turn.

`--busy N` starts N processes that keep a core busy each (`while True: pass`) for the
whole measurement, and waits for the load average to see them before the model is
loaded (the decode loop counts free cores when it starts).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "Write two sentences about a harbour at dawn using the words gull, rope, tide."
SYSTEM = "You answer briefly."


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _commit() -> str:
    """The short commit checked out; in a copy with no git, the one `BENCH_COMMIT` gives,
    else the run is refused (`provenance.given_commit`)."""
    from benchmarks.quality.provenance import given_commit

    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout.strip() or given_commit()


def _models(tokens: int) -> tuple[Any, Any]:
    from self_refine.models.local import LocalChatModel
    from self_refine.models.resolve import resolve_model

    resolved = resolve_model("local")
    path = resolved.model_path  # type: ignore[attr-defined]
    today = LocalChatModel(
        model_path=path, max_tokens=tokens, decode_loop=False, n_threads=os.cpu_count() or 1
    )
    loop = LocalChatModel(model_path=path, max_tokens=tokens, decode_loop=True)
    return today, loop


def _messages() -> list[Any]:
    from langchain_core.messages import HumanMessage, SystemMessage

    return [SystemMessage(SYSTEM), HumanMessage(PROMPT)]


def _cold() -> None:
    """Nothing read before: each measurement reads its prompt, as a new process does."""
    from self_refine.models.local import forget_kept_prompts

    forget_kept_prompts()
    time.sleep(0.05)


def _requests(model: Any, n: int, together: bool) -> tuple[float, int]:
    """Wall seconds and tokens written for n requests, one after another or together."""
    messages = _messages()
    _cold()
    start = time.perf_counter()
    if together:
        with ThreadPoolExecutor(n) as pool:
            replies = list(pool.map(lambda seed: model.invoke(messages, seed=seed), range(n)))
    else:
        replies = [model.invoke(messages, seed=seed) for seed in range(n)]
    wall = time.perf_counter() - start
    return wall, sum(r.usage_metadata["output_tokens"] for r in replies)


def concurrency(today: Any, loop: Any, sizes: list[int], rounds: int) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        walls: dict[str, list[float]] = {"today": [], "loop": []}
        tokens: dict[str, list[int]] = {"today": [], "loop": []}
        loads = []
        for _ in range(rounds):
            for name, model, together in (("today", today, False), ("loop", loop, True)):
                wall, written = _requests(model, n, together)
                print(f"  {n} requests, {name}: {wall:.1f} s, {written} tokens, load {_load()}")
                walls[name].append(wall)
                tokens[name].append(written)
                loads.append(_load())
        row: dict[str, Any] = {"requests": n, "load": [min(loads), max(loads)]}
        for name in ("today", "loop"):
            wall = statistics.median(walls[name])
            row[name] = {
                "wall_s": round(wall, 2),
                "walls": [round(w, 2) for w in walls[name]],
                "tokens": statistics.median(tokens[name]),
                "tokens_per_s": round(statistics.median(tokens[name]) / wall, 1),
            }
        row["ratio"] = round(row["loop"]["wall_s"] / row["today"]["wall_s"], 3)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def _rate(model: Any, where: str) -> float:
    """Tokens per second of one request made from the main thread or a worker thread."""
    result: list[tuple[float, int]] = []

    def one() -> None:
        result.append(_requests(model, 1, together=False))

    if where == "main":
        one()
    else:
        worker = threading.Thread(target=one)
        worker.start()
        worker.join()
    wall, written = result[0]
    return written / wall


def callers(today: Any, loop: Any, rounds: int) -> list[dict[str, Any]]:
    rates: dict[tuple[str, str], list[float]] = {}
    loads = []
    for _ in range(rounds):
        for name, model in (("today", today), ("loop", loop)):
            for where in ("main", "worker"):
                rates.setdefault((name, where), []).append(_rate(model, where))
                loads.append(_load())
    rows = [
        {
            "path": name,
            "thread": where,
            "tokens_per_s": round(statistics.median(values), 1),
            "load": [min(loads), max(loads)],
        }
        for (name, where), values in rates.items()
    ]
    for row in rows:
        print(json.dumps(row), flush=True)
    return rows


AGREEMENT_PROMPTS = [
    "Name three colours.",
    "Write one sentence using the words: cat, roof.",
    "What is 2 + 3? Answer with a number.",
    "Say hello in French.",
    "Write a haiku about rain.",
    "List two prime numbers.",
    "Describe a dog in five words.",
    "What is the capital of France?",
    "Write a Python function that adds two numbers.",
    "Give a synonym for happy.",
]


def agreement(path: str, tokens: int) -> dict[str, Any]:
    """How often the decode loop writes today's reply: greedy, alone and together; seeded."""
    from langchain_core.messages import HumanMessage, SystemMessage

    from self_refine.models.local import LocalChatModel

    def model(**given: Any) -> Any:
        return LocalChatModel(model_path=path, max_tokens=tokens, reuse_prefix=False, **given)

    asks = [[SystemMessage(SYSTEM), HumanMessage(p)] for p in AGREEMENT_PROMPTS]
    serial, looped = model(temperature=0, decode_loop=False), model(temperature=0)
    today = [serial.invoke(m).text for m in asks]
    alone = [looped.invoke(m).text for m in asks]
    with ThreadPoolExecutor(len(asks)) as pool:
        together = [r.text for r in pool.map(looped.invoke, asks)]
    seeds = range(4)
    serial, looped = model(decode_loop=False), model()
    seeded = [serial.invoke(asks[1], seed=s).text for s in seeds]
    with ThreadPoolExecutor(4) as pool:
        seeded_loop = [r.text for r in pool.map(lambda s: looped.invoke(asks[1], seed=s), seeds)]
    row = {
        "prompts": len(asks),
        "greedy_alone_same": sum(a == b for a, b in zip(today, alone, strict=True)),
        "greedy_together_same": sum(a == b for a, b in zip(today, together, strict=True)),
        "seeded_together_same": sum(a == b for a, b in zip(seeded, seeded_loop, strict=True)),
        "seeds": len(seeds),
    }
    print(json.dumps(row), flush=True)
    return row


def make_run(seeds: int) -> list[dict[str, Any]]:
    from benchmarks.make_run import make_run_command, one_run
    from self_refine.models.local import DECODE_ENV

    command = make_run_command()
    task = command[1]
    reference = json.loads(command[command.index("--reference") + 1])
    runs = []
    for seed in range(seeds):
        for flag in (True, False):
            for name in ("today", "loop"):
                os.environ[DECODE_ENV] = "serial" if name == "today" else "batch"
                if name == "today":
                    os.environ["SELF_REFINE_THREADS"] = str(os.cpu_count() or 1)
                else:
                    os.environ.pop("SELF_REFINE_THREADS", None)
                run = one_run(task, reference, seed, flag)
                row = {
                    "path": name,
                    "seed": seed,
                    "first_verified": flag,
                    "candidate_step_s": run["candidate_step_seconds"],
                    "run_s": run["run_seconds"],
                    "stop_reason": run["stop_reason"],
                    "answer": run["answer"],
                    "load": _load(),
                }
                print(json.dumps(row), flush=True)
                runs.append(row)
    os.environ.pop(DECODE_ENV, None)
    os.environ.pop("SELF_REFINE_THREADS", None)
    return runs


def _make_run_table(runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| first_verified | path | runs | candidate step: median s | whole run: median s | load |",
        "|---|---|---|---|---|---|",
    ]
    for flag in (True, False):
        for name in ("today", "loop"):
            mine = [r for r in runs if r["first_verified"] is flag and r["path"] == name]
            if not mine:
                continue
            step = statistics.median(r["candidate_step_s"] for r in mine)
            whole = statistics.median(r["run_s"] for r in mine)
            loads = [r["load"] for r in mine]
            lines.append(
                f"| {str(flag).lower()} | {name} | {len(mine)} | {step:.1f} | {whole:.1f} | "
                f"{min(loads):.1f}-{max(loads):.1f} |"
            )
    return lines


def report(results: dict[str, Any]) -> str:
    lines = [
        "# The embedded model: decode loop against today's serial path (issue 51)",
        "",
        f"Commit {results['commit']}, {results['date']}, `{results['command']}`; "
        f"{results['cores']} cores, decode loop threads {results['threads']} "
        f"({results['threads_why']}), busy processes {results['busy']}. "
        "Today's path: one call at a time under the model's lock, on the calling thread, "
        "threads = cores. Load averages beside each figure: the machine is shared.",
        "",
    ]
    if results.get("concurrency"):
        lines += [
            f"## N requests of the same prompt (up to {results['tokens']} tokens each; "
            f"median of {results['rounds']})",
            "",
            "| requests | today: one after another, s | tokens/s | decode loop: together, s "
            "| tokens/s | loop / today | load |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in results["concurrency"]:
            lines.append(
                f"| {row['requests']} | {row['today']['wall_s']} | "
                f"{row['today']['tokens_per_s']} | {row['loop']['wall_s']} | "
                f"{row['loop']['tokens_per_s']} | {row['ratio']:.2f}x | "
                f"{row['load'][0]:.1f}-{row['load'][1]:.1f} |"
            )
        lines.append("")
    if results.get("callers"):
        lines += [
            "## One request, by calling thread (tokens/s, median)",
            "",
            "| path | main thread (`self-refine run`, sync `invoke`) | worker thread | load |",
            "|---|---|---|---|",
        ]
        by = {(r["path"], r["thread"]): r for r in results["callers"]}
        for name in ("today", "loop"):
            main, worker = by[(name, "main")], by[(name, "worker")]
            lines.append(
                f"| {name} | {main['tokens_per_s']} | {worker['tokens_per_s']} | "
                f"{main['load'][0]:.1f}-{main['load'][1]:.1f} |"
            )
        lines.append("")
    if results.get("agreement"):
        row = results["agreement"]
        lines += [
            "## Same replies as today?",
            "",
            f"Greedy, {row['prompts']} prompts each read whole: the decode loop wrote today's "
            f"reply token for token for {row['greedy_alone_same']} of {row['prompts']} made "
            f"one at a time and {row['greedy_together_same']} of {row['prompts']} made together "
            f"(one batch). Temperature 0.2, one prompt, seeds 0-{row['seeds'] - 1} made "
            f"together: {row['seeded_together_same']} of {row['seeds']} the same. Where they "
            "differ, batched arithmetic moved a logit enough to tip a near tie, after which "
            "the replies part.",
            "",
        ]
    if results.get("make_run"):
        lines += ["## `make run`'s step of candidates", "", *_make_run_table(results["make_run"])]
        lines.append("")
    return "\n".join(lines)


def _busy(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--concurrency", default="1,2,4,8", help="comma-separated; '' to skip")
    parser.add_argument("--callers", action="store_true", help="rate by calling thread")
    parser.add_argument("--agreement", action="store_true", help="same replies as today?")
    parser.add_argument("--busy", type=int, default=0, help="processes keeping a core busy")
    parser.add_argument("--make-run", type=int, default=0, help="seeds of make run's step")
    parser.add_argument("--out", type=Path, help="write OUT.json and OUT.md")
    args = parser.parse_args()
    busy = _busy(args.busy)
    try:
        if busy:
            time.sleep(45)  # the 1-minute load average catches up with them
        from self_refine.models.local import _default_threads

        threads = _default_threads()
        today, loop = _models(args.tokens)
        for model in (today, loop):
            model.invoke("Say hello.")  # loaded before anything is timed
        results: dict[str, Any] = {
            "commit": _commit(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "command": "python -m benchmarks.local_decode " + " ".join(sys.argv[1:]),
            "cores": len(os.sched_getaffinity(0)),
            "threads": int(threads),
            "threads_why": getattr(threads, "why", ""),
            "busy": args.busy,
            "tokens": args.tokens,
            "rounds": args.rounds,
        }
        if args.agreement:
            results["agreement"] = agreement(today.model_path, args.tokens)
        sizes = [int(n) for n in args.concurrency.split(",") if n.strip()]
        results["concurrency"] = concurrency(today, loop, sizes, args.rounds)
        if args.callers:
            results["callers"] = callers(today, loop, args.rounds)
        if args.make_run:
            results["make_run"] = make_run(args.make_run)
    finally:
        for process in busy:
            process.kill()
    text = report(results)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
        args.out.with_suffix(".md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
