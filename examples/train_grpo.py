"""Train the local model with TRL's GRPOTrainer, each step's wrong samples refined once.

The policy is the model `make run` uses (Qwen2.5-Coder-0.5B-Instruct), converted once
from its GGUF file into a transformers model (`trainable_model`); `--model` takes
another local model string or a transformers model directory. The task
(`--task`) is constrained generation: a sentence that uses every given word, checked
by the `concepts` verifier, which also gives the reward; or `arithmetic`: a sum or
difference of two small numbers, the `answer` verifier checking the final number
against the row's key (a reward no wording satisfies). Each step samples 4 completions for
each of 2 prompts; `refine_rollout` judges them, refines the wrong ones through the
refine graph (the verifier's findings as the critique, the policy as refiner), and
logs acc@t1, acc@t2 and the transitions beside TRL's own metrics.

    python examples/train_grpo.py --steps 3            # 542-634 s a step on 2 CPU cores
    python examples/train_grpo.py --steps 3 --plain    # the same steps, TRL's own: 322-422 s

(measured 2026-11-26 under a load average of 8 to 10 on those 2 cores:
benchmarks/results/training-cpu.md).

On a GPU it trains there, in bf16 (`--cpu` keeps it on the CPU). A longer run there,
with a larger model, held-out evaluation every 20 steps and a checkpoint every 20:

    python examples/train_grpo.py --model local:qwen2.5-coder-1.5b --steps 400 \
        --prompts 512 --prompts-per-step 8 --learning-rate 1e-5 --eval-every 20 --save-every 20
    python examples/train_grpo.py ... --resume   # after a stop: on from the last checkpoint

(the same with `--plain` into another `--out` gives the baseline at equal steps). This
project has not run it on a GPU; its bf16 CUDA path is tested on a tiny model where
CUDA exists (tests/training/test_resume.py).

It writes `grpo-run/` (or `--out`): `log_history.json` (every step's metrics),
`refined.jsonl` (every refined sample), `summary.json`, `train.jsonl` and
`held-out.jsonl` (the rows), `checkpoints/` with `--save-every`, and with
`--eval-every` `evaluation/evaluation.{json,md,png}`: acc@t1 and acc@t2 on the
held-out prompts at step 0 and every K steps (`python -m self_refine.training.evaluate`
scores any checkpoint the same way).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import warnings
from pathlib import Path
from typing import Any

from self_refine.training import (
    evaluation_callback,
    refine_rollout,
    trainable_model,
    verifier_reward,
)

# TRL 1.16 reads transformers' old `gradient_checkpointing` names, and transformers 5 warns
# at each read (about twenty FutureWarnings a run): nothing a user of this script can change.
warnings.filterwarnings("ignore", category=FutureWarning, module=r"transformers\.")

WORDS = (
    "anchor apple balloon basket beach bicycle bridge candle castle cloud compass desert "
    "dolphin drum feather forest fountain garden guitar hammer harbor island kite ladder "
    "lantern library meadow mirror mountain orchard pencil piano rabbit river rocket tent "
    "tower train tunnel umbrella valley violin wagon window"
).split()


def constrained_rows(count: int, seed: int) -> list[dict[str, Any]]:
    """Prompts asking for one sentence with 3 to 5 given words, each with its word list."""
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        words = rng.sample(WORDS, rng.randint(3, 5))
        task = "Write one natural sentence that uses all of these words: " + ", ".join(words) + "."
        prompt = [{"role": "user", "content": task}]
        rows.append({"prompt": prompt, "reference": {"concepts": words}})
    return rows


def arithmetic_rows(count: int, seed: int) -> list[dict[str, Any]]:
    """Prompts asking for a + b or a - b (2 to 30 each), each with its answer as the key."""
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        a, b, op = rng.randint(2, 30), rng.randint(2, 30), rng.choice("+-")
        task = f"What is {a} {op} {b}? End your reply with: The answer is <number>."
        prompt = [{"role": "user", "content": task}]
        rows.append({"prompt": prompt, "reference": {"answer": a + b if op == "+" else a - b}})
    return rows


TASKS = {
    # name: (rows, the verifier that judges and rewards, the refine prompts' profile)
    "concepts": (constrained_rows, "concepts", "constrained_generation"),
    "arithmetic": (arithmetic_rows, "answer", "math"),
}


def train(args: argparse.Namespace) -> dict[str, Any]:
    """Train for `args.steps` steps; return the summary written to `summary.json`."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    on_cpu = args.cpu or not torch.cuda.is_available()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = trainable_model(args.model) if args.model.startswith("local") else args.model
    make_rows, verifier, profile = TASKS[args.task]
    rows = make_rows(args.prompts, args.seed)
    tasks = {row["prompt"][0]["content"] for row in rows}
    held_out = [
        row
        for row in make_rows(args.held_out * 2, args.seed + 1)
        if row["prompt"][0]["content"] not in tasks
    ][: args.held_out]
    for name, written in (("train.jsonl", rows), ("held-out.jsonl", held_out)):
        (out / name).write_text("".join(json.dumps(row) + "\n" for row in written))
    callbacks: list[Any] = [_step_lines(args.steps)]
    if args.eval_every:
        evaluate = {"verifiers": [verifier], "profile": profile}
        callbacks.append(
            evaluation_callback(
                held_out,
                out / "evaluation",
                every=args.eval_every,
                trained_on=rows,
                max_new_tokens=args.completion_tokens,
                **evaluate,
            )
        )
    rollout = (
        None
        if args.plain
        else refine_rollout(
            rows,
            verifiers=[verifier],
            profile=profile,
            train_on=args.train_on,
            failed=args.failed,
            log=out / "refined.jsonl",
        )
    )
    config = GRPOConfig(
        output_dir=str(out / "checkpoints"),
        per_device_train_batch_size=args.generations * args.prompts_per_step,
        num_generations=args.generations,
        max_completion_length=args.completion_tokens,
        max_steps=args.steps,
        learning_rate=args.learning_rate,
        temperature=args.temperature,
        logging_steps=1,
        save_strategy="steps" if args.save_every else "no",
        save_steps=args.save_every or 500,
        report_to="none",
        use_cpu=on_cpu,
        bf16=not on_cpu,  # a CPU without bf16 instructions emulates it, several times slower
        seed=args.seed,
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=str(model),
        reward_funcs=[verifier_reward(verifier)],
        args=config,
        train_dataset=Dataset.from_list(rows),
        rollout_func=rollout,
        callbacks=callbacks,
    )
    trainer.train(resume_from_checkpoint=True if args.resume else None)
    steps = [entry for entry in trainer.state.log_history if "reward" in entry]
    summary = {
        "task": args.task,
        "rollouts": "plain" if args.plain else f"refine ({args.train_on}, failed: {args.failed})",
        "steps": steps,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
    }
    (out / "log_history.json").write_text(json.dumps(trainer.state.log_history, indent=1))
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def _show(summary: dict[str, Any]) -> None:
    print(f"rollouts: {summary['rollouts']}")
    turn_1 = f"self_refine/reward_t1/verifier_{TASKS[summary['task']][1]}"
    print("step  seconds  acc@t1  acc@t2  wrong->right  reward  turn-1 reward")
    for entry in summary["steps"]:
        t1 = entry.get("self_refine/acc_t1", entry["reward"])
        t2 = entry.get("self_refine/acc_t2", entry["reward"])
        fixed = entry.get("self_refine/wrong_to_right", 0.0)
        first = entry.get(turn_1, entry["reward"])
        print(
            f"{entry['step']:>4}  {entry['step_time']:>7.1f}  {t1:>6.2f}  {t2:>6.2f}  "
            f"{fixed:>12.2f}  {entry['reward']:>6.2f}  {first:>13.2f}"
        )
    print(f"peak memory: {summary['peak_rss_gb']:.1f} GB")


def _step_lines(steps: int) -> Any:
    """A callback that says when each step starts and how long the last one took, so a step
    that samples, refines and trains for minutes on a CPU does not pass in silence."""
    import time

    from transformers import TrainerCallback

    class StepLines(TrainerCallback):
        started = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            note = " (sampling, refining wrong samples, one update: minutes on a CPU)"
            took = f"; step {state.global_step} took {time.monotonic() - self.started:.0f} s"
            print(
                f"step {state.global_step + 1} of {steps} started"
                + (note if state.global_step == 0 else took),
                flush=True,
            )
            self.started = time.monotonic()

    return StepLines()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model",
        default="local",
        help="a local model string or a model directory (default: local)",
    )
    parser.add_argument("--task", choices=sorted(TASKS), default="concepts")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--plain", action="store_true", help="TRL's own rollouts, no refinement")
    parser.add_argument("--train-on", choices=("exchange", "refinement"), default="exchange")
    parser.add_argument(
        "--failed",
        choices=("draft", "refinement"),
        default="draft",
        help="what a wrong draft whose refinement fails too trains on (default: the draft)",
    )
    parser.add_argument("--prompts", type=int, default=16, help="prompts in the dataset")
    parser.add_argument("--prompts-per-step", type=int, default=2)
    parser.add_argument("--generations", type=int, default=4, help="completions per prompt")
    parser.add_argument("--completion-tokens", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-6)
    parser.add_argument(
        "--temperature", type=float, default=1.0, help="sampling temperature of the drafts"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cpu", action="store_true", help="train on the CPU even with a GPU")
    parser.add_argument("--held-out", type=int, default=16, help="prompts never trained on")
    parser.add_argument("--eval-every", type=int, default=0, help="evaluate every K steps")
    parser.add_argument("--save-every", type=int, default=0, help="a checkpoint every K steps")
    parser.add_argument("--resume", action="store_true", help="go on from the last checkpoint")
    parser.add_argument("--out", default="grpo-run")
    _show(train(parser.parse_args()))


if __name__ == "__main__":
    main()
