"""The constrained set's reported runs graded by hand: every distinct answer judged by a
person, the runs' figures and paired comparisons read from those verdicts beside the
grader's. `python -m benchmarks.quality.byhand --verdicts FILE [--other FILE ...] --out
PAGE.md` reads only; calls no model.

The constrained grader checks form (the words, the sentence count, a finite verb, no list,
no clause per word), not meaning, and the task asks for natural sentences: a hand audit
finds answers it passes that a reader fails. So the figures it gives are upper bounds;
this page gives the figures a reader gives. The verdicts file (the audit's format, see
`benchmarks.quality.audit`) must judge every distinct answer of the population the audit
draws from (`audit.population`): an answer it lacks stops the page with the keys to
judge (`python -m benchmarks.quality.audit --draw N --blind --verdicts FILE` lists them).
A reading with no answer counts wrong; the hand verdict judges the text alone (the
grader's rule that fails an answer the run marked as taking over feedback wording does
not apply).

`--other FILE`: another reader's verdicts on some of the same answers; the page gives how
often the two agree, with each answer they judge differently.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks.quality.audit import (
    SET,
    audit_key,
    population,
    reported_items,
    reported_runs,
)
from benchmarks.quality.intervals import mcnemar, p_text, paired_counts
from benchmarks.quality.outputs import show_page

__all__ = ["agreement", "by_hand", "main", "page"]


class Unjudged(SystemExit):
    """The verdicts file lacks answers of the population."""


def _verdicts(path: Path) -> dict[str, bool]:
    found = json.loads(path.read_text())["verdicts"]
    bad = [k for k, v in found.items() if v.get("verdict") not in ("right", "wrong")]
    if bad:
        raise SystemExit(f"{path}: verdicts must be 'right' or 'wrong'; not so for {bad[:5]}")
    return {key: mine["verdict"] == "right" for key, mine in found.items()}


def by_hand(
    records: list[dict[str, Any]], hand: dict[str, bool], grader: dict[str, bool]
) -> dict[str, Any]:
    """One run's constrained reported records read by hand and by today's grader (both
    keyed by `audit_key`): `{"first": {"hand": {id: bool}, "grader": ...}, "strategies":
    {name: {multiple: {"hand": ..., "grader": ...}}}}`. A reading with no answer is wrong
    both ways. Raises `KeyError` on an answer `hand` or `grader` lacks."""
    reported = reported_items()
    found: dict[str, Any] = {"first": {"hand": {}, "grader": {}}, "strategies": {}}
    for record in records:
        if record.get("set") != SET or record["id"] not in reported:
            continue
        if record["strategy"] == "first":
            readings = [(found["first"], record.get("answer"))]
        else:
            runs = found["strategies"].setdefault(record["strategy"], {})
            readings = [
                (runs.setdefault(b["multiple"], {"hand": {}, "grader": {}}), b.get("answer"))
                for b in record.get("budgets") or []
            ]
        for at, answer in readings:
            key = audit_key(record["id"], answer) if answer and answer.strip() else None
            at["hand"][record["id"]] = key is not None and hand[key]
            at["grader"][record["id"]] = key is not None and grader[key]
    return found


def _share(verdicts: dict[str, bool]) -> str:
    n = len(verdicts)
    right = sum(verdicts.values())
    return f"{right / n:.0%} ({right}/{n})" if n else "-"


def _paired(mine: dict[str, bool], other: dict[str, bool]) -> str:
    ids = sorted(other)
    gained, lost = paired_counts([mine[i] for i in ids], [other[i] for i in ids])
    return f"{gained}/{lost}, p = {p_text(mcnemar(gained, lost))}"


def page(name: str, found: dict[str, Any]) -> list[str]:
    """One run's figures by hand and by the grader, as markdown lines."""
    first = found["first"]
    lines = [
        f"### {name}",
        "",
        f"First draft: by hand {_share(first['hand'])}, by today's grader "
        f"{_share(first['grader'])}.",
        "",
        "| strategy | budget | by hand | grader | by hand vs first (gained/lost, "
        "McNemar p) | by hand vs sample |",
        "|---|---|---|---|---|---|",
    ]
    sample = found["strategies"].get("sample", {})
    for strategy, runs in found["strategies"].items():
        for multiple, at in sorted(runs.items()):
            against = (
                _paired(at["hand"], sample[multiple]["hand"])
                if strategy != "sample" and multiple in sample
                else "-"
            )
            lines.append(
                f"| {strategy} | {multiple}x | {_share(at['hand'])} | {_share(at['grader'])} | "
                f"{_paired(at['hand'], first['hand'])} | {against} |"
            )
    return [*lines, ""]


def agreement(
    mine: dict[str, bool],
    other: dict[str, bool],
    texts: dict[str, str],
    names: tuple[str, str] = ("this page's reader", "the other reader"),
) -> list[str]:
    """Two readers (or a reader and the grader) on the answers both judged: the 2x2 counts
    and each answer they judge differently."""
    both = sorted(set(mine) & set(other))
    counts = {
        (a, b): sum(mine[k] is a and other[k] is b for k in both)
        for a in (True, False)
        for b in (True, False)
    }
    lines = [
        f"{len(both)} answers judged by both; agree on "
        f"{counts[(True, True)] + counts[(False, False)]}.",
        "",
        f"| | {names[1]}: right | {names[1]}: wrong |",
        "|---|---|---|",
        f"| {names[0]}: right | {counts[(True, True)]} | {counts[(True, False)]} |",
        f"| {names[0]}: wrong | {counts[(False, True)]} | {counts[(False, False)]} |",
        "",
    ]
    for key in both:
        if mine[key] != other[key]:
            lines.append(
                f"- {key.split(':')[0]}: {texts.get(key, '')!r}: {names[0]} "
                f"{'right' if mine[key] else 'wrong'}, {names[1]} "
                f"{'right' if other[key] else 'wrong'}"
            )
    return [*lines, ""]


def main() -> None:
    """Command line: check the verdicts cover the population, print (or write) the page."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verdicts", type=Path, required=True, help="the reader's JSON")
    parser.add_argument(
        "--other", type=Path, action="append", default=[], help="another reader's JSON"
    )
    parser.add_argument("--out", type=Path, help="write the page here (markdown)")
    args = parser.parse_args()
    hand = _verdicts(args.verdicts)
    paths = reported_runs()
    answers, count = population(paths)
    missing = [a.key for a in answers if a.key not in hand]
    if missing:
        raise Unjudged(
            f"{args.verdicts} judges {len(answers) - len(missing)} of the {len(answers)} "
            f"answers; judge these first: {', '.join(missing[:20])}"
            + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        )
    grader = {a.key: a.right for a in answers}
    texts = {a.key: " ".join(a.answer.split()) for a in answers}
    from benchmarks.quality.provenance import recorded_commit

    lines = [
        "# The constrained set's reported runs, graded by hand",
        "",
        f"`python -m benchmarks.quality.byhand --verdicts {args.verdicts.name}"
        + "".join(f" --other {o.name}" for o in args.other)
        + f"` at commit {recorded_commit()}: {len(answers)} distinct answers from {count} "
        "readings, each judged by hand; no model called, no pick replayed.",
        "",
        f"By the grader, {sum(grader.values())} of the {len(answers)} distinct answers are "
        f"right; by hand, {sum(hand[k] for k in grader)}. The grader against the reader:",
        "",
        *agreement(hand, grader, texts, ("the reader", "the grader")),
    ]
    for other in args.other:
        lines += [f"## Against another reader: {other.name}", ""]
        lines += agreement(hand, _verdicts(other), texts)
    lines += ["## The runs", ""]
    for path in paths:
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        found = by_hand(records, hand, grader)
        if found["first"]["hand"]:
            lines += page(path.name.removesuffix(".records.jsonl"), found)
    show_page(lines, args.out)


if __name__ == "__main__":
    main()
