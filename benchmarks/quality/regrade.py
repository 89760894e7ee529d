"""Grade a budget run's answers again with today's grader, and say what changed:
`python -m benchmarks.quality.regrade [RECORDS.jsonl ...]` (default: every budget run
under benchmarks/results). Reads only; calls no model; writes nothing unless `--out`.

Per run, set and strategy: accuracy at each budget as recorded and as today's grader
(`feedback.Grader`) gives it, with every answer whose verdict moved (the forms that
failed it), and each strategy against the first draft at each budget: items gained /
lost and the exact McNemar p, as recorded and now. The picks are not replayed: an answer
is what the run answered then, judged now.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks.quality.feedback import Grader
from benchmarks.quality.honesty import answer_forms
from benchmarks.quality.intervals import mcnemar, paired_counts
from benchmarks.quality.outputs import show_page
from benchmarks.quality.sets import SETS_DIR

__all__ = ["Ungraded", "main", "regrade", "verdict"]

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _items(name: str) -> dict[str, dict[str, Any]]:
    path = SETS_DIR / f"{name}.jsonl"
    if not path.is_file():
        return {}
    lines = path.read_text().splitlines()
    return {item["id"]: item for item in map(json.loads, filter(str.strip, lines))}


def _grade(record: dict[str, Any], kept: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """What grades the record: its `grade`, else (a record from before the split) its
    `reference`, else the grade another record of the run keeps for the same task (a first
    draft's record keeps none), else the set's item of that id if it is still that task."""
    found = record.get("grade") or record.get("reference")
    if found:
        return dict(found)
    if kept and record["task"] in kept:
        return dict(kept[record["task"]])
    item = _items(record["set"]).get(record["id"], {})
    return dict(item.get("grade") or {}) if item.get("task") == record["task"] else {}


class Ungraded(Exception):
    """A record whose task no grading data of the run or the set is for."""


def verdict(
    grader: Grader,
    record: dict[str, Any],
    answer: str | None,
    worded: bool,
    kept: dict[str, dict[str, Any]],
) -> bool:
    """Today's verdict on one answer of `record` (a reading of it, `worded` when the run
    marked it as taking over feedback wording); `kept`: the run's grades by task."""
    grade = _grade(record, kept)
    if not grade:
        raise Ungraded(record["id"])
    if not answer or not answer.strip():
        return False
    item = {"task": record["task"], "grade": grade}
    return grader(item, answer) is True and not (worded and grader.counts_feedback_wording)


def regrade(records: list[dict[str, Any]], sets: list[str]) -> dict[str, Any]:
    """Every set's first drafts and strategies, as recorded (`old`) and graded now (`new`),
    per budget; with the answers whose verdict moved."""
    graders = {name: Grader(name) for name in sets}
    kept = {
        r["task"]: r.get("grade") or r["reference"]
        for r in records
        if r.get("grade") or r.get("reference")
    }
    found: dict[str, Any] = {}
    for record in records:
        name = record.get("set")
        if name not in graders:
            continue
        mine = found.setdefault(name, {"first": {"old": {}, "new": {}}, "strategies": {}})
        grader = graders[name]
        try:
            _grade_record(mine, record, grader, kept)
        except Ungraded:
            mine.setdefault("ungraded", []).append(f"{record['strategy']}/{record['id']}")
    return found


def _grade_record(
    mine: dict[str, Any],
    record: dict[str, Any],
    grader: Grader,
    kept: dict[str, dict[str, Any]],
) -> None:
    """One record's verdicts, as recorded and now, into `mine`."""
    if record["strategy"] == "first":
        answer = record.get("answer")
        was = bool(record.get("correct_first"))
        new = verdict(grader, record, answer, False, kept)
        mine["first"]["old"][record["id"]] = was
        mine["first"]["new"][record["id"]] = new
        _moved(mine, record, "first", 1, answer, was, new, kept)
        return
    runs = mine["strategies"].setdefault(record["strategy"], {})
    for reading in record.get("budgets") or []:
        answer = reading.get("answer")
        worded = bool(reading.get("feedback_wording"))
        new = verdict(grader, record, answer, worded, kept)
        at = runs.setdefault(reading["multiple"], {"old": {}, "new": {}})
        was = bool(reading.get("correct"))
        at["old"][record["id"]] = was
        at["new"][record["id"]] = new
        _moved(mine, record, record["strategy"], reading["multiple"], answer, was, new, kept)


def _moved(
    mine: dict[str, Any],
    record: dict[str, Any],
    strategy: str,
    multiple: int,
    answer: str | None,
    old: bool,
    new: bool,
    kept: dict[str, dict[str, Any]],
) -> None:
    if old == new:
        return
    forms = answer_forms(record["task"], answer or "", _grade(record, kept))
    mine.setdefault("moved", []).append(
        {
            "id": record["id"],
            "strategy": strategy,
            "multiple": multiple,
            "was": old,
            "now": new,
            "forms": forms,
            "answer": answer,
        }
    )


def _share(verdicts: dict[str, bool]) -> str:
    n = len(verdicts)
    return f"{100 * sum(verdicts.values()) / n:.0f}% ({sum(verdicts.values())}/{n})" if n else "-"


def _against_first(first: dict[str, bool], mine: dict[str, bool]) -> str:
    ids = [i for i in mine if i in first]
    gained, lost = paired_counts([mine[i] for i in ids], [first[i] for i in ids])
    p = mcnemar(gained, lost)
    return f"{gained}/{lost}, p = {p:.3f}" if p >= 0.001 else f"{gained}/{lost}, p = {p:.1e}"


def page(name: str, found: dict[str, Any]) -> list[str]:
    """The run's figures before and after, as markdown lines."""
    lines = [f"### {name}", ""]
    for set_name, mine in found.items():
        first = mine["first"]
        lines += [
            f"**{set_name}**: first draft {_share(first['old'])} -> {_share(first['new'])}",
            "",
            "| strategy | budget | accuracy recorded | now | vs first recorded (gained/lost, "
            "McNemar p) | now |",
            "|---|---|---|---|---|---|",
        ]
        for strategy, runs in mine["strategies"].items():
            for multiple, at in sorted(runs.items()):
                lines.append(
                    f"| {strategy} | {multiple}x | {_share(at['old'])} | {_share(at['new'])} | "
                    f"{_against_first(first['old'], at['old'])} | "
                    f"{_against_first(first['new'], at['new'])} |"
                )
        if mine.get("ungraded"):
            lines += [
                "",
                f"Not graded (no grading data for the task): {', '.join(mine['ungraded'])}",
            ]
        moved = mine.get("moved") or []
        if moved:
            lines += ["", "Verdicts that moved:", ""]
            seen = set()
            for m in moved:
                said = (m["id"], m["answer"], m["was"], m["now"])
                if said in seen:
                    continue
                seen.add(said)
                where = [
                    f"{x['strategy']} {x['multiple']}x"
                    for x in moved
                    if (x["id"], x["answer"]) == (m["id"], m["answer"])
                ]
                text = " ".join(str(m["answer"]).split())
                lines.append(
                    f"- {m['id']} ({', '.join(where)}): {'right' if m['was'] else 'wrong'} -> "
                    f"{'right' if m['now'] else 'wrong'} [{', '.join(m['forms']) or '-'}]: "
                    f"{text[:200]!r}"
                )
        lines.append("")
    return lines


def main() -> None:
    """Command line: regrade each run, print (or write) the page."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="*", type=Path, help="budget-*.records.jsonl")
    parser.add_argument("--sets", default="constrained,arithmetic,code", help="%(default)s")
    parser.add_argument("--out", type=Path, help="write the page here (markdown)")
    args = parser.parse_args()
    paths = args.records or sorted(RESULTS.glob("budget-*.records.jsonl"))
    sets = [name.strip() for name in args.sets.split(",") if name.strip()]
    from benchmarks.quality.provenance import recorded_commit

    lines = [
        "# Budget runs graded again with today's grader",
        "",
        f"`python -m benchmarks.quality.regrade --sets {args.sets}` at commit "
        f"{recorded_commit()}: each run's answers as it gave them, judged by the grader of "
        "that commit (no model called, no pick replayed).",
        "",
    ]
    for path in paths:
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        lines += page(path.name.removesuffix(".records.jsonl"), regrade(records, sets))
    show_page(lines, args.out)


if __name__ == "__main__":
    main()
