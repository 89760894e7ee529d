"""Read finished batch outputs back, and draw their summary (needs the `plot` extra)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from self_refine.batch.metrics import TRANSITIONS, only_steps
from self_refine.batch.output import result_record
from self_refine.content import task_problem
from self_refine.errors import ConfigError, install_hint
from self_refine.input_checks import MAX_TASK_CHARS

__all__ = ["is_plot", "load_records", "plot_summary"]

_PLOT_CREATOR = "langgraph-self-refine"
"""The `Creator` a plot this program drew carries in its metadata (PNG, SVG and PDF)."""
_PLOT_MAX_BYTES = 1_000_000


def is_plot(path: Path) -> bool:
    """Whether the file at `path` is a plot this program drew (so it may be drawn again)."""
    with path.open("rb") as handle:
        return _PLOT_CREATOR.encode() in handle.read(_PLOT_MAX_BYTES)


def load_records(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Result records of one or more output files (shards), one per id.

    A torn last line (a run killed mid-write) is ignored; any other line
    that is not a result (not UTF-8 text, not JSON, a field of the wrong
    type) is an error naming the file and line.
    """
    records: dict[str, dict[str, Any]] = {}
    fix = "give the -o file of `self-refine batch`"
    for path in paths:
        try:
            lines = Path(path).read_bytes().split(b"\n")
        except OSError as error:
            raise ConfigError(
                f"cannot read {str(path)!r} ({error.strerror}): give a batch output file"
            ) from None
        results = 0
        for number, raw in enumerate(lines, 1):
            torn_allowed = number == len(lines) and results > 0
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                if torn_allowed:
                    continue  # a line torn inside a character
                raise ConfigError(
                    f"line {number} of {str(path)!r} is not UTF-8 text: this is not a batch "
                    f"output file; {fix}"
                ) from None
            record = result_record(line, number, torn_allowed, path, fix)
            if record is None:
                continue
            _check_fields(record, f"line {number} of {str(path)!r}", fix)
            records.setdefault(str(record["id"]), record)
            results += 1
    return list(records.values())


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_flag(value: Any) -> bool:
    return value is None or isinstance(value, bool)


def _is_score(value: Any) -> bool:
    return value is None or _is_number(value)


def _is_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_task(value: Any) -> bool:
    """A task as a batch writes it back: its text, or its text and image blocks."""
    if isinstance(value, list):
        return task_problem(value, MAX_TASK_CHARS) is None
    return _is_text(value)


def _list_of(fits: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or (isinstance(value, list) and all(map(fits, value)))


def _is_usage(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and all(map(_is_number, value.values())))


def _is_attempt(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    critique = value.get("critique")
    return (
        _is_number(value.get("iteration"))
        and isinstance(value.get("draft"), str)
        and isinstance(critique, dict)
        and _is_score(critique.get("score"))
        and _list_of(lambda item: isinstance(item, str))(critique.get("feedback"))
        and _is_usage(value.get("usage"))
        and _list_of(_is_rejected)(value.get("rejected"))
    )


def _is_rejected(value: Any) -> bool:
    """A rejected reply as the page shows it: an object whose reason, detail and reply are text."""
    return isinstance(value, dict) and all(
        _is_text(value.get(name)) for name in ("reason", "detail", "reply")
    )


# What summarize() and the report page read, and what each must be (null: not judged).
_FIELDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "id": ("a string or a number", lambda value: isinstance(value, str) or _is_number(value)),
    "answer": ("text", _is_text),
    "stop_reason": ("text", _is_text),
    "correct_first": ("true, false or null", _is_flag),
    "correct_final": ("true, false or null", _is_flag),
    "score": ("a number or null", _is_score),
    "iterations": ("a number or null", _is_score),
    "correct_at": ("a list of true, false or null", _list_of(_is_flag)),
    "score_at": ("a list of numbers or null", _list_of(_is_score)),
    "usage": ("an object of token counts", _is_usage),
    "task": ("text, or text and image blocks", _is_task),
    "attempts": (
        "a list of attempts (iteration, draft, critique with a score and feedback, "
        "rejected replies as objects)",
        _list_of(_is_attempt),
    ),
}


def _check_fields(record: dict[str, Any], where: str, fix: str) -> None:
    """Raise ConfigError when a field the summary reads has the wrong type."""
    for name, (wanted, fits) in _FIELDS.items():
        if name in record and not fits(record[name]):
            got = type(record[name]).__name__
            raise ConfigError(f"{where}: {name} should be {wanted}, not {got}; {fix}")


def plot_summary(summary: dict[str, Any], path: str | Path, *, title: str = "") -> None:
    """Draw accuracy (or mean score) after k refine steps (after step k when every run sampled
    or searched), and the transitions, into `path`.

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
        figure.savefig(path, metadata={"Creator": _PLOT_CREATOR})
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
    axes.set_xlabel("step (k)" if only_steps(summary) else "refine steps (k)")
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
