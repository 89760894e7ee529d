"""Read finished batch outputs back, and draw their summary (needs the `plot` extra)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from self_refine.batch.io import result_record
from self_refine.batch.metrics import TRANSITIONS
from self_refine.errors import ConfigError, install_hint

__all__ = ["load_records", "plot_summary"]


def load_records(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Result records of one or more output files (shards), one per id.

    A torn last line (a run killed mid-write) is ignored; any other line
    that is not a result is an error naming the file and line.
    """
    records: dict[str, dict[str, Any]] = {}
    for path in paths:
        try:
            lines = Path(path).read_text(encoding="utf-8").split("\n")
        except OSError as error:
            raise ConfigError(
                f"cannot read {str(path)!r} ({error.strerror}): give a batch output file"
            ) from None
        fix = "give the -o file of `self-refine batch`"
        for number, line in enumerate(lines, 1):
            record = result_record(line, number, number == len(lines), path, fix)
            if record is not None and not {"answer", "stop_reason"} <= record.keys():
                raise ConfigError(
                    f"line {number} of {str(path)!r} has no answer or stop_reason: this looks "
                    f"like batch input, not its results; {fix}"
                )
            if record is not None:
                records.setdefault(str(record["id"]), record)
    return list(records.values())


def plot_summary(summary: dict[str, Any], path: str | Path, *, title: str = "") -> None:
    """Draw accuracy (or mean score) after k refine steps, and the transitions, into `path`.

    The file type follows the extension (.png, .svg, .pdf).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        raise ConfigError(f"--plot needs matplotlib: {install_hint('plot')}") from None
    figure, (curve_axes, bars_axes) = pyplot.subplots(1, 2, figsize=(10, 4))
    try:
        _draw_curve(curve_axes, summary)
        _draw_transitions(bars_axes, summary)
        figure.suptitle(title or f"Self-Refine on {summary['items']} items")
        figure.tight_layout()
        figure.savefig(path)
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot write the plot {str(path)!r} ({error})") from None
    finally:
        pyplot.close(figure)


def _draw_curve(axes: Any, summary: dict[str, Any]) -> None:
    accuracy = summary["accuracy_by_iteration"]
    values, label = (
        ([100 * v for v in accuracy], "accuracy (%)")
        if accuracy
        else (summary["mean_score_by_iteration"], "mean score")
    )
    steps = list(range(len(values)))
    axes.plot(steps, values, marker="o")
    for step, value in zip(steps, values, strict=True):
        axes.annotate(
            f"{value:.1f}" if accuracy else f"{value:.2f}",
            (step, value),
            textcoords="offset points",
            xytext=(0, 6),
            ha="center",
        )
    axes.set_xlabel("refine steps (k)")
    axes.set_ylabel(label)
    axes.set_xticks(steps)
    axes.set_title(f"{label} if stopped after k steps")
    axes.grid(alpha=0.3)


def _draw_transitions(axes: Any, summary: dict[str, Any]) -> None:
    counts = [summary["transitions"].get(name, 0) for name in TRANSITIONS]
    names = [name.replace("->", "\n-> ") for name in TRANSITIONS]
    bars = axes.bar(names, counts, color=["tab:green", "tab:gray", "tab:blue", "tab:red"])
    axes.bar_label(bars)
    axes.set_ylabel("items")
    axes.set_title(f"first draft -> final answer ({summary['judged']} judged)")
