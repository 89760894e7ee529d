"""Learning curves of GRPO runs side by side: held-out acc@t1 and acc@t2 by step.

    python -m benchmarks.training.curves RUN [RUN ...] [--names A,B] --out benchmarks/results/NAME

Each RUN is the `--out` folder of `examples/train_grpo.py` run with `--eval-every K`
(it holds `summary.json`, `held-out.jsonl` and `evaluation/evaluation.json`). Every
held-out answer is judged again by today's check against its row's reference (the
`stated_answer` check, the number the reply's last line states, where the reference
has an `answer`, as `--task arithmetic`'s rows
do, else `concepts`), so runs made before a change to the check are read by the same
rule as runs made after it; the table gives both verdicts where they differ. Writes
`NAME.md`, `NAME.json` and (with matplotlib) `NAME.png`.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.quality.intervals import wilson
from self_refine.critics.verifiers import resolve_verifier
from self_refine.training.checks import STATED_ANSWER

__all__ = ["finish_step_plot", "main", "read_run", "write_results"]


def _task_key(prompt: Any) -> str:
    return prompt if isinstance(prompt, str) else str(prompt[-1]["content"])


def _summary(folder: Path) -> dict[str, Any]:
    """The run's summary; for a run stopped before it wrote one, its last checkpoint's log."""
    if (folder / "summary.json").is_file():
        return dict(json.loads((folder / "summary.json").read_text()))
    saved = sorted(
        (folder / "checkpoints").glob("checkpoint-*/trainer_state.json"),
        key=lambda path: int(path.parent.name.split("-")[1]),
    )
    history = json.loads(saved[-1].read_text())["log_history"] if saved else []
    return {
        "rollouts": "refine (stopped)"
        if (folder / "refined.jsonl").exists()
        else "plain (stopped)",
        "steps": [entry for entry in history if "reward" in entry],
        "peak_rss_gb": None,
    }


def read_run(folder: Path, name: str | None = None) -> dict[str, Any]:
    """One run's settings, seconds per step and evaluations, each answer judged again
    (`name`: the run's name in the table; its folder's by default)."""
    summary = _summary(folder)
    references = {
        _task_key(row["prompt"]): row["reference"]
        for row in map(json.loads, (folder / "held-out.jsonl").read_text().splitlines())
    }
    checks = {"answer": resolve_verifier(STATED_ANSWER), "concepts": resolve_verifier("concepts")}

    def right(task: str, text: str | None) -> bool:
        reference = references[task]
        check = checks["answer" if "answer" in reference else "concepts"]
        return bool(text) and check.verify(task, str(text), reference).done

    evaluations = []
    for entry in json.loads((folder / "evaluation" / "evaluation.json").read_text()):
        outcomes = entry["outcomes"]
        t1 = [right(o["task"], o["draft"]) for o in outcomes]
        t2 = [
            after or right(o["task"], o["refinement"])
            for after, o in zip(t1, outcomes, strict=True)
        ]
        kept = [
            {**o, "right_t1": a, "right_t2": b} for o, a, b in zip(outcomes, t1, t2, strict=True)
        ]
        evaluations.append(
            {
                "step": entry["step"],
                "items": len(outcomes),
                "acc_t1": sum(t1) / len(outcomes),
                "acc_t2": sum(t2) / len(outcomes),
                "acc_t1_then": entry["acc_t1"],
                "acc_t2_then": entry["acc_t2"],
                "wrong_to_right": sum(b and not a for a, b in zip(t1, t2, strict=True))
                / len(outcomes),
                "outcomes": kept,
            }
        )
    steps = summary["steps"]
    return {
        "run": name or folder.name,
        "rollouts": summary["rollouts"],
        "steps": len(steps),
        "seconds_per_step": statistics.median(s["step_time"] for s in steps) if steps else None,
        "peak_rss_gb": summary.get("peak_rss_gb"),
        "evaluations": evaluations,
    }


def _cell(share: float, items: int) -> str:
    interval = wilson(round(share * items), items)
    return f"{share:.2f} [{interval.low:.2f}-{interval.high:.2f}]"


def _markdown(runs: list[dict[str, Any]], command: str) -> str:
    lines = [
        "# Learning curves: held-out acc@t1 and acc@t2 by step",
        "",
        f"- command: `{command}`",
        "- acc@t1: the policy's greedy answer is right; acc@t2: right after one refinement "
        "of the wrong answers with the checks' feedback (the policy as refiner); Wilson 95% "
        "intervals; every answer judged by today's check, `stated_answer` where the row has a key, "
        "else `concepts` (the verdict at the time in parentheses where it differs)",
        "",
        "| run | rollouts | step | acc@t1 | acc@t2 | wrong -> right |",
        "|---|---|---|---|---|---|",
    ]
    for run in runs:
        for e in run["evaluations"]:
            then = (
                f" ({e['acc_t1_then']:.2f})" if abs(e["acc_t1_then"] - e["acc_t1"]) > 1e-9 else ""
            )
            lines.append(
                f"| {run['run']} | {run['rollouts']} | {e['step']} | "
                f"{_cell(e['acc_t1'], e['items'])}{then} | {_cell(e['acc_t2'], e['items'])} | "
                f"{e['wrong_to_right']:.2f} |"
            )
    lines += ["", "| run | steps | median seconds a step | peak memory |", "|---|---|---|---|"]
    for run in runs:
        seconds, peak = run["seconds_per_step"], run["peak_rss_gb"]
        lines.append(
            f"| {run['run']} | {run['steps']} | {'-' if seconds is None else f'{seconds:.1f}'} | "
            f"{'-' if peak is None else f'{peak:.1f} GB'} |"
        )
    return "\n".join(lines) + "\n"


def _plot(runs: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, axis = plt.subplots(figsize=(6.4, 4.0))
    for run in runs:
        steps = [e["step"] for e in run["evaluations"]]
        (line,) = axis.plot(
            steps, [e["acc_t1"] for e in run["evaluations"]], marker="o", label=run["run"]
        )
        axis.plot(
            steps,
            [e["acc_t2"] for e in run["evaluations"]],
            linestyle="--",
            color=line.get_color(),
        )
    finish_step_plot(figure, axis, "held-out accuracy (solid acc@t1, dashed acc@t2)", path)
    return True


def finish_step_plot(figure: Any, axis: Any, ylabel: str, path: Path) -> None:
    """Label a plot of held-out accuracy by GRPO step, save it to `path` and close it."""
    import matplotlib.pyplot as plt

    axis.set_xlabel("GRPO step")
    axis.set_ylabel(ylabel)
    axis.set_ylim(0, 1)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_results(out: Path, markdown: str, figures: Any, plot: Callable[[Path], bool]) -> None:
    """Write `out`.md, `out`.json and (when `plot` can draw) `out`.png; say what was written."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(markdown)
    out.with_suffix(".json").write_text(json.dumps(figures, indent=1) + "\n")
    drawn = plot(out.with_suffix(".png"))
    print(f"wrote {out}.md, .json" + (", .png" if drawn else " (no matplotlib: no plot)"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="train_grpo.py output folders")
    parser.add_argument("--out", type=Path, required=True, help="path stem of the files written")
    parser.add_argument("--names", help="the runs' names in the table, comma-separated")
    args = parser.parse_args(argv)
    names = args.names.split(",") if args.names else [r.name for r in args.runs]
    if len(names) != len(args.runs):
        parser.error(f"--names gives {len(names)} names for {len(args.runs)} runs: one a run")
    missing = [str(r) for r in args.runs if not (r / "evaluation" / "evaluation.json").is_file()]
    if missing:
        parser.error(
            f"no evaluation/evaluation.json in {', '.join(missing)}: "
            "train with --eval-every K to write one"
        )
    runs = [read_run(folder, name) for folder, name in zip(args.runs, names, strict=True)]
    named = f" --names {args.names}" if args.names else ""
    folders = " ".join(r.name for r in args.runs)
    command = f"python -m benchmarks.training.curves {folders}{named} --out {args.out.name}"
    write_results(args.out, _markdown(runs, command), runs, lambda path: _plot(runs, path))


if __name__ == "__main__":
    main()
