"""One figure from several budget runs: the README's first figure.

The budget benchmark writes a run per command, and its sets are often run apart (a set
at a time, across sittings, under the checks the task gives and again under the answer
key). This draws the runs of one model together, a panel per set: the runs under the
task's own checks (`--feedback task`) as solid lines with their intervals, the same
set under the critic alone (`--feedback critic`) as a dash-dot line of each strategy's
colour (solid where the critic's is the set's only run), and each strategy's
answer-key run (`--feedback key`) as a dashed line of the same colour, an upper bound
no user has (the key picked the answer). A set's panel says which checks picked its
answers, and which line is which.

    python -m benchmarks.quality.combined RUN.json [RUN.json ...] --out FIGURE.png

Each RUN.json is a `spend.py` document; the runs must be of one model, and a set may
appear in one run per feedback setting (a second run of the same set and feedback is
refused: say which one the figure shows).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.quality.outputs import pyplot

__all__ = ["drawn_apart", "panels", "picked_by", "plot"]

_STYLE = {"task": "-", "critic": "-.", "key": "--"}
_LINE = {"critic": ", dash-dot", "key": ", dashed"}
_SAYS = {
    "task": "the task's checks",
    "critic": "the critic alone",
    "key": "answer key (upper bound)",
}


def _said(name: str, feedback: str) -> str:
    """What picked a set's answers under a feedback setting, in a few words."""
    from benchmarks.quality.sets import RUN_CHECK

    if feedback == "task" and RUN_CHECK.get(name) is None:
        return "no key: the vote of each run's drafts"
    return _SAYS[feedback]


def drawn_apart(feedback: str, shown: Sequence[str]) -> bool:
    """Whether a run is drawn as a line of its own style, without intervals: the key's
    always (an upper bound), the critic's beside the task's checks."""
    return feedback == "key" or feedback != shown[0]


def picked_by(name: str, shown: Sequence[str]) -> str:
    """A panel's subtitle: what picked the answers of each run drawn, the main run first,
    each drawn apart with its line style, a line each."""
    return "picked by " + ";\n".join(
        _said(name, f) + (_LINE[f] if drawn_apart(f, shown) else "") for f in shown
    )


def panels(documents: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Each set's runs by feedback setting: {set: {feedback: {"budgets", "result", "part"}}}.

    Raises ValueError when the documents are of different models or a set's run under
    one feedback setting comes twice.
    """
    models = {str(d["model"].get("name")) for d in documents}
    if len(models) > 1:
        raise ValueError(f"runs of different models: {', '.join(sorted(models))}; draw one model")
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for document in documents:
        feedback = str(document.get("feedback") or "key")
        for name, result in document["results"].items():
            if feedback in found.get(name, {}):
                raise ValueError(
                    f"two runs of {name} under --feedback {feedback}: give the figure one of them"
                )
            found.setdefault(name, {})[feedback] = {
                "budgets": list(document["budgets"]),
                "result": result,
                "part": document.get("part"),
            }
    return found


def plot(documents: list[dict[str, Any]], path: Path) -> bool:
    """Draw the figure; False when matplotlib is missing."""
    plt = pyplot()
    if plt is None:
        return False
    sets = panels(documents)
    count = max(len(sets), 1)
    figure, axes = plt.subplots(1, count, figsize=(4.4 * count, 4.0))
    axes = list(axes) if count > 1 else [axes]
    colours: dict[str, str] = {}
    for axis, (name, runs) in zip(axes, sets.items(), strict=False):
        shown = [f for f in ("task", "critic", "key") if f in runs]
        for feedback in shown:
            run = runs[feedback]
            multiples = run["budgets"]
            for shift, (strategy, f) in enumerate(run["result"]["strategies"].items()):
                xs = [m * (1 + 0.03 * (shift - 1.0)) for m in multiples]
                values = [100 * b["accuracy"]["value"] for b in f["budgets"]]
                colour = colours.setdefault(strategy, f"C{len(colours)}")
                if drawn_apart(feedback, shown):
                    axis.plot(xs, values, _STYLE[feedback], color=colour, alpha=0.6)
                    continue
                low = [
                    v - 100 * b["accuracy"]["low"]
                    for v, b in zip(values, f["budgets"], strict=True)
                ]
                high = [
                    100 * b["accuracy"]["high"] - v
                    for v, b in zip(values, f["budgets"], strict=True)
                ]
                axis.errorbar(
                    xs,
                    values,
                    yerr=[low, high],
                    marker="o",
                    capsize=3,
                    color=colour,
                    label=strategy,
                )
        main = runs[shown[0]]
        first = 100 * main["result"]["first"]["accuracy"]["value"]
        axis.axhline(first, color="grey", linestyle=":", label="first draft")
        multiples = sorted({m for run in runs.values() for m in run["budgets"]})
        axis.set_xscale("log", base=2)
        axis.set_xticks(multiples, [f"{m}x" for m in multiples])
        part = "reported items" if main["part"] == "report" else "tuning items"
        axis.set_title(
            f"{name} ({main['result']['first']['items']} {part})\n" + picked_by(name, shown),
            fontsize=9,
        )
        axis.set_xlabel("token budget (x the item's first draft)")
        axis.set_ylabel("accuracy (%)")
        axis.set_ylim(-2, 102)
    shown_labels: dict[str, Any] = {}
    for axis in axes:
        for handle, label in zip(*axis.get_legend_handles_labels(), strict=True):
            shown_labels.setdefault(label, handle)
    axes[0].legend(list(shown_labels.values()), list(shown_labels), fontsize=8)
    figure.suptitle(str(documents[0]["model"].get("name")), fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="spend.py JSON documents")
    parser.add_argument("--out", type=Path, required=True, help="the PNG to write")
    args = parser.parse_args(argv)
    documents = [json.loads(path.read_text()) for path in args.runs]
    try:
        drew = plot(documents, args.out)
    except ValueError as error:
        raise SystemExit(f"combined: {error}") from None
    if not drew:
        raise SystemExit("combined: matplotlib is not installed (pip install matplotlib)")
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
