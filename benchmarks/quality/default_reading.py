"""The default strategy against best-of-N, read from a budget run's records:
`python -m benchmarks.quality.default_reading RUN.records.jsonl [--set humaneval]`.

A run whose settings say `strategy="auto"` (the default) takes, per item, the strategy
`DEFAULT_STRATEGY` names for the checks it has: with a verifier that can judge its drafts
(HumanEval: the docstring's examples as asserts), `sample`; with the LLM critic alone
(a problem that shows no runnable example), `refine`. A budget run asks every strategy of
every item, so the default's answer to an item is the answer of the strategy that row
names, at the same budget. This reads it off the records (no model called, nothing graded
again: each reading's `correct` as the run recorded it) and sets it beside `sample`, the
best-of-N of fresh first drafts the run's checks pick from, with the exact McNemar test
per budget, and beside the first draft.

Which row an item falls in is read from its record's run checks: a `verifier` means the
"verifier" row, none the "critic" row (the code profile states no final answer, so the
"answer" row never applies; `settings.call._auto_row` is the library's own rule).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.quality.intervals import compared, mcnemar, p_text, paired_counts

__all__ = ["default_rows", "main", "markdown", "readings"]

ROW_STRATEGY = {"verifier": "sample", "critic": "refine"}
"""The strategy each `DEFAULT_STRATEGY` row a budget run's items can fall in names."""


def _load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def default_rows(records: Sequence[dict[str, Any]], set_name: str) -> dict[str, str]:
    """Each item's `DEFAULT_STRATEGY` row ("verifier" or "critic"), from its run checks."""
    rows: dict[str, str] = {}
    for record in records:
        if record.get("set") != set_name or record.get("strategy") in (None, "first"):
            continue
        checks = record.get("run_checks") or {}
        rows[str(record["id"])] = "verifier" if checks.get("verifier") else "critic"
    return rows


def readings(records: Sequence[dict[str, Any]], set_name: str) -> dict[str, Any]:
    """Per budget multiple: the default's and sample's verdicts and spend, item by item.

    Refuses records that lack a strategy the default needs for some item (a run that
    stopped before it), naming it.
    """
    rows = default_rows(records, set_name)
    by: dict[tuple[str, str], dict[str, Any]] = {}
    first: dict[str, bool] = {}
    for record in records:
        if record.get("set") != set_name:
            continue
        if record.get("strategy") == "first":
            first[str(record["id"])] = bool(record.get("correct_first"))
        else:
            by[(str(record["strategy"]), str(record["id"]))] = record
    ids = sorted(rows)
    needed = {ROW_STRATEGY[rows[i]] for i in ids} | {"sample"}
    have = {strategy for strategy, _ in by}
    if missing := sorted(needed - have):
        raise SystemExit(
            f"the records hold no {', '.join(missing)} run of {set_name}: the default "
            "needs it for some items (was the run stopped before it?)"
        )
    multiples = [int(b["multiple"]) for b in by[("sample", ids[0])]["budgets"]]
    table = []
    for index, multiple in enumerate(multiples):
        chosen = [by[(ROW_STRATEGY[rows[i]], i)]["budgets"][index] for i in ids]
        sampled = [by[("sample", i)]["budgets"][index] for i in ids]
        table.append(
            {
                "multiple": multiple,
                "default": [bool(r["correct"]) for r in chosen],
                "sample": [bool(r["correct"]) for r in sampled],
                "default_output_tokens": _mean(r.get("output_tokens", 0) for r in chosen),
                "sample_output_tokens": _mean(r.get("output_tokens", 0) for r in sampled),
            }
        )
    return {
        "set": set_name,
        "ids": ids,
        "rows": {row: sum(1 for i in ids if rows[i] == row) for row in ROW_STRATEGY},
        "first": [first.get(i, False) for i in ids],
        "budgets": table,
    }


def _mean(values: Any) -> float:
    found = [float(v) for v in values]
    return sum(found) / len(found) if found else 0.0


def markdown(read: dict[str, Any]) -> str:
    """The reading as a page section: a table per budget and the comparison in words."""
    n = len(read["ids"])
    rows = read["rows"]
    lines = [
        f"## The default strategy against best-of-N ({read['set']}, {n} items)",
        "",
        f'`strategy="auto"` samples on the {rows["verifier"]} items whose checks include a '
        f"verifier and refines on the {rows['critic']} judged by the LLM critic alone; "
        "`sample` is best-of-N of fresh first drafts. Each item's default answer is the "
        "answer of the strategy its row names, at the same budget.",
        "",
        "| budget | default | sample | default vs sample (gained / lost, exact McNemar p) | "
        "default vs first draft | reply tokens per item (default / sample) |",
        "|---|---|---|---|---|---|",
    ]
    words = []
    for at in read["budgets"]:
        gained, lost = paired_counts(at["default"], at["sample"])
        up, down = paired_counts(at["default"], read["first"])
        lines.append(
            f"| {at['multiple']}x | {sum(at['default'])}/{n} | {sum(at['sample'])}/{n} | "
            f"{gained} / {lost}, p = {p_text(mcnemar(gained, lost))} | "
            f"{up} / {down}, p = {p_text(mcnemar(up, down))} | "
            f"{at['default_output_tokens']:.0f} / {at['sample_output_tokens']:.0f} |"
        )
        words.append(f"- {at['multiple']}x: " + compared("the default", "sample", gained, lost, n))
    return "\n".join([*lines, "", *words, ""])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", type=Path, help="a budget run's .records.jsonl")
    parser.add_argument("--set", default="humaneval", help="default: humaneval")
    args = parser.parse_args(argv)
    print(markdown(readings(_load(args.records), args.set)))


if __name__ == "__main__":
    main()
