"""Measure Self-Refine in a GRPO trainer and write the figures: `make bench-training`.

Runs `batching.py` and `steps.py` (each in its own process) and writes
`benchmarks/results/training-<device>.{md,json}`; `--only batching` (or `steps`) measures
one part again and keeps the other's figures. Each part carries its own header: the
command, machine, versions, date, commit and load it was measured with. On the CPU of a
quiet 2-core machine it takes about half an hour, most of it the 0.5B model's GRPO steps.
On a GPU machine:

    python -m benchmarks.training.run --device cuda --steps 10
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.report import machine

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
BATCHING_TARGET = 1.5
STEPS_TARGET = 2.0
PARTS = ("batching", "steps")


def _child(module: str, options: list[str], command: str) -> dict[str, Any]:
    """Run one part in its own process; its figures with when, where and how they were measured."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="self-refine-bench-") as folder:
        out = Path(folder) / "figures.json"
        command = [sys.executable, "-m", module, "--json", str(out), *options]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
        figures: dict[str, Any] = json.loads(out.read_text())
    figures["measured"] = {
        "command": command,
        "machine": machine(),
        "versions": {p: metadata.version(p) for p in ("torch", "transformers", "trl")},
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _commit(),
        "load_before": load,
        "load_after": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
    }
    return figures


def _commit() -> str:
    """The short commit checked out; in a copy with no git, the one `BENCH_COMMIT` gives,
    else the run is refused (`provenance.given_commit`)."""
    from benchmarks.quality.provenance import given_commit

    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout.strip() or given_commit()


def _met(value: float, target: float) -> str:
    return "yes" if value <= target else "**no**"


def _fraction(entry: dict[str, Any], name: str, fallback: str = "reward") -> str:
    value = entry.get(f"self_refine/{name}", entry.get(fallback) if fallback else None)
    return "-" if value is None else f"{value:.2f}"


def _policy(model: str) -> str:
    return "the local model (Qwen2.5-Coder-0.5B-Instruct)" if model == "local" else f"`{model}`"


def _when(part: dict[str, Any]) -> str:
    measured = part["measured"]
    versions = ", ".join(f"{k} {v}" for k, v in measured["versions"].items())
    return (
        f"Written by `{measured['command']}` on {measured['machine']['cpu']} "
        f"({measured['machine']['cores']} cores) with {versions}, {measured['date']} at "
        f"commit {measured['commit']}; load average {measured['load_before']} before, "
        f"{measured['load_after']} after (2 cores: a load above 2 means other work shared them)."
    )


def _batching(batching: dict[str, Any]) -> list[str]:
    seconds = {k: statistics.median(v) for k, v in batching["seconds"].items()}
    rounds = "; ".join(str(r) for r in batching["generate_calls_per_graph_run"])
    lines = [
        "## Refining a batch's wrong samples",
        "",
        f"{batching['samples']} drafts refined once through the refine graph, sampling at "
        f"temperature 1 as the trainer does, at most {batching['max_new_tokens']} tokens a "
        "reply; the graph's first round of refine requests answered again by one batched "
        "`generate` and by one `generate` each, and every round it ran by one batched "
        f"`generate` each. Median of {batching['repeats']} runs; ratios are medians of the "
        "per-run ratios. " + _when(batching),
        "",
        "| way | seconds | ratio | target | met |",
        "|---|---|---|---|---|",
        f"| through the graph (`refine_batch`, PolicyChatModel) | {seconds['graph']:.1f} | "
        f"{batching['graph_over_batched']:.2f}x one batched generate | <= {BATCHING_TARGET}x | "
        f"{_met(batching['graph_over_batched'], BATCHING_TARGET)} |",
        f"| one batched `generate` of the first round | {seconds['batched']:.1f} | 1.00x | - | - |",
        f"| one `generate` per request of the first round | {seconds['separate']:.1f} | "
        f"{batching['separate_over_batched']:.2f}x one batched generate | - | - |",
        f"| every round the graph ran, one batched `generate` each | {seconds['rounds']:.1f} | "
        f"graph {batching['graph_over_rounds']:.2f}x these | - | - |",
        "",
        f"Generate calls (batch sizes) per graph run: {rounds}. A second call is the graph "
        "asking again the samples whose reply was rejected (most often the draft unchanged).",
        "",
    ]
    if not batching.get("refinements_scored"):
        return lines
    return [
        *lines,
        "## On-policy honesty: which tokens the trainer scores",
        "",
        f"The {batching['refinements_scored']} new refinements of the first run, each "
        "token's log-probability under the policy, averaged per refinement:",
        "",
        "| where | nats per token |",
        "|---|---|",
        f'| where it was written (the refine request: the "exchange" form) | '
        f"{batching['logprob_where_written']:.3f} |",
        f'| after the trainer\'s prompt alone (the "refinement" form) | '
        f"{batching['logprob_after_prompt']:.3f} |",
        "",
        f"Gap: {batching['gap_nats_per_token']:.3f} nats per token: after the prompt alone "
        f"each refinement token is {batching['likelier_per_token']:.1f}x less likely than "
        "where the policy wrote it, and the trainer (no sampling log-probabilities without "
        "vLLM) treats those tokens as its own samples. The exchange form scores every trained "
        "token where it was sampled, so it is the default.",
        "",
    ]


def _steps(steps: dict[str, Any]) -> list[str]:
    lines = [
        "## GRPO steps: refine rollouts against TRL's plain rollouts",
        "",
        f"`examples/train_grpo.py`, {steps['steps']} step(s) each, the same settings and seed "
        "(2 prompts x 4 completions a step, 32 completion tokens, learning rate 1e-6), each "
        "run in its own process, plain first. For plain rollouts acc@t1 and acc@t2 are the "
        "reward (the verifier's verdict). The reward of refine rollouts is the "
        "post-refinement score; the turn-1 reward (the drafts' score; - in runs measured "
        "before it was logged) is the column both runs share. " + _when(steps),
        "",
        "| rollouts | step | seconds | acc@t1 | acc@t2 | wrong -> right | right -> wrong "
        "| reward | turn-1 reward |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("plain", "refine"):
        for entry in steps[name]["steps"]:
            lines.append(
                f"| {steps[name]['rollouts']} | {entry['step']} | {entry['step_time']:.1f} | "
                f"{_fraction(entry, 'acc_t1')} | {_fraction(entry, 'acc_t2')} | "
                f"{_fraction(entry, 'wrong_to_right', '')} | "
                f"{_fraction(entry, 'right_to_wrong', '')} | {entry['reward']:.2f} | "
                f"{_fraction(entry, 'reward_t1/verifier_concepts', '')} |"
            )
    seconds = steps["seconds_per_step"]
    peak = steps["refine"]["peak_rss_gb"], steps["plain"]["peak_rss_gb"]
    return [
        *lines,
        "",
        "| measure | refine rollouts | plain rollouts | ratio | target | met |",
        "|---|---|---|---|---|---|",
        f"| seconds per step | {seconds['refine']:.1f} | {seconds['plain']:.1f} | "
        f"{steps['refine_over_plain']:.2f}x | <= {STEPS_TARGET}x | "
        f"{_met(steps['refine_over_plain'], STEPS_TARGET)} |",
        f"| peak memory of the run (GB) | {peak[0]:.1f} | {peak[1]:.1f} | "
        f"{peak[0] / peak[1]:.2f}x | - | - |",
        "",
    ]


def markdown(figures: dict[str, Any]) -> str:
    """The results page."""
    return "\n".join(
        [
            f"# Self-Refine in TRL's GRPOTrainer: {figures['device'].upper()} figures",
            "",
            f"The policy is {_policy(figures['model'])} converted to float32 by "
            "`trainable_model`; the task is constrained generation, checked by the "
            "`concepts` verifier. Two parts, each measured on its own: each says with which "
            "command, at which commit and under what load.",
            "",
            *_batching(figures["batching"]),
            *_steps(figures["steps"]),
            "A handful of steps on a CPU: enough for the cost of a step and to see every step "
            "log its metrics, not to show learning. On a GPU machine: "
            "`python -m benchmarks.training.run --device cuda --steps 10`.",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda on a GPU machine")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="local", help="a local model string (default: local)")
    parser.add_argument("--only", choices=PARTS, help="measure one part, keep the other's")
    args = parser.parse_args()
    results = RESULTS / f"training-{args.device}.json"
    kept = json.loads(results.read_text()) if args.only and results.exists() else {}
    command = "python -m benchmarks.training.run " + " ".join(sys.argv[1:])
    figures: dict[str, Any] = {"device": args.device, "model": args.model}
    for part in PARTS:
        if args.only not in (None, part):
            figures[part] = kept[part]
        elif part == "batching":
            options = ["--device", args.device, "--repeats", str(args.repeats), "--model"]
            figures[part] = _child("benchmarks.training.batching", [*options, args.model], command)
        else:
            cpu = ["--cpu"] if args.device == "cpu" else []
            options = ["--steps", str(args.steps), "--model", args.model, *cpu]
            figures[part] = _child("benchmarks.training.steps", options, command)
    RESULTS.mkdir(exist_ok=True)
    results.write_text(json.dumps(figures, indent=1))
    (RESULTS / f"training-{args.device}.md").write_text(markdown(figures))
    print(markdown(figures))


if __name__ == "__main__":
    main()
