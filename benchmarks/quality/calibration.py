"""What refines into a right answer? `python -m benchmarks.quality.calibration RECORDS...`

Reads the budget benchmark's records (`budget-*.records.jsonl`, see `spend.py`) and
counts, for every reply that refined a draft, whether it came back verified, by what
its parent was: its graded score h (the lowest score its verifiers gave, else the
critic's; in quarters) and its form (a gamed form the constrained checker fails, such
as a word list with every word, or an honest text). Fresh drafts (a reply to the task
alone) are counted beside them, and rejected replies by kind. The search's prior for
refining a draft (`self_refine.nodes.search.refine_chance`) is set from these figures.

A refine reply is: in a run that searches, a node with a parent; in a refine run, each
step's reply (its candidates too), whose parent is the step before's draft.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.quality.honesty import answer_forms
from self_refine.nodes.search import graded

__all__ = ["Reply", "main", "replies", "table"]

Reply = dict[str, Any]
"""One judged reply: set, strategy, kind ("fresh" or "refine"), parent_h, parent_form,
verified, rejected (the reason, or None)."""


def _form(task: str, draft: dict[str, Any], reference: Any) -> str:
    forms = answer_forms(task, draft.get("draft", ""), reference)
    return forms[0] if forms else "text"


def _drafts(attempt: dict[str, Any]) -> list[dict[str, Any]]:
    picked = {**attempt, "verified": attempt["critique"].get("verified")}
    return [picked, *attempt.get("candidates", [])]


def _reply(record: dict[str, Any], draft: dict[str, Any], parent: dict[str, Any] | None) -> Reply:
    rejected = draft.get("rejected") or {}
    if isinstance(rejected, list):  # an attempt's: the replies asked again before it
        rejected = rejected[-1] if rejected else {}
    rejected = rejected.get("reason")
    return {
        "set": record["set"],
        "strategy": record["strategy"],
        "kind": "fresh" if parent is None else "refine",
        "parent_h": None if parent is None else graded(parent),
        "parent_form": None
        if parent is None
        else _form(record["task"], parent, record.get("grade", record.get("reference"))),
        "verified": bool(draft.get("verified")),
        "rejected": rejected,
    }


def replies(records: Iterable[dict[str, Any]]) -> Iterator[Reply]:
    """Every reply of every run, with its parent's score and form."""
    for record in records:
        attempts = record.get("attempts") or []
        if record.get("strategy") in (None, "first") or not attempts:
            continue
        if any("node" in a for a in attempts):
            nodes = {d["node"]: d for a in attempts for d in _drafts(a) if "node" in d}
            for draft in nodes.values():
                parent = draft.get("parent")
                yield _reply(record, draft, None if parent is None else nodes.get(parent))
            continue
        for index, attempt in enumerate(attempts):
            parent = attempts[index - 1] if index else None
            for draft in _drafts(attempt):
                yield _reply(record, draft, parent)


def _wilson(hits: int, total: int) -> tuple[float, float]:
    if not total:
        return 0.0, 1.0
    z, p = 1.96, hits / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    spread = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return max(0.0, centre - spread), min(1.0, centre + spread)


def table(found: Iterable[Reply]) -> str:
    """A markdown table: verified share of replies by set, strategy, kind, parent h and form."""
    groups: dict[tuple[Any, ...], list[Reply]] = defaultdict(list)
    for reply in found:
        h = reply["parent_h"]
        bucket = None if h is None else round(h * 4) / 4
        key = (reply["set"], reply["strategy"], reply["kind"], bucket, reply["parent_form"])
        groups[key].append(reply)
    lines = [
        "| set | strategy | reply | parent h | parent form | replies | verified | rejected |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(groups, key=lambda k: tuple("" if v is None else str(v) for v in k)):
        group = groups[key]
        hits = sum(r["verified"] for r in group)
        low, high = _wilson(hits, len(group))
        reasons: dict[str, int] = defaultdict(int)
        for r in group:
            if r["rejected"]:
                reasons[r["rejected"]] += 1
        shown = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items())) or "-"
        set_name, strategy, kind, bucket, form = key
        cells = [
            set_name,
            strategy,
            kind,
            "-" if bucket is None else f"{bucket:.2f}",
            form or "-",
            str(len(group)),
            f"{hits} ({hits / len(group):.0%}, 95% {low:.0%}-{high:.0%})",
            shown,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the table of the records files given."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="+", type=Path, help="budget-*.records.jsonl files")
    args = parser.parse_args(argv)
    records = [
        json.loads(line)
        for path in args.records
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    print(table(replies(records)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
