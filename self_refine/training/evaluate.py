"""evaluate_policy(): acc@t1, acc@t2 and the transitions of a policy on held-out items.

Turn 1: the policy answers each item's prompt (greedy, so a rerun gives the same
drafts). Turn 2: the wrong drafts go once through the refine graph with the checks'
feedback, the policy as refiner, exactly as `refine_rollout` refines them in training
(`RefineRollout.turns`). Right drafts are not refined. The items are rows as the
trainer's: `prompt` (a string or chat messages) and the verifiers' `reference`.

From the command line, for transformers model directories or trainer checkpoints:

    python -m self_refine.training.evaluate MODEL [MODEL ...] --items held-out.jsonl \\
        --verifiers concepts --profile constrained_generation --out eval/

prints progress with the time left and writes `evaluation.json`, `evaluation.md` and
`evaluation.png` (with matplotlib) to `--out`.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from self_refine.critics import Verifier
from self_refine.errors import ConfigError, SelfRefineError
from self_refine.input_files import read_input
from self_refine.training.folders import check_out_folder, clear_written
from self_refine.training.policy import PolicyChatModel
from self_refine.training.rewards import edit_metrics
from self_refine.training.rollout import RefineRollout, refine_rollout
from self_refine.training.tasks import task_of

__all__ = ["Evaluation", "evaluate_policy", "evaluation_callback", "main", "write_evaluations"]

WRITES = ("evaluation.json", "evaluation.md", "evaluation.png")
"""What the command writes into `--out`."""

Progress = Callable[[int, int, float], None]
"""Called after each batch: items done, items in all, seconds so far."""


@dataclass(frozen=True)
class Evaluation:
    """What one policy did on the held-out items; shares are of all items."""

    model: str
    items: int
    acc_t1: float
    acc_t2: float
    wrong_to_right: float
    right_to_wrong: float
    refined: float
    """Share of items whose refinement brought new text."""
    seconds: float
    step: int | None = None
    """The trainer's global step, for a checkpoint that records it."""
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    """Per item: task, draft, refinement, correct_before, correct_after."""
    edit_distance: float | None = None
    """Mean normalised edit distance of the wrong drafts' refinements (`edit_metrics`);
    None when every draft was right."""


def evaluate_policy(
    model: Any,
    items: Iterable[Mapping[str, Any]],
    *,
    tokenizer: Any = None,
    verifiers: Sequence[str | Verifier] | None = None,
    profile: str = "general",
    critics: Sequence[Any] | None = None,
    max_new_tokens: int = 256,
    draft_tokens: int | None = None,
    batch_size: int = 8,
    trained_on: Iterable[Mapping[str, Any]] | None = None,
    progress: Progress | None = None,
) -> Evaluation:
    """Evaluate a policy: a model directory or checkpoint (path), or a model with `tokenizer`.

    Drafts have at most `draft_tokens` tokens (default: `max_new_tokens`), refinements
    `max_new_tokens`. `trained_on` (the training rows) refuses items trained on.
    Everything is checked before the model is loaded.
    """
    rows, rollout = _prepared(
        items,
        verifiers=verifiers,
        profile=profile,
        critics=critics,
        max_new_tokens=max_new_tokens,
        draft_tokens=draft_tokens,
        batch_size=batch_size,
        trained_on=trained_on,
    )
    name, step = _name_and_step(model)
    model, tokenizer = _loaded(model, tokenizer)
    greedy = copy.deepcopy(model.generation_config)
    greedy.do_sample, greedy.temperature, greedy.top_p, greedy.top_k = False, None, None, None
    policy = PolicyChatModel(
        model=model, tokenizer=tokenizer, generation_config=greedy, max_new_tokens=max_new_tokens
    )
    prompts = [row["prompt"] for row in rows]
    outcomes = []
    started = time.perf_counter()
    was_training = bool(getattr(model, "training", False))
    model.eval()
    try:
        for first in range(0, len(prompts), batch_size):
            batch, _ = rollout.turns(
                prompts[first : first + batch_size], policy, draft_tokens or max_new_tokens
            )
            outcomes.extend(batch)
            if progress is not None:
                progress(len(outcomes), len(prompts), time.perf_counter() - started)
    finally:
        if was_training:
            model.train()
    size = len(outcomes)
    return Evaluation(
        model=name,
        items=size,
        acc_t1=sum(o.right_before for o in outcomes) / size,
        acc_t2=sum(o.right_after for o in outcomes) / size,
        wrong_to_right=sum(not o.right_before and o.right_after for o in outcomes) / size,
        right_to_wrong=sum(o.right_before and not o.right_after for o in outcomes) / size,
        refined=sum(o.refinement is not None for o in outcomes) / size,
        seconds=time.perf_counter() - started,
        step=step,
        edit_distance=edit_metrics(
            [(o.draft, o.refinement) for o in outcomes if not o.right_before]
        ).get("edit_distance"),
        outcomes=[
            {
                "task": o.task,
                "draft": o.draft,
                "refinement": o.refinement,
                "correct_before": o.right_before,
                "correct_after": o.right_after,
            }
            for o in outcomes
        ],
    )


_OPTIONS = (
    "verifiers",
    "profile",
    "critics",
    "max_new_tokens",
    "draft_tokens",
    "batch_size",
    "trained_on",
)
"""evaluate_policy's options that `evaluation_callback` passes on."""


def _prepared(
    items: Any,
    *,
    verifiers: Sequence[str | Verifier] | None = None,
    profile: str = "general",
    critics: Sequence[Any] | None = None,
    max_new_tokens: int = 256,
    draft_tokens: int | None = None,
    batch_size: int = 8,
    trained_on: Iterable[Mapping[str, Any]] | None = None,
) -> tuple[list[Mapping[str, Any]], RefineRollout]:
    """The items and the rollout whose turns evaluate them, every option checked."""
    if items is None or isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise ConfigError(
            "items must be the held-out rows (a list of dicts or a datasets.Dataset, each with "
            f"'prompt' and its reference), got {type(items).__name__}"
        )
    rows = list(items)
    pictured = next((i for i, row in enumerate(rows) if _has_images(row)), None)
    if pictured is not None:
        raise ConfigError(
            f"item {pictured} carries images: evaluate_policy evaluates text items only "
            "(a vision-language policy trains with refine rollouts, but its evaluation is not "
            "built); give items without an image column or image parts"
        )
    rollout = refine_rollout(
        rows, verifiers=verifiers, profile=profile, critics=critics, max_new_tokens=max_new_tokens
    )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
    if draft_tokens is not None and (not isinstance(draft_tokens, int) or draft_tokens < 1):
        raise ConfigError(f"draft_tokens must be a whole number >= 1, got {draft_tokens!r}")
    if trained_on is not None:
        _refuse_trained(rows, trained_on)
    return rows, rollout


def evaluation_callback(
    items: Iterable[Mapping[str, Any]], out: str | Path, *, every: int, **options: Any
) -> Any:
    """A transformers `TrainerCallback` that evaluates the policy every `every` steps.

    It evaluates when training begins (the untrained policy, or the checkpoint resumed
    from) and after every `every`-th step, with `evaluate_policy(**options)` on `items`,
    and rewrites `out`'s `evaluation.{json,md,png}` each time, one entry per step. A run
    resumed into the same `out` keeps the entries already there and skips their steps.
    """
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ConfigError(f"every must be a whole number of steps >= 1, got {every!r}")
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ConfigError(
            f"evaluation_callback does not take {', '.join(unknown)}: its options are "
            f"{', '.join(_OPTIONS)} (it evaluates the trainer's own model and tokenizer)"
        )
    rows, _ = _prepared(items, **options)
    from transformers import TrainerCallback

    folder = Path(out)
    done = _kept_evaluations(folder)

    class _EvaluateEvery(TrainerCallback):
        def _evaluate(self, state: Any, model: Any, processing_class: Any) -> None:
            step = int(state.global_step)
            if any(e.step == step for e in done):
                return
            tokenizer = getattr(processing_class, "tokenizer", processing_class)
            found = evaluate_policy(model, rows, tokenizer=tokenizer, **options)
            done.append(replace(found, model=f"step {step}", step=step))
            done.sort(key=lambda e: e.step or 0)
            write_evaluations(done, folder)

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self._evaluate(state, kwargs["model"], kwargs["processing_class"])

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step % every == 0:
                self._evaluate(state, kwargs["model"], kwargs["processing_class"])

    return _EvaluateEvery()


def _kept_evaluations(folder: Path) -> list[Evaluation]:
    """The evaluations a run resumed into `folder` wrote before, or a one-line refusal."""
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{str(folder)!r} is a file: evaluations go into a folder of that name")
    kept = folder / "evaluation.json"
    if not kept.is_file():
        return []
    fix = "move it away to evaluate from the start"
    try:
        entries = json.loads(kept.read_text(encoding="utf-8"))
        return [Evaluation(**entry) for entry in entries]
    except (UnicodeDecodeError, json.JSONDecodeError, TypeError) as error:
        raise ConfigError(
            f"{kept} is not an evaluation this package wrote ({error}): {fix}"
        ) from None


def _has_images(row: Any) -> bool:
    """True for an item with an image column or a prompt with image parts."""
    if not isinstance(row, Mapping):
        return False
    column = row.get("images") or ([row["image"]] if row.get("image") is not None else [])
    prompt = row.get("prompt")
    parts = (
        [
            b
            for m in prompt
            if isinstance(m, Mapping) and isinstance(m.get("content"), list)
            for b in m["content"]
        ]
        if isinstance(prompt, list)
        else []
    )
    return bool(column) or any(isinstance(b, Mapping) and b.get("type") == "image" for b in parts)


def _refuse_trained(rows: list[Mapping[str, Any]], trained_on: Iterable[Mapping[str, Any]]) -> None:
    trained = list(trained_on)
    odd = next((i for i, row in enumerate(trained) if not isinstance(row, Mapping)), None)
    if odd is not None:
        raise ConfigError(
            f"trained_on row {odd} is a {type(trained[odd]).__name__}, not a row: give the "
            'training rows, each a dict such as {"prompt": ..., "reference": ...}'
        )
    seen = {task_of(row["prompt"]) for row in trained if "prompt" in row}
    both = [index for index, row in enumerate(rows) if task_of(row["prompt"]) in seen]
    if both:
        raise ConfigError(
            f"{len(both)} held-out item(s) were trained on (the first, item {both[0]}): "
            "evaluate on items the training rows do not hold"
        )


def _name_and_step(model: Any) -> tuple[str, int | None]:
    if not isinstance(model, str | Path):
        return str(getattr(model, "name_or_path", "") or "model"), None
    path = Path(model)
    if not (path / "config.json").is_file():
        raise ConfigError(
            f"{str(path)!r} is not a transformers model directory (no config.json): give a "
            "directory saved by save_pretrained, a trainer's checkpoint-N, or trainable_model()'s"
        )
    state = path / "trainer_state.json"
    return path.name, _global_step(state) if state.is_file() else None


def _global_step(state: Path) -> int:
    """The `global_step` a checkpoint's trainer_state.json records, or a one-line refusal."""
    fix = "repair it, or remove it to evaluate the model without a step"
    try:
        found = json.loads(state.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{state} is not UTF-8 text: {fix}") from None
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{state} is not valid JSON ({error.msg}, line {error.lineno}): {fix}"
        ) from None
    step = found.get("global_step") if isinstance(found, dict) else None
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ConfigError(
            f"{state} records no whole global_step (a trainer checkpoint's holds "
            f'{{"global_step": 12, ...}}): {fix}'
        )
    return step


def _loaded(model: Any, tokenizer: Any) -> tuple[Any, Any]:
    if not isinstance(model, str | Path):
        if tokenizer is None:
            raise ConfigError("a model given as an object needs its tokenizer: tokenizer=...")
        return model, tokenizer
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    loaded = AutoModelForCausalLM.from_pretrained(str(model))
    if torch.cuda.is_available():
        loaded = loaded.to("cuda")
    return loaded, tokenizer or AutoTokenizer.from_pretrained(str(model))


def write_evaluations(evaluations: Sequence[Evaluation], out: Path) -> list[Path]:
    """Write `evaluation.json`, `evaluation.md` and (with matplotlib) `evaluation.png`."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "evaluation.json", out / "evaluation.md"]
    written[0].write_text(json.dumps([asdict(e) for e in evaluations], indent=1))
    lines = [
        "# Held-out evaluation",
        "",
        "acc@t1: right as first answered (greedy); acc@t2: right after one refinement of the "
        "wrong answers with the checks' feedback, through the refine graph. Shares of all items; "
        "edit distance: the refinements' mean character edit distance from their drafts over "
        "the longer text's length (0: unchanged).",
        "",
        "| model | step | items | acc@t1 | acc@t2 | wrong -> right | right -> wrong | "
        "edit distance | seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for e in evaluations:
        lines.append(
            f"| {e.model} | {'-' if e.step is None else e.step} | {e.items} | {e.acc_t1:.2f} | "
            f"{e.acc_t2:.2f} | {e.wrong_to_right:.2f} | {e.right_to_wrong:.2f} | "
            f"{'-' if e.edit_distance is None else f'{e.edit_distance:.2f}'} | {e.seconds:.1f} |"
        )
    written[1].write_text("\n".join([*lines, ""]))
    plot = _plot(evaluations, out / "evaluation.png")
    return [*written, *([plot] if plot else [])]


def _plot(evaluations: Sequence[Evaluation], path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    figure, axes = plt.subplots(figsize=(max(4.0, 1.6 * len(evaluations) + 2), 3.5))
    places = range(len(evaluations))
    axes.bar([x - 0.2 for x in places], [e.acc_t1 for e in evaluations], 0.4, label="acc@t1")
    axes.bar([x + 0.2 for x in places], [e.acc_t2 for e in evaluations], 0.4, label="acc@t2")
    axes.set_xticks(list(places), [e.model for e in evaluations], rotation=20, ha="right")
    axes.set_ylim(0, 1)
    axes.set_ylabel("share of held-out items right")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def _read_rows(path: str, option: str = "--items") -> list[dict[str, Any]]:
    """The JSON rows of a JSONL file, one object a line (blank lines skipped).

    Lines end at "\n" only: a U+2028 or U+2029 inside a JSON string is text, as JSON has it.
    """
    try:
        data = read_input(path)
    except OSError as error:
        raise ConfigError(f"cannot read the {option} file {path!r}: {error.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        where = data.count(b"\n", 0, error.start) + 1
        raise ConfigError(
            f"{path}:{where} is not UTF-8 text (byte 0x{data[error.start]:02x}): save the "
            f"{option} file as UTF-8"
        ) from None
    rows = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ConfigError(
                f"{path}:{number} is not a JSON line ({error.msg}): each line is one item, "
                '{"prompt": ..., "reference": ...}'
            ) from None
        if not isinstance(row, dict):
            raise ConfigError(
                f"{path}:{number} is a JSON {type(row).__name__}, not an object: each line is "
                'one item, {"prompt": ..., "reference": ...}'
            )
        rows.append(row)
    return rows


def _show_progress(model: str) -> Progress:
    def show(done: int, total: int, seconds: float) -> None:
        left = seconds / done * (total - done)
        print(
            f"{model}: {done}/{total} items, {seconds:.0f} s, about {left:.0f} s left",
            file=sys.stderr,
            flush=True,
        )

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: evaluate each model given on the held-out items."""
    parser = argparse.ArgumentParser(
        prog="python -m self_refine.training.evaluate", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("models", nargs="+", help="transformers model directories or checkpoints")
    parser.add_argument("--items", required=True, help="held-out items, one JSON row a line")
    parser.add_argument("--verifiers", required=True, help="comma-separated verifier names")
    parser.add_argument(
        "--critics",
        help="comma-separated critics that tell the refiner (default: the verifiers' findings); "
        "visible_tests for a code task whose prompts show examples",
    )
    parser.add_argument("--profile", default="general")
    parser.add_argument("--trained-on", help="the training rows (JSONL): items in them refused")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--draft-tokens", type=int, help="default: --max-new-tokens")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--out", default="evaluation", help="a new or empty folder for the results")
    parser.add_argument(
        "--replace",
        action="store_true",
        help="write into --out even if it holds files (its evaluation.* are replaced)",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    try:
        check_out_folder(out, WRITES, replace=args.replace)
        items = _read_rows(args.items)
        trained = _read_rows(args.trained_on, "--trained-on") if args.trained_on else None
        options: dict[str, Any] = {
            "verifiers": [v.strip() for v in args.verifiers.split(",") if v.strip()],
            "profile": args.profile,
            "critics": [c.strip() for c in args.critics.split(",") if c.strip()]
            if args.critics
            else None,
            "max_new_tokens": args.max_new_tokens,
            "draft_tokens": args.draft_tokens,
            "batch_size": args.batch_size,
            "trained_on": trained,
        }
        for model in args.models:  # every model and option checked before the first loads
            _name_and_step(model)
        refine_rollout(items, **{k: options[k] for k in ("verifiers", "profile", "critics")})
        evaluations = []
        for model in args.models:
            evaluations.append(
                evaluate_policy(model, items, progress=_show_progress(Path(model).name), **options)
            )
            if len(evaluations) == 1:
                clear_written(out, WRITES)  # with --replace: no plot left from another run
            write_evaluations(evaluations, out)  # each model's result kept at once
    except SelfRefineError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for name in WRITES:
        if (out / name).exists():
            print(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
