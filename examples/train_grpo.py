"""Train the local model with TRL's GRPOTrainer, each step's wrong samples refined once.

The policy is the model `make run` uses (Qwen2.5-Coder-0.5B-Instruct), converted once
from its GGUF file into a transformers model (`trainable_model`); `--model` takes
another local model string or a transformers model directory. The task
(`--task`) is constrained generation: a sentence that uses every given word, checked
by the `concepts` verifier, which also gives the reward; or `arithmetic`: a sum or
difference of two small numbers, the `stated_answer` check comparing the number the
reply's last line states ("The answer is N", as the prompt asks) with the row's key
(a restated task or a stray last number does not pass); or `code`: a small Python
function whose prompt shows two examples, graded by five cases (`python_tests`, sandboxed),
the refiner told by the `visible_tests` critic what its code returned on the two it was
shown, which it could not know at turn 1. Each step samples 4 completions for
each of 2 prompts; `refine_rollout` judges them, refines the wrong ones through the
refine graph (the verifier's findings as the critique, the policy as refiner), and
logs acc@t1, acc@t2, the transitions, how much turn 2 edits and the tokens each step
sampled beside TRL's own metrics. The held-out prompts are the same for every `--seed`
(a fixed draw, `HELD_OUT_SEED`) and never trained on; `--seed` changes the training
prompts and the sampling. `--plain --match-tokens REFINE_RUN` gives a plain run as many
completions per prompt as sample the tokens a refine run's step sampled.

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

It writes `grpo-run/` (or `--out`, a new or empty folder; `--replace` writes into a
folder holding files, removing what a run writes first; `--resume` goes on in a run's
own folder): `run.json` (the run's settings), `log_history.json` (every step's metrics),
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
import sys
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from self_refine.errors import ConfigError, SelfRefineError
from self_refine.training import (
    evaluation_callback,
    refine_rollout,
    trainable_model,
    verifier_reward,
)
from self_refine.training.folders import check_out_folder, clear_written

# TRL 1.16 reads transformers' old `gradient_checkpointing` names, and transformers 5 warns
# at each read (about twenty FutureWarnings a run): nothing a user of this script can change.
warnings.filterwarnings("ignore", category=FutureWarning, module=r"transformers\.")

WORDS = (
    "anchor apple balloon basket beach bicycle bridge candle castle cloud compass desert "
    "dolphin drum feather forest fountain garden guitar hammer harbor island kite ladder "
    "lantern library meadow mirror mountain orchard pencil piano rabbit river rocket tent "
    "tower train tunnel umbrella valley violin wagon window"
).split()


HELD_OUT_SEED = 52_000
"""The seed of the held-out draw, the same for every `--seed` and arm: seeds differ in what
they train on, never in the items that score them (`split_rows`)."""

WRITES = (
    "run.json",
    "train.jsonl",
    "held-out.jsonl",
    "refined.jsonl",
    "log_history.json",
    "summary.json",
    "checkpoints",
    "evaluation",
)
"""What a run writes into `--out` (`--replace` removes these first, nothing else)."""

SAME_RUN = (
    "task",
    "model",
    "seed",
    "prompts",
    "held_out",
    "plain",
    "generations",
    "prompts_per_step",
    "train_on",
    "failed",
)
"""The settings a resumed run must share with the run it goes on from (`run.json`)."""


def constrained_row(rng: random.Random) -> dict[str, Any]:
    """A prompt asking for one sentence with 3 to 5 given words, with its word list."""
    words = rng.sample(WORDS, rng.randint(3, 5))
    task = "Write one natural sentence that uses all of these words: " + ", ".join(words) + "."
    return {"prompt": [{"role": "user", "content": task}], "reference": {"concepts": words}}


def arithmetic_row(rng: random.Random) -> dict[str, Any]:
    """A prompt asking for a + b or a - b (2 to 30 each) in the answer's form, with its key."""
    a, b, op = rng.randint(2, 30), rng.randint(2, 30), rng.choice("+-")
    task = f"What is {a} {op} {b}? End your reply with: The answer is <number>."
    return {
        "prompt": [{"role": "user", "content": task}],
        "reference": {"answer": a + b if op == "+" else a - b},
    }


def _draw(
    make_row: Callable[[random.Random], dict[str, Any]],
    count: int,
    seed: int,
    skip: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """`count` rows of distinct tasks, none of them in `skip`, drawn in the seed's order."""
    rng, seen = random.Random(seed), set(skip)
    rows: list[dict[str, Any]] = []
    for _ in range(count * 100 + 1000):
        if len(rows) == count:
            return rows
        row = make_row(rng)
        task = row["prompt"][0]["content"]
        if task not in seen:
            seen.add(task)
            rows.append(row)
    if len(rows) == count:
        return rows
    raise ConfigError(
        f"the task has fewer than {count} distinct prompts outside the held-out items "
        f"(found {len(rows)}): ask for fewer --prompts or --held-out"
    )


def constrained_rows(count: int, seed: int, skip: Iterable[str] = ()) -> list[dict[str, Any]]:
    """`count` distinct constrained-generation rows of the seed, none whose task is in `skip`."""
    return _draw(constrained_row, count, seed, skip)


def arithmetic_rows(count: int, seed: int, skip: Iterable[str] = ()) -> list[dict[str, Any]]:
    """`count` distinct arithmetic rows of the seed, none whose task is in `skip`."""
    return _draw(arithmetic_row, count, seed, skip)


CODE_PROBLEMS: tuple[tuple[str, Callable[[list[int], int], Any]], ...] = (
    # what solve(xs) returns, in words (k is the row's number), and the function computing it
    (
        "the sum of the numbers in xs that are greater than {k}",
        lambda xs, k: sum(x for x in xs if x > k),
    ),
    ("how many numbers in xs are divisible by {k}", lambda xs, k: sum(x % k == 0 for x in xs)),
    ("the list xs with every number multiplied by {k}", lambda xs, k: [x * k for x in xs]),
    ("the {k} largest numbers of xs, largest first", lambda xs, k: sorted(xs, reverse=True)[:k]),
    (
        "the index of the first number in xs greater than {k}, or -1 if there is none",
        lambda xs, k: next((i for i, x in enumerate(xs) if x > k), -1),
    ),
    (
        "the list xs with every number below {k} replaced by {k}",
        lambda xs, k: [max(x, k) for x in xs],
    ),
)


def code_row(rng: random.Random) -> dict[str, Any]:
    """A small function to write, with two examples shown and five cases graded.

    The reference's `tests` hold every case (the reward and the verdicts run them);
    `visible` holds the two the prompt shows, which the `visible_tests` critic runs, so
    the refiner learns what its code returned on them.
    """
    words, compute = rng.choice(CODE_PROBLEMS)
    k = rng.randint(2, 5)
    cases = [[rng.randint(0, 12) for _ in range(rng.randint(3, 6))] for _ in range(5)]
    asserts = [f"assert solve({xs}) == {compute(xs, k)!r}" for xs in cases]
    shown = "; ".join(f"solve({xs}) == {compute(xs, k)!r}" for xs in cases[:2])
    task = (
        f"Write a Python function solve(xs) that returns {words.format(k=k)}. "
        f"For example: {shown}. Reply with the function in a ```python block."
    )
    return {
        "prompt": [{"role": "user", "content": task}],
        "reference": {"tests": asserts, "visible": asserts[:2]},
    }


def code_rows(count: int, seed: int, skip: Iterable[str] = ()) -> list[dict[str, Any]]:
    """`count` distinct small code problems of the seed, none whose task is in `skip`."""
    return _draw(code_row, count, seed, skip)


class Task(NamedTuple):
    """A task of the example: its rows, the check that judges, rewards and evaluates, the
    refine prompts' profile, and the critic (None: the check's own findings)."""

    rows: Callable[..., list[dict[str, Any]]]
    check: str
    profile: str
    critic: str | None = None


TASKS = {
    "concepts": Task(constrained_rows, "concepts", "constrained_generation"),
    "arithmetic": Task(arithmetic_rows, "stated_answer", "math"),
    "code": Task(code_rows, "python_tests", "python_function", "visible_tests"),
}


def split_rows(
    task: str, prompts: int, held_out: int, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The training rows of `seed` and the held-out rows, which no seed changes or trains on.

    The held-out rows are the first `held_out` of the fixed `HELD_OUT_SEED` draw; the
    training rows are drawn with `seed` and skip every held-out task.
    """
    make_rows = TASKS[task].rows
    held = make_rows(held_out, HELD_OUT_SEED)
    return make_rows(prompts, seed, [row["prompt"][0]["content"] for row in held]), held


def run_settings(args: argparse.Namespace) -> dict[str, Any]:
    """What `run.json` records: who wrote the folder and the settings of its run."""
    return {
        "written_by": "examples/train_grpo.py",
        "held_out_seed": HELD_OUT_SEED,
        **{
            name: getattr(args, name)
            for name in (*SAME_RUN, "steps", "completion_tokens", "learning_rate", "temperature")
        },
        "match_tokens": str(args.match_tokens) if args.match_tokens else None,
    }


def check_out(args: argparse.Namespace) -> None:
    """Refuse an `--out` this run must not write into, before any model loads.

    A new or empty folder is written; `--resume` needs a folder this script wrote
    (its `run.json`) with the same settings; `--replace` removes what a run writes
    (`WRITES`) and leaves any other file there.
    """
    out = Path(args.out)
    if not args.resume:
        if (out / "run.json").is_file() and not args.replace:
            raise ConfigError(
                f"--out {str(out)!r} holds a run of this script (its run.json): pass --resume "
                "to go on with it, --replace to start it over, or name a new folder"
            )
        check_out_folder(out, WRITES, replace=args.replace)
        return
    manifest = out / "run.json"
    if not manifest.is_file():
        raise ConfigError(
            f"--resume: {str(out)!r} holds no run.json, so no run of this script to go on "
            "from: name the --out of the run to resume, or leave --resume out"
        )
    try:
        recorded = json.loads(manifest.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(
            f"{manifest} is not the JSON this script writes ({error}): resume into another "
            "folder, or start over with --replace"
        ) from None
    given = run_settings(args)
    differ = [k for k in SAME_RUN if not isinstance(recorded, dict) or recorded.get(k) != given[k]]
    if differ:
        name = differ[0]
        was = recorded.get(name) if isinstance(recorded, dict) else None
        raise ConfigError(
            f"--resume: the run in {str(out)!r} has {name} {was!r}, this command "
            f"{given[name]!r}: give the settings it ran with (its run.json)"
        )


def check_model(model: str) -> None:
    """Refuse a model path that names no transformers model directory, before loading."""
    if model.startswith("local"):
        return
    path = Path(model).expanduser()
    if path.exists() and not (path / "config.json").is_file():
        raise ConfigError(
            f"--model {model!r} is not a transformers model directory (no config.json): "
            "give a directory saved by save_pretrained, or a local model string such as "
            "local:smollm2"
        )
    if not path.exists() and (path.is_absolute() or model.startswith((".", "~"))):
        raise ConfigError(f"--model {model!r}: no such directory")


def matched_generations(run: Path, prompts_per_step: int) -> tuple[int, str]:
    """Completions per prompt that give a plain step the tokens a step of the refine `run` sampled.

    The refine run's mean tokens a step (`self_refine/sampled_tokens`: its drafts and
    turn 2) over the tokens one of its drafts took (`self_refine/draft_tokens` per
    completion), per prompt of a plain step: rounded, at least 2. Returns the number
    and a line saying how it was found.
    """
    try:
        recorded = json.loads((run / "run.json").read_text(encoding="utf-8"))
        history = json.loads((run / "log_history.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(
            f"--match-tokens {str(run)!r}: cannot read its run.json and log_history.json "
            f"({error}): name the --out of a finished refine run of this script"
        ) from None
    steps = [
        e
        for e in (history if isinstance(history, list) else [])
        if isinstance(e, dict)
        and {"self_refine/sampled_tokens", "self_refine/draft_tokens"} <= set(e)
    ]
    completions = (
        recorded.get("generations", 0) * recorded.get("prompts_per_step", 0)
        if isinstance(recorded, dict)
        else 0
    )
    if not isinstance(recorded, dict) or recorded.get("plain") or not steps or not completions:
        raise ConfigError(
            f"--match-tokens {str(run)!r} is no refine run with logged tokens: name the --out "
            "of a refine run (without --plain) made by this version of the script"
        )
    sampled = sum(e["self_refine/sampled_tokens"] for e in steps) / len(steps)
    drafts = sum(e["self_refine/draft_tokens"] for e in steps) / len(steps)
    per_draft = drafts / completions
    generations = max(2, round(sampled / (per_draft * prompts_per_step)))
    note = (
        f"token-matched: {generations} completions per prompt ({run} sampled {sampled:.0f} "
        f"tokens a step, {per_draft:.1f} a draft, {len(steps)} steps)"
    )
    return generations, note


def train(args: argparse.Namespace) -> dict[str, Any]:
    """Train for `args.steps` steps; return the summary written to `summary.json`."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    if args.match_tokens:
        if not args.plain:
            raise ConfigError("--match-tokens gives a plain run a refine run's tokens: add --plain")
        args.generations, note = matched_generations(Path(args.match_tokens), args.prompts_per_step)
        print(note, flush=True)
    check_out(args)
    check_model(args.model)
    rows, held_out = split_rows(args.task, args.prompts, args.held_out, args.seed)

    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    on_cpu = args.cpu or not torch.cuda.is_available()
    out = Path(args.out)
    model = trainable_model(args.model) if args.model.startswith("local") else args.model
    _, verifier, profile, critic = TASKS[args.task]
    critics = None if critic is None else [critic]
    callbacks: list[Any] = [_step_lines(args.steps)]
    if args.eval_every:
        evaluate = {"verifiers": [verifier], "profile": profile, "critics": critics}
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
            critics=critics,
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
    if args.replace:
        clear_written(out, WRITES)
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(json.dumps(run_settings(args), indent=1))
    for name, written in (("train.jsonl", rows), ("held-out.jsonl", held_out)):
        (out / name).write_text("".join(json.dumps(row) + "\n" for row in written))
    trainer.train(resume_from_checkpoint=True if args.resume else None)
    steps = [entry for entry in trainer.state.log_history if "reward" in entry]
    summary = {
        "task": args.task,
        "seed": args.seed,
        "rollouts": "plain" if args.plain else f"refine ({args.train_on}, failed: {args.failed})",
        "generations": args.generations,
        "steps": steps,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
    }
    (out / "log_history.json").write_text(json.dumps(trainer.state.log_history, indent=1))
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def _show(summary: dict[str, Any]) -> None:
    print(f"rollouts: {summary['rollouts']}")
    turn_1 = f"self_refine/reward_t1/verifier_{TASKS[summary['task']].check}"
    print(
        "step  seconds  acc@t1  acc@t2  wrong->right  edited  reward  turn-1 reward  sampled tokens"
    )
    for entry in summary["steps"]:
        t1 = entry.get("self_refine/acc_t1", entry["reward"])
        t2 = entry.get("self_refine/acc_t2", entry["reward"])
        fixed = entry.get("self_refine/wrong_to_right", 0.0)
        edited = entry.get("self_refine/edited")
        first = entry.get(turn_1, entry["reward"])
        tokens = entry.get("self_refine/sampled_tokens", 0.0)
        print(
            f"{entry['step']:>4}  {entry['step_time']:>7.1f}  {t1:>6.2f}  {t2:>6.2f}  "
            f"{fixed:>12.2f}  {'-' if edited is None else f'{edited:.2f}':>6}  "
            f"{entry['reward']:>6.2f}  {first:>13.2f}  {tokens:>14.0f}"
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
    parser.add_argument(
        "--match-tokens",
        metavar="REFINE_RUN",
        help="with --plain: as many completions per prompt as give a step the tokens a step of "
        "this refine run's --out sampled (sets --generations)",
    )
    parser.add_argument("--out", default="grpo-run", help="a new or empty folder for the run")
    parser.add_argument(
        "--replace",
        action="store_true",
        help="write into --out even if it holds files (what a run writes there is removed first)",
    )
    try:
        summary = train(parser.parse_args())
    except SelfRefineError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    _show(summary)


if __name__ == "__main__":
    main()
