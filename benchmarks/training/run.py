"""Measure Self-Refine in a GRPO trainer and write the figures: `make bench-training`.

Runs `batching.py` and `steps.py` (each in its own process) and writes
`benchmarks/results/training-<device>.{md,json}`. On the CPU of a 2-core machine it
takes about half an hour, most of it the 0.5B model's GRPO steps (about 2 minutes each
with plain rollouts). On a GPU machine:

    python -m benchmarks.training.run --device cuda --steps 10
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
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


def _child(module: str, options: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="self-refine-bench-") as folder:
        out = Path(folder) / "figures.json"
        command = [sys.executable, "-m", module, "--json", str(out), *options]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
        figures: dict[str, Any] = json.loads(out.read_text())
        return figures


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def _met(value: float, target: float) -> str:
    return "yes" if value <= target else "**no**"


def _fraction(entry: dict[str, Any], name: str, fallback: str = "reward") -> str:
    value = entry.get(f"self_refine/{name}", entry.get(fallback) if fallback else None)
    return "-" if value is None else f"{value:.2f}"


def _policy(model: str) -> str:
    return "the local model (Qwen2.5-Coder-0.5B-Instruct)" if model == "local" else f"`{model}`"


def markdown(figures: dict[str, Any]) -> str:
    """The results page."""
    batching, steps = figures["batching"], figures["steps"]
    graph = sorted(batching["graph_seconds"])[len(batching["graph_seconds"]) // 2]
    batched = sorted(batching["batched_seconds"])[len(batching["batched_seconds"]) // 2]
    separate = sorted(batching["separate_seconds"])[len(batching["separate_seconds"]) // 2]
    lines = [
        f"# Self-Refine in TRL's GRPOTrainer: {figures['device'].upper()} figures",
        "",
        f"Measured {figures['date']} at commit {figures['commit']} with `{figures['command']}` "
        f"on {figures['machine']['cpu']} ({figures['machine']['cores']} cores), model "
        f"`{figures['model']}`; load average "
        f"{figures['load_before']} before, {figures['load_after']} after; "
        + ", ".join(f"{k} {v}" for k, v in figures["versions"].items())
        + f". The policy is {_policy(figures['model'])} converted to float32 by "
        "`trainable_model`; the task is constrained generation, checked by the `concepts` "
        "verifier.",
        "",
        "## Refining a batch's wrong samples",
        "",
        f"{batching['samples']} drafts refined once through the refine graph "
        f"(greedy, at most {batching['max_new_tokens']} tokens a reply), against the same "
        "refine requests answered by one batched `generate` and by one `generate` each; "
        f"median of {batching['repeats']} runs.",
        "",
        "| way | seconds | over one batched generate | target | met |",
        "|---|---|---|---|---|",
        f"| through the graph (`refine_batch`, PolicyChatModel) | {graph:.2f} | "
        f"{batching['graph_over_batched']:.2f}x | <= {BATCHING_TARGET}x | "
        f"{_met(batching['graph_over_batched'], BATCHING_TARGET)} |",
        f"| one batched `generate` | {batched:.2f} | 1.00x | - | - |",
        f"| one `generate` per request | {separate:.2f} | "
        f"{batching['separate_over_batched']:.2f}x | - | - |",
        "",
        "Generate calls (batch sizes) per graph run: "
        + "; ".join(str(r) for r in batching["generate_calls_per_graph_run"])
        + ".",
        "",
        "## On-policy honesty: which tokens the trainer scores",
        "",
        "The same drafts refined sampling at temperature 1, as the trainer samples. Mean "
        "log-probability per token of each refinement, scored by the policy:",
        "",
        "| where | nats per token |",
        "|---|---|",
        f'| where it was written (the refine request: the "exchange" form) | '
        f"{batching['logprob_where_written']:.3f} |",
        f'| after the trainer\'s prompt alone (the "refinement" form) | '
        f"{batching['logprob_after_prompt']:.3f} |",
        "",
        f"Gap: {batching['gap_nats_per_token']:.3f} nats per token: after the prompt alone the "
        f"policy finds each refinement token {batching['likelier_per_token']:.1f}x less likely "
        "than where it wrote it, and the trainer (no sampling log-probabilities without vLLM) "
        "treats those tokens as its own samples. The exchange form scores every trained token "
        "where it was sampled, so it is the default.",
        "",
        "## GRPO steps: refine rollouts against TRL's plain rollouts",
        "",
        f"`examples/train_grpo.py`, {steps['steps']} step(s) each, the same settings and seed "
        "(2 prompts x 4 completions a step, 32 completion tokens, learning rate 1e-6). For "
        "plain rollouts acc@t1 and acc@t2 are the reward (the verifier's verdict).",
        "",
        "| rollouts | step | seconds | acc@t1 | acc@t2 | wrong -> right | right -> wrong "
        "| reward |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in ("plain", "refine"):
        for entry in steps[name]["steps"]:
            lines.append(
                f"| {steps[name]['rollouts']} | {entry['step']} | {entry['step_time']:.1f} | "
                f"{_fraction(entry, 'acc_t1')} | {_fraction(entry, 'acc_t2')} | "
                f"{_fraction(entry, 'wrong_to_right', '')} | "
                f"{_fraction(entry, 'right_to_wrong', '')} | {entry['reward']:.2f} |"
            )
    seconds = steps["seconds_per_step"]
    lines += [
        "",
        "| measure | refine rollouts | plain rollouts | ratio | target | met |",
        "|---|---|---|---|---|---|",
        f"| seconds per step | {seconds['refine']:.1f} | {seconds['plain']:.1f} | "
        f"{steps['refine_over_plain']:.2f}x | <= {STEPS_TARGET}x | "
        f"{_met(steps['refine_over_plain'], STEPS_TARGET)} |",
        f"| peak memory of the run (GB) | {steps['refine']['peak_rss_gb']:.1f} | "
        f"{steps['plain']['peak_rss_gb']:.1f} | "
        f"{steps['refine']['peak_rss_gb'] / steps['plain']['peak_rss_gb']:.2f}x | - | - |",
        "",
        "A handful of steps on a CPU: enough for the cost of a step and to see every step "
        "log its metrics, not to show learning. On a GPU machine: "
        "`python -m benchmarks.training.run --device cuda --steps 10`.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda on a GPU machine")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="local", help="a local model string (default: local)")
    args = parser.parse_args()
    before = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    batching = _child(
        "benchmarks.training.batching",
        ["--device", args.device, "--repeats", str(args.repeats), "--model", args.model],
    )
    steps = _child(
        "benchmarks.training.steps",
        [
            "--steps",
            str(args.steps),
            "--model",
            args.model,
            *(["--cpu"] if args.device == "cpu" else []),
        ],
    )
    figures = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _commit(),
        "command": "python -m benchmarks.training.run " + " ".join(sys.argv[1:]),
        "device": args.device,
        "model": args.model,
        "machine": machine(),
        "versions": {p: metadata.version(p) for p in ("torch", "transformers", "trl")},
        "load_before": before,
        "load_after": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
        "batching": batching,
        "steps": steps,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"training-{args.device}.json").write_text(json.dumps(figures, indent=1))
    (RESULTS / f"training-{args.device}.md").write_text(markdown(figures))
    print(markdown(figures))


if __name__ == "__main__":
    main()
