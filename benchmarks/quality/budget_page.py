"""The budget benchmark's files: the page (a table per set: accuracy by budget and
strategy, each against sampling, and its costs), the plot of accuracy against budget,
the JSON document and every record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.quality.intervals import compared, p_text
from benchmarks.quality.outputs import PLOT_MISSING, pyplot, warn_no_plot

__all__ = ["feedback_label", "markdown", "plot", "write_files"]


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def _share(interval: dict[str, float]) -> str:
    return f"{_pct(interval['value'])} [{100 * interval['low']:.0f}-{100 * interval['high']:.0f}]"


def _points(interval: dict[str, float]) -> str:
    def signed(value: float) -> str:
        return f"{100 * value:+.0f}"

    text = f"{signed(interval['value'])} [{signed(interval['low'])}, {signed(interval['high'])}]"
    return f"**{text}**" if interval["low"] > 0 or interval["high"] < 0 else text


def _spent(at: dict[str, Any]) -> str:
    """What a reading spent per item: tokens read / reply tokens, and model requests (a
    page of a run written before a count was kept shows what it has)."""
    output, calls = at.get("output_tokens_per_item"), at.get("calls_per_item")
    text = _num(at["tokens_per_item"]) + (f" / {_num(output)}" if output else "")
    return text + (f", {_num(calls, 1)} calls" if calls is not None else "")


def _pass_at_t(runs: dict[str, Any], multiples: list[int]) -> list[str]:
    """pass@t beside the budget axis, spend told as it is: each strategy's pass rate at
    each budget with the tokens it read there per item (prompt and reply, and reply only:
    the tokens sampled) and its model requests per item."""
    if not runs:
        return []
    lines = [
        "",
        "pass@t and spend: pass rate against what was read per item at each budget: tokens "
        "(prompt and reply / reply only, the tokens sampled) and calls (model requests: each "
        "reply, each LLM critique, each one asked again):",
        "",
        "| budget | " + " | ".join(runs) + " |",
        "|---|" + "---|" * len(runs),
    ]
    for index, multiple in enumerate(multiples):
        cells = []
        for figures in runs.values():
            at = figures["budgets"][index]
            cells.append(f"{_pct(at['accuracy']['value'])} at {_spent(at)}")
        lines.append(f"| {multiple}x | " + " | ".join(cells) + " |")
    return lines


def _test(difference: dict[str, Any]) -> str:
    """The paired test beside a difference: items gained / lost, exact McNemar p."""
    if "mcnemar_p" not in difference:  # a page of a run written before the test was kept
        return ""
    return f" ({difference['gained']}/{difference['lost']}, p = {p_text(difference['mcnemar_p'])})"


def _matched(matched: dict[str, list[dict[str, Any]]], multiples: list[int]) -> list[str]:
    """Each strategy against sample at the same reply tokens per item, beside the equal cap."""
    if not matched:
        return []
    lines = [
        "",
        "At matched spend: each strategy against sample at the same mean reply (output) "
        "tokens per item, read on sample's own curve: interpolated linearly between sample's "
        "two reads around that spend, and sample's nearest read, which the paired test "
        "(items gained / lost, exact McNemar p) is against:",
        "",
        "| strategy | budget | reply tokens/item | accuracy | sample interpolated | "
        "sample's nearest read | vs that read |",
        "|---|---|---|---|---|---|---|",
    ]
    for strategy, rows in matched.items():
        for row in rows:
            near = row["nearest"]
            if row["interpolated"] is not None:
                interpolated = _pct(row["interpolated"])
            else:
                interpolated = f"beyond sample's reads ({row['beyond']})"
            cells = [
                strategy,
                f"{row['multiple']}x",
                _num(row["output_tokens_per_item"]),
                _pct(row["accuracy"]),
                interpolated,
                f"{near['multiple']}x: {_pct(near['accuracy'])} at "
                f"{_num(near['output_tokens_per_item'])}",
                f"{row['gained']}/{row['lost']}, p = {p_text(row['mcnemar_p'])}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def _readings(result: dict[str, Any]) -> list[str]:
    """Each strategy against sample in words at each budget, at the equal cap and at matched
    reply tokens: "beats" only where the exact McNemar p is below 0.05."""
    against = result.get("differences") or {}
    matched = result.get("matched_spend") or {}
    n = result["first"]["items"]
    lines = []
    for strategy, rows in against.items():
        for index, row in enumerate(rows):
            if "mcnemar_p" not in row:
                continue
            said = compared(strategy, "sample", row["gained"], row["lost"], n)
            line = f"- {row['multiple']}x, equal cap: {said}"
            if strategy in matched:
                at = matched[strategy][index]
                near = at["nearest"]
                line += (
                    f"; at matched reply tokens ({_num(at['output_tokens_per_item'])} per item, "
                    f"sample's {near['multiple']}x read at {_num(near['output_tokens_per_item'])}"
                    f"): {compared(strategy, 'sample', at['gained'], at['lost'], n)}"
                )
            lines.append(line)
    return ["", 'Reading ("beats" only where p < 0.05):', "", *lines] if lines else []


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


_BEFORE_THE_SPLIT = (
    "not recorded: a run from before the sets kept run and grading data apart, where the "
    "answer key and the graded tests picked the answer (an upper bound)"
)


_PARTS = {
    "report": "the reported part of each set (the tuning part, where constants, defaults and "
    "forms are chosen, is apart)",
    "tune": "the tuning part of each set (where constants, defaults and forms are chosen; not "
    "reported)",
}
_NO_PART = "not recorded (a run from before the sets had a tuning part)"


def feedback_label(document: dict[str, Any]) -> str:
    """What the run's checks were, as its page and plot name them."""
    return str(document.get("feedback_label") or _BEFORE_THE_SPLIT)


def _ledger_line(document: dict[str, Any]) -> list[str]:
    """Where a reported run is on the ledger, or that it is not (a run of the reported part
    made outside `python -m benchmarks.quality.reported`)."""
    ledger = document.get("ledger")
    if ledger:
        return [f"- on the ledger: `{ledger['file']}`, started {ledger['started']}"]
    if document.get("part") == "report":
        return [
            "- **not on the ledger**: a reported figure comes from "
            "`python -m benchmarks.quality.reported --why ...`"
        ]
    return []


def _rebuilt_line(document: dict[str, Any]) -> list[str]:
    """Where the figures were worked out again from the run's records, and by what."""
    rebuilt = document.get("rebuilt")
    if not rebuilt:
        return []
    return [
        f"- figures rebuilt from the run's records ({rebuilt['records']}, no model called) by "
        f"`{rebuilt['command']}` at commit {rebuilt['commit']}, {rebuilt['date']}"
    ]


def _head(document: dict[str, Any]) -> list[str]:
    model, cache = document["model"], document.get("cache") or {}
    part = document.get("part")
    upper = " (upper bound)" if document.get("feedback") == "key" else ""
    lines = [
        f"# How to spend a token budget: {model.get('name')} ({document['date']}){upper}",
        "",
        f"- **feedback**: {feedback_label(document)}",
        f"- **items**: {_PARTS.get(str(part), _NO_PART)}",
        f"- command: `{document['command']}`"
        + (f" at commit {document['commit']}" if document.get("commit") else "")
        + (f" ({document['commit_note']})" if document.get("commit_note") else ""),
        *_ledger_line(document),
        *_rebuilt_line(document),
        f"- model: `{model.get('model')}`"
        + (f", file `{model['file']}`, sha256 `{model['sha256']}`" if model.get("file") else ""),
        f"- machine: {document['machine']['cores']} cores, Python {document['machine']['python']}",
        "- budgets: " + ", ".join(f"{m}x" for m in document["budgets"]) + " the tokens (prompt "
        "and reply) of each item's own first draft, the greedy generate step every strategy "
        "shares; one run per item and strategy at the largest budget, the answer at a smaller "
        "one read from it: what a run given that budget answers, the library's budget rules "
        "replayed on its steps (a step starts only when a reply fits; a draft whose critique "
        "the budget left cannot hold is answered unjudged), the library's pick among the "
        "steps (and candidates) read (for sample and search, the best of every draft read)",
        (
            f"- at most {document['max_tokens']} tokens per reply; "
            if document["max_tokens"]
            else "- replies capped per role by each set's profile (drafts, critiques), as the "
            "library caps a model it resolves from a string; "
        )
        + f"refine+candidates and search sample up to {document['candidates']} replies a step, "
        "as many as the budget left holds at the expected cost of a reply (the library's "
        "`step_width` and `reply_cost`: the mean of the later steps' replies so far, else the "
        "first step's; a first step, its cost unknown, one); a step starts only when one "
        "reply fits, else the run stops (`token_budget`)",
        "- judged by each set's exact checker on its grading data (never given to the run); an "
        "echo of the prompt, feedback wording taken over, or a gamed form the checker fails "
        "counts wrong",
        "- accuracy intervals: Wilson 95%; differences against sample: paired bootstrap over "
        f"items, {document['resamples']:,} resamples, seed {document['seed']} (points; **bold** "
        "when the interval excludes 0), with the items gained / lost and the exact McNemar p; "
        "at an equal cap (the same budget) and at matched spend (the same reply tokens per "
        "item, on sample's own curve)",
    ]
    if cache:
        lines.append(
            f"- reply cache: {cache.get('hits', 0):,} hits, {cache.get('misses', 0):,} misses"
            if cache.get("enabled")
            else f"- reply cache: off ({cache.get('note', 'not asked for')})"
        )
    for strategy, why in (document.get("skipped") or {}).items():
        lines.append(f"- **{strategy} not run**: {why}")
    if document.get("unfinished"):
        lines.append(f"- **partial**: not yet run: {', '.join(document['unfinished'])}")
    if document.get("plot_missing"):
        lines.append(f"- **no plot**: {document['plot_missing']}")
    return [*lines, ""]


def _set_tables(
    name: str, result: dict[str, Any], multiples: list[int], said: str | None
) -> list[str]:
    first, runs = result["first"], result["strategies"]
    strategies = list(runs)
    lines = [
        f"## {name} ({first['items']} items)",
        "",
        *([f"What picked and what judged: {said}", ""] if said else []),
        f"First draft alone: {_share(first['accuracy'])}, {_spent(first)} per item (tokens, "
        "prompt and reply / reply only; model requests): the 1x budget is its tokens.",
        "",
        "| budget | " + " | ".join(strategies) + " |",
        "|---|" + "---|" * len(strategies),
    ]
    for index, multiple in enumerate(multiples):
        cells = [_share(runs[s]["budgets"][index]["accuracy"]) for s in strategies]
        lines.append(f"| {multiple}x | " + " | ".join(cells) + " |")
    lines += _pass_at_t(runs, multiples)
    against = result.get("differences") or {}
    if against:
        lines += [
            "",
            "Accuracy minus sample's, in points:",
            "",
            "| budget | " + " | ".join(against) + " |",
            "|---|" + "---|" * len(against),
        ]
        for index, multiple in enumerate(multiples):
            cells = [_points(against[s][index]) + _test(against[s][index]) for s in against]
            lines.append(f"| {multiple}x | " + " | ".join(cells) + " |")
    lines += _matched(result.get("matched_spend") or {}, multiples)
    lines += _readings(result)
    lines += [
        "",
        "| strategy | tokens/item read at "
        f"{multiples[-1]}x | tokens/item run | calls/item run | s/item | refine replies "
        "unchanged | "
        "right->wrong (vs first draft) | lost between budgets | gamed at "
        f"{multiples[-1]}x | no answer yet at "
        + "/".join(f"{m}x" for m in multiples)
        + " | stop reasons | errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for strategy, f in runs.items():
        last = f["budgets"][-1]
        unchanged = f.get("unchanged_share_of_refine_replies")
        replies = f"{_pct(unchanged)} of {f['refine_replies']}" if unchanged is not None else "-"
        stops = ", ".join(f"{k} {v}" for k, v in sorted(f["stop_reasons"].items()))
        cells = [
            strategy,
            _num(last["tokens_per_item"]),
            _num(f["run_tokens_per_item"]),
            _num(f.get("run_calls_per_item"), 1),
            _num(f["seconds_per_item"], 1),
            replies,
            str(last["right_to_wrong"]),
            str(f["lost_between_budgets"]),
            _pct(last["gamed_share"]),
            "/".join(str(b.get("no_answer", 0)) for b in f["budgets"]),
            stops,
            str(f["errors"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def markdown(document: dict[str, Any], plot_name: str | None = None) -> str:
    """The run as a Markdown page."""
    lines = _head(document)
    said = document.get("picked_and_judged") or {}
    for name, result in document["results"].items():
        lines += _set_tables(name, result, list(document["budgets"]), said.get(name))
    if plot_name:
        lines += [f"![accuracy against token budget]({plot_name})", ""]
    return "\n".join(lines)


def plot(document: dict[str, Any], path: Path) -> bool:
    """Accuracy against budget, a panel per set; False when matplotlib is missing."""
    plt = pyplot()
    if plt is None:
        return False
    sets = list(document["results"])
    figure, axes = plt.subplots(1, max(len(sets), 1), figsize=(4.4 * max(len(sets), 1), 3.8))
    axes = list(axes) if len(sets) > 1 else [axes]
    multiples = list(document["budgets"])
    for axis, name in zip(axes, sets, strict=False):
        result = document["results"][name]
        for shift, (strategy, f) in enumerate(result["strategies"].items()):
            xs = [m * (1 + 0.03 * (shift - 1.5)) for m in multiples]  # apart, to read the bars
            values = [100 * b["accuracy"]["value"] for b in f["budgets"]]
            below = [
                v - 100 * b["accuracy"]["low"] for v, b in zip(values, f["budgets"], strict=True)
            ]
            above = [
                100 * b["accuracy"]["high"] - v for v, b in zip(values, f["budgets"], strict=True)
            ]
            axis.errorbar(xs, values, yerr=[below, above], marker="o", capsize=3, label=strategy)
        first = 100 * result["first"]["accuracy"]["value"]
        axis.axhline(first, color="grey", linestyle=":", label="first draft")
        axis.set_xscale("log", base=2)
        axis.set_xticks(multiples, [f"{m}x" for m in multiples])
        axis.set_title(f"{name} ({result['first']['items']} items)")
        axis.set_xlabel("token budget (x the item's first draft)")
        axis.set_ylabel("accuracy (%)")
        axis.set_ylim(-2, 102)
    axes[0].legend(fontsize=8)
    figure.suptitle(f"{document['model'].get('name')}: {feedback_label(document)}", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return True


def write_files(
    paths: dict[str, Path],
    document: dict[str, Any],
    records: list[dict[str, Any]] | None,
    *,
    final: bool = False,
) -> None:
    """Write every file of the run (the last time, saying loudly if the plot is missing);
    with `records` None, the records file is left as it is (a page rebuilt from it)."""
    paths["json"].parent.mkdir(parents=True, exist_ok=True)
    drew = plot(document, paths["png"])
    if not drew:
        document = {**document, "plot_missing": PLOT_MISSING}
        if final:
            warn_no_plot()
    paths["json"].write_text(json.dumps(document, indent=1))
    paths["md"].write_text(markdown(document, paths["png"].name if drew else None))
    if records is not None:
        paths["records"].write_text("".join(json.dumps(r) + "\n" for r in records))
