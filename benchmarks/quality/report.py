"""Write a quality run's results: JSON, a Markdown table with examples, and plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.quality.intervals import compared
from benchmarks.quality.outputs import PLOT_MISSING, pyplot, warn_no_plot

__all__ = ["markdown", "readings", "write_results"]

_LABELS = {
    "first": "first draft only",
    "intrinsic": "intrinsic self-refine (model critiques itself)",
    "verifier": "verifier-guided (checker findings + LLM critic)",
    "trainer": "refine only wrong first drafts",
    "candidates": "refine with {n} candidates per step (verifier-guided)",
    "bestofn": "best-of-{n} first drafts, no refinement",
}


def _label(condition: str, figures: dict[str, Any] | None = None) -> str:
    label = _LABELS.get(condition, condition)
    return label.format(n=(figures or {}).get("n", "N")) if "{n}" in label else label


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def markdown(document: dict[str, Any]) -> str:
    """The results as a Markdown page."""
    model = document["model"]
    lines = [
        f"# Refinement quality: {model.get('name')} ({document['date']})",
        "",
        f"- command: `{document['command']}`"
        + (f" at commit {document['commit']}" if document.get("commit") else ""),
        f"- model: `{model.get('model')}`"
        + (f", file `{model['file']}`, sha256 `{model['sha256']}`" if model.get("file") else ""),
        f"- machine: {document['machine']['cores']} cores, Python {document['machine']['python']}",
        f"- {_items_line(document)}, up to {document['k']} refine steps, "
        f"at most {document['max_tokens']} tokens per reply, refine requests in the "
        f"{document.get('refine_form', 'single')} form",
        "- judged by each set's exact checker on the final answer; an answer that echoes the "
        "task or the prompt's scaffolding counts as wrong",
        "- every condition starts from the same first drafts; its cost columns (tokens, "
        "seconds and calls per item) are totals that include writing that first draft",
        "",
    ]
    if document.get("unfinished_sets"):
        lines[-1:-1] = [f"- **partial**: not yet run: {', '.join(document['unfinished_sets'])}"]
    k = document["k"]
    head = ["set", "condition", *[f"acc@{i}" for i in range(k + 1)]]
    head += ["w->r", "r->w", "score", "tok in/item", "tok out/item", "s/item", "calls/item"]
    head += ["replies rejected: echo/refusal/long/unchanged", "parse fallbacks", "echo in answers"]
    head += ["gamed answers"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, conditions in document["results"].items():
        for condition, f in conditions.items():
            accuracy = list(f.get("accuracy_at") or [])
            accuracy += [accuracy[-1]] * (k + 1 - len(accuracy)) if accuracy else []
            rejected = f.get("rejected_share_of_replies") or {}
            cells = [name, _label(condition, f), *map(_pct, accuracy)]
            cells += [str(f.get("wrong_to_right", "-")), str(f.get("right_to_wrong", "-"))]
            cells += [_num(f.get("mean_score"), 2), _num(f.get("input_tokens_per_item"), 0)]
            cells += [_num(f.get("output_tokens_per_item"), 0), _num(f.get("seconds_per_item"))]
            cells += [_num(f.get("calls_per_item"))]
            cells += [
                "/".join(
                    _pct(rejected.get(r, 0.0)) for r in ("echo", "refusal", "too_long", "unchanged")
                ),
                _pct(f.get("parse_fallbacks_per_critique")),
                _pct(f.get("echo_in_final_answers")),
                _pct(f.get("gamed_share")),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Reading", "", *[f"- {line}" for line in readings(document)]]
    lines += ["", "## Examples (first draft -> final answer)", ""]
    for name, examples in document.get("examples", {}).items():
        for example in examples:
            condition = example.get("condition", "verifier")
            lines += [
                f"**{name} / {example['id']}**, {_label(condition)} "
                f"({_verdict(example['correct_first'])} -> "
                f"{_verdict(example['correct_final'])}): {example['task']}",
                "",
                "```text",
                f"first: {_clip(example['first'])}",
                f"final: {_clip(example['final'])}",
                "```",
                "",
            ]
    return "\n".join(lines) + "\n"


def readings(document: dict[str, Any]) -> list[str]:
    """One sentence per refining condition and set: its accuracy against the same items'
    first drafts (every condition starts from them), with the paired test in words
    (`intervals.compared`: "beats" only where the exact McNemar p is below 0.05); a
    condition that ends below the first draft is said so in bold.
    """
    said = []
    for name, conditions in document["results"].items():
        for condition, f in conditions.items():
            accuracy = f.get("accuracy_at") or []
            if condition == "first" or not accuracy:
                continue
            before, after = accuracy[0], accuracy[-1]
            label = _label(condition, f)
            gained, lost = f.get("wrong_to_right", 0), f.get("right_to_wrong", 0)
            if after < before:
                verdict = f"**ended below the first draft**: {_pct(before)} -> {_pct(after)}"
            else:
                verdict = f"{_pct(before)} -> {_pct(after)}"
            if f.get("items"):
                test = compared("it", "the first draft", gained, lost, f["items"])
            else:  # a run from before the items were counted: the moves alone
                test = f"{gained} wrong -> right, {lost} right -> wrong"
            said.append(f"{name}, {label}: {verdict}; {test}.")
        said += _budget_reading(name, conditions)
    return said


def _tokens(figures: dict[str, Any]) -> float:
    return float(figures.get("input_tokens_per_item", 0) + figures.get("output_tokens_per_item", 0))


def _budget_reading(name: str, conditions: dict[str, Any]) -> list[str]:
    """Refining with candidates against best-of-N first drafts, at their tokens per item,
    with the paired test where the run kept it."""
    refined, sampled = conditions.get("candidates"), conditions.get("bestofn")
    if not (refined and sampled and refined.get("accuracy_at") and sampled.get("accuracy_at")):
        return []
    a, b = refined["accuracy_at"][-1], sampled["accuracy_at"][-1]
    ta, tb = _tokens(refined), _tokens(sampled)
    budget = "at no more tokens" if ta <= tb else "**with more tokens than it**"
    against = refined.get("against_bestofn")
    mine = f"refining with {refined.get('n')} candidates per step"
    other = f"best-of-{sampled.get('n')} first drafts"
    if against:
        test = compared(mine, other, against["gained"], against["lost"], against["items"])
    else:  # a run from before the paired counts were kept
        test = f"{mine} against {other} (no paired test recorded)"
    return [
        f"{name}: {test}, {budget}: {_pct(a)} at {ta:,.0f} tokens per item "
        f"against {_pct(b)} at {tb:,.0f}."
    ]


def _items_line(document: dict[str, Any]) -> str:
    counts = document.get("items") or {}
    if not counts:
        return f"{document['items_per_set']} items per set"
    return "items per set: " + ", ".join(f"{name} {n}" for name, n in counts.items())


def _verdict(value: Any) -> str:
    return {True: "right", False: "wrong"}.get(value, "unjudged")


def _clip(text: str, limit: int = 400) -> str:
    flat = " | ".join(line for line in str(text).splitlines() if line.strip())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _plot(document: dict[str, Any], path: Path) -> bool:
    """Accuracy against refine steps per condition, and tokens against final accuracy."""
    plt = pyplot()
    if plt is None:
        return False
    sets = list(document["results"])
    figure, axes = plt.subplots(1, len(sets) + 1, figsize=(4.2 * (len(sets) + 1), 3.6))
    for axis, name in zip(axes, sets, strict=False):
        for condition, f in document["results"][name].items():
            accuracy = f.get("accuracy_at") or []
            if condition == "first" or not accuracy:
                continue
            axis.plot(
                range(len(accuracy)), [100 * a for a in accuracy], marker="o", label=condition
            )
        axis.set_title(name)
        axis.set_xlabel("refine steps")
        axis.set_ylabel("accuracy (%)")
        axis.set_ylim(0, 100)
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=8)
    tokens = axes[-1]
    for name in sets:
        for condition, f in document["results"][name].items():
            if not f.get("accuracy_at"):
                continue
            spent = f.get("input_tokens_per_item", 0) + f.get("output_tokens_per_item", 0)
            tokens.scatter(spent, 100 * f["accuracy_at"][-1])
            tokens.annotate(f"{name[:5]}/{condition[:5]}", (spent, 100 * f["accuracy_at"][-1]))
    tokens.set_xlabel("tokens per item")
    tokens.set_ylabel("final accuracy (%)")
    tokens.set_title("cost and accuracy")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return True


def write_results(
    document: dict[str, Any],
    folder: Path,
    records: dict[str, dict[str, list[dict[str, Any]]]] | None = None,
    *,
    stem: str,
    latest: bool = False,
    final: bool = False,
) -> list[Path]:
    """Write the run's files (and every item's record, when given); returns their paths.

    `quality-latest.md` is written only when `latest` asks for it. Without matplotlib the
    page says the plot is missing, and the `final` write says so on stderr.
    """
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{stem}.json", folder / f"{stem}.md"]
    paths[0].write_text(json.dumps(document, indent=1))
    page = markdown(document)
    plot = folder / f"{stem}.png"
    if _plot(document, plot):
        page += f"\n![accuracy by refine step, and cost]({plot.name})\n"
        paths.append(plot)
    else:
        page += f"\n**No plot**: {PLOT_MISSING}.\n"
        if final:
            warn_no_plot()
    paths[1].write_text(page)
    if latest:
        paths.append(folder / "quality-latest.md")
        paths[-1].write_text(page)
    if records is not None:
        paths.append(folder / f"{stem}.records.jsonl")
        lines = [
            json.dumps({"set": name, "condition": condition, **record})
            for name, runs in records.items()
            for condition, done in runs.items()
            for record in done
        ]
        paths[-1].write_text("".join(line + "\n" for line in lines))
    return paths
