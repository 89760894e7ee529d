"""Paired GRPO runs over seeds: refine against plain per seed and pooled, with an exact test.

    python -m benchmarks.training.seeds --refine R0 R1 R2 --plain P0 P1 P2 \\
        [--matched M0 M1 M2] --out benchmarks/results/NAME

Each run is the `--out` folder of `examples/train_grpo.py` with `--eval-every K`, the
i-th of each list of one seed. Every seed's runs must hold the same held-out items (the
example's fixed held-out draw); they are refused otherwise. Each answer is judged again by
today's check (`benchmarks.training.curves.read_run`). At the last step every run of a
seed evaluated: per seed, acc@t1 and acc@t2 of each arm and refine minus plain at t2;
pooled over (seed, item) pairs, the gained and lost answers and their exact McNemar p,
with the mean and spread of the seeds' differences; per arm, the mean tokens sampled a
step (`self_refine/sampled_tokens`). Writes `NAME.md`, `NAME.json` and (with matplotlib)
`NAME.png`: each arm's mean held-out acc@t2 by step, its seeds' range shaded.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from benchmarks.quality.intervals import mcnemar, paired_counts
from benchmarks.training.curves import finish_step_plot, read_run, write_results

__all__ = ["compare", "main"]


def _tokens(folder: Path) -> float | None:
    """Mean tokens sampled a step, from the run's log; None for a run that did not log them."""
    history = folder / "log_history.json"
    if not history.is_file():
        return None
    found = [
        e["self_refine/sampled_tokens"]
        for e in json.loads(history.read_text())
        if "self_refine/sampled_tokens" in e
    ]
    return sum(found) / len(found) if found else None


def _held_out(folder: Path) -> str:
    return (folder / "held-out.jsonl").read_text(encoding="utf-8")


def compare(arms: dict[str, list[Path]]) -> dict[str, Any]:
    """Per seed and pooled figures of the arms' runs (`arms["refine"]`, `arms["plain"]`, ...)."""
    seeds = {len(runs) for runs in arms.values()}
    if len(seeds) != 1:
        raise ValueError(f"give each arm one run a seed, got {sorted(seeds)} runs")
    baselines = [arm for arm in arms if arm != "refine"]
    per_seed: list[dict[str, Any]] = []
    pooled: dict[str, list[bool]] = {arm: [] for arm in arms}
    for seed in range(seeds.pop()):
        folders = {arm: runs[seed] for arm, runs in arms.items()}
        items = {arm: _held_out(folder) for arm, folder in folders.items()}
        if len(set(items.values())) != 1:
            raise ValueError(
                f"the runs of seed {seed} ({', '.join(map(str, folders.values()))}) hold "
                "different held-out items: compare runs scored on the same items"
            )
        runs = {arm: read_run(folder) for arm, folder in folders.items()}
        steps = set.intersection(*({e["step"] for e in r["evaluations"]} for r in runs.values()))
        if not steps:
            raise ValueError(f"the runs of seed {seed} share no evaluated step")
        last = max(steps)
        answers = {
            arm: next(e for e in run["evaluations"] if e["step"] == last)["outcomes"]
            for arm, run in runs.items()
        }
        right = {arm: [bool(o["right_t2"]) for o in outcome] for arm, outcome in answers.items()}
        for arm in arms:
            pooled[arm] += right[arm]
        per_seed.append(
            {
                "seed": seed,
                "step": last,
                "items": len(right["refine"]),
                **{
                    f"{arm}_{at}": sum(bool(o[f"right_{at}"]) for o in outcome) / len(outcome)
                    for arm, outcome in answers.items()
                    for at in ("t1", "t2")
                },
                "versus": {arm: _versus(right["refine"], right[arm]) for arm in baselines},
                "tokens_per_step": {arm: _tokens(folder) for arm, folder in folders.items()},
                "curves": {
                    arm: [(e["step"], e["acc_t1"], e["acc_t2"]) for e in run["evaluations"]]
                    for arm, run in runs.items()
                },
            }
        )
    versus = {}
    for arm in baselines:
        differences = [s["versus"][arm]["difference"] for s in per_seed]
        versus[arm] = {
            **_versus(pooled["refine"], pooled[arm]),
            "mean_difference": statistics.mean(differences),
            "sd_difference": statistics.stdev(differences) if len(differences) > 1 else None,
        }
    return {
        "seeds": per_seed,
        "pooled": {
            "pairs": len(pooled["refine"]),
            **{f"{arm}_t2": sum(r) / len(r) for arm, r in pooled.items()},
            "versus": versus,
        },
    }


def _versus(refine: list[bool], other: list[bool]) -> dict[str, Any]:
    """Refine minus another arm at t2 on the same items: the difference, gained, lost, p."""
    gained, lost = paired_counts(refine, other)
    return {
        "difference": (sum(refine) - sum(other)) / len(refine),
        "gained": gained,
        "lost": lost,
        "p": mcnemar(gained, lost),
    }


def _markdown(figures: dict[str, Any], arms: list[str], command: str) -> str:
    others = [arm for arm in arms if arm != "refine"]
    lines = [
        "# Paired GRPO runs over seeds: held-out accuracy at the last common step",
        "",
        f"- command: `{command}`",
        "- acc@t2: right after one refinement of the wrong greedy answers; every answer judged "
        "by today's check; gained / lost: items refine gets right and the other arm wrong at "
        "t2, and the other way; p: exact two-sided McNemar",
        "",
        "| seed | step | items | "
        + " | ".join(f"{a} acc@t1 | {a} acc@t2" for a in arms)
        + " | "
        + " | ".join(f"refine - {a} (t2), gained / lost, p" for a in others)
        + " | "
        + " | ".join(f"{a} tokens a step" for a in arms)
        + " |",
        "|---" * (3 + 3 * len(arms) + len(others)) + "|",
    ]
    for s in figures["seeds"]:
        versus = [s["versus"][a] for a in others]
        tokens = [s["tokens_per_step"][a] for a in arms]
        lines.append(
            f"| {s['seed']} | {s['step']} | {s['items']} | "
            + " | ".join(f"{s[f'{a}_t1']:.2f} | {s[f'{a}_t2']:.2f}" for a in arms)
            + " | "
            + " | ".join(
                f"{v['difference']:+.2f}, {v['gained']} / {v['lost']}, {v['p']:.3g}" for v in versus
            )
            + " | "
            + " | ".join("-" if t is None else f"{t:.0f}" for t in tokens)
            + " |"
        )
    p = figures["pooled"]
    lines += ["", f"Pooled over {p['pairs']} (seed, item) pairs, acc@t2: "]
    lines[-1] += ", ".join(f"{a} {p[f'{a}_t2']:.2f}" for a in arms) + "."
    for arm, v in p["versus"].items():
        spread = "-" if v["sd_difference"] is None else f"{v['sd_difference']:.2f}"
        lines.append(
            f"Refine against {arm}: {v['difference']:+.2f}, {v['gained']} gained, {v['lost']} "
            f"lost, exact McNemar p = {v['p']:.3g}; the seeds' differences: mean "
            f"{v['mean_difference']:+.2f}, standard deviation {spread}."
        )
    return "\n".join(lines) + "\n"


def _plot(figures: dict[str, Any], arms: list[str], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, axis = plt.subplots(figsize=(6.4, 4.0))
    for arm in arms:
        curves = [dict((step, t2) for step, _, t2 in s["curves"][arm]) for s in figures["seeds"]]
        steps = sorted(set.intersection(*(set(c) for c in curves)))
        values = [[c[step] for c in curves] for step in steps]
        (line,) = axis.plot(steps, [statistics.mean(v) for v in values], marker="o", label=arm)
        axis.fill_between(
            steps,
            [min(v) for v in values],
            [max(v) for v in values],
            alpha=0.2,
            color=line.get_color(),
        )
    finish_step_plot(figure, axis, "held-out acc@t2 (mean of seeds; range shaded)", path)
    return True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--refine", nargs="+", type=Path, required=True, help="one run a seed")
    parser.add_argument("--plain", nargs="+", type=Path, required=True, help="same seeds' order")
    parser.add_argument("--matched", nargs="+", type=Path, help="token-matched plain runs")
    parser.add_argument("--out", type=Path, required=True, help="path stem of the files written")
    args = parser.parse_args(argv)
    arms = {"refine": args.refine, "plain": args.plain}
    if args.matched:
        arms["matched"] = args.matched
    try:
        figures = compare(arms)
    except (ValueError, OSError) as error:
        parser.error(str(error))
    names = list(arms)
    given = " ".join(
        f"--{arm} " + " ".join(folder.name for folder in runs) for arm, runs in arms.items()
    )
    command = f"python -m benchmarks.training.seeds {given} --out {args.out.name}"
    markdown = _markdown(figures, names, command)
    write_results(args.out, markdown, figures, lambda path: _plot(figures, names, path))


if __name__ == "__main__":
    main()
