"""A hand audit of the constrained grader: answers of the reported runs drawn at random,
each with the grader's verdict beside a person's. `python -m benchmarks.quality.audit
--draw 100 --seed 2026 --out PAGE.md` reads only; calls no model.

The population: every final answer on the constrained set's reported items (split
`report`) in the committed budget runs of the reported part (`budget-local-*.records.jsonl`
under benchmarks/results, not `-tune-`): the first draft and each strategy's answer at
each budget reading. A reading with no answer is left out (nothing to judge). The same
answer to the same item counts once (exact text), graded with today's grader as
`regrade` grades it (`regrade.verdict`: the concepts check, the sentence checker, an
answer the run marked as taking over feedback wording counts wrong). The draw:
`random.Random(seed).sample` of the distinct answers sorted by item id, then text.

A person's verdicts are read from a JSON file: `{"standard": [lines: what the person
judged by], "notes": [lines], "verdicts": {audit_key: {"verdict": "right" | "wrong", "note": "...",
"answer": "..."}}}`, keyed by `audit_key` (item id and the answer's sha256).
`--todo` prints the drawn answers that file lacks, ready to fill in; `--blind` prints the
same without the grader's verdict (item id, listed words, task, answer), for an auditor who
judges before seeing it. `--exclude FILE` (a verdicts file, may repeat) leaves the answers
it holds out of the population before the draw: a second audit draws from the answers the
first did not judge. `--save-grader FILE`
keeps the grader's verdicts on the drawn answers (with the commit that gave them), and
`--before FILE` shows such a file beside today's: the same draw graded before and after a
change of the grader.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.quality.feedback import Grader
from benchmarks.quality.honesty import answer_forms
from benchmarks.quality.outputs import show_page
from benchmarks.quality.regrade import RESULTS, verdict
from benchmarks.quality.sets import SETS_DIR
from self_refine.critics.verifiers.concepts import missing_concepts

__all__ = [
    "Answer",
    "audit_key",
    "blind_todo",
    "draw",
    "excluding",
    "main",
    "page",
    "population",
    "reported_items",
    "reported_runs",
]

SET = "constrained"
VERDICTS = RESULTS / "audit-constrained-2026-12-07.verdicts.json"


@dataclass(frozen=True)
class Answer:
    """One distinct answer to one item, with where the runs gave it and today's verdict."""

    id: str
    task: str
    concepts: tuple[str, ...]
    answer: str
    right: bool
    why: tuple[str, ...]
    where: tuple[str, ...]

    @property
    def key(self) -> str:
        return audit_key(self.id, self.answer)


def audit_key(item_id: str, answer: str) -> str:
    """The key of an answer in the verdicts file: the item id and the answer's sha256."""
    return f"{item_id}:{hashlib.sha256(answer.encode()).hexdigest()[:12]}"


def reported_runs(results: Path = RESULTS) -> list[Path]:
    """The reported part's committed budget runs (no tuning run)."""
    return sorted(p for p in results.glob("budget-local-*.records.jsonl") if "-tune-" not in p.name)


def reported_items() -> set[str]:
    """The ids of the constrained set's reported items (split `report`)."""
    lines = (SETS_DIR / f"{SET}.jsonl").read_text().splitlines()
    return {i["id"] for i in map(json.loads, filter(str.strip, lines)) if i["split"] == "report"}


def _readings(record: dict[str, Any]) -> list[tuple[str, str | None, bool]]:
    """Each final answer of a record: where it was read, the answer, whether it was worded."""
    if record["strategy"] == "first":
        return [("first", record.get("answer"), False)]
    return [
        (
            f"{record['strategy']} {reading['multiple']}x",
            reading.get("answer"),
            bool(reading.get("feedback_wording")),
        )
        for reading in record.get("budgets") or []
    ]


def _why(record: dict[str, Any], answer: str, grade: dict[str, Any], worded: bool) -> list[str]:
    """What fails the answer: the words it misses, then the forms the grader names."""
    missing = missing_concepts(answer, list(grade["concepts"]))
    said = [f"missing {', '.join(missing)}"] if missing else []
    return said + answer_forms(record["task"], answer, grade, feedback=worded)


def population(paths: list[Path]) -> tuple[list[Answer], int]:
    """The distinct answers of the runs on the reported items, sorted by item and text, and
    how many readings (with an answer) they come from."""
    grader = Grader(SET)
    reported = reported_items()
    found: dict[tuple[str, str], dict[str, Any]] = {}
    readings = 0
    for path in paths:
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        kept = {
            r["task"]: r.get("grade") or r["reference"]
            for r in records
            if r.get("grade") or r.get("reference")
        }
        run = path.name.removesuffix(".records.jsonl").removeprefix("budget-local-")
        for record in records:
            if record.get("set") != SET or record["id"] not in reported:
                continue
            grade = record.get("grade") or record.get("reference") or kept[record["task"]]
            for where, answer, worded in _readings(record):
                if not answer or not answer.strip():
                    continue
                readings += 1
                right = verdict(grader, record, answer, worded, kept)
                mine = found.setdefault(
                    (record["id"], answer),
                    {"record": record, "grade": grade, "right": set(), "why": [], "where": []},
                )
                mine["right"].add(right)
                mine["where"].append(f"{run} {where}")
                if not right:
                    mine["why"] += [w for w in _why(record, answer, grade, worded)]
    answers = []
    for (item_id, answer), mine in sorted(found.items()):
        if len(mine["right"]) > 1:
            raise SystemExit(
                f"{item_id}: the same answer grades both ways across readings ({mine['where']}); "
                "the audit needs one verdict per answer"
            )
        answers.append(
            Answer(
                id=item_id,
                task=mine["record"]["task"],
                concepts=tuple(mine["grade"]["concepts"]),
                answer=answer,
                right=mine["right"].pop(),
                why=tuple(dict.fromkeys(mine["why"])),
                where=tuple(mine["where"]),
            )
        )
    return answers, readings


def draw(answers: list[Answer], n: int, seed: int) -> list[Answer]:
    """`n` of the answers at random (all of them when there are fewer), in drawn order."""
    return random.Random(seed).sample(answers, min(n, len(answers)))


def excluding(answers: list[Answer], judged: dict[str, Any]) -> list[Answer]:
    """The answers an earlier audit did not judge (`judged`: its verdicts, by `audit_key`)."""
    keys = {a.key for a in answers}
    stray = sorted(set(judged) - keys)
    if stray:
        raise SystemExit(
            f"the excluded verdicts name answers the population lacks ({len(stray)}: "
            f"{', '.join(stray[:3])}): pass the verdicts file of an audit of these runs"
        )
    return [a for a in answers if a.key not in judged]


def blind_todo(drawn: list[Answer], verdicts: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The drawn answers still to judge, without the grader's verdict: what the auditor reads."""
    return {
        a.key: {"id": a.id, "concepts": list(a.concepts), "task": a.task, "answer": a.answer}
        | {"verdict": "", "note": ""}
        for a in drawn
        if a.key not in verdicts
    }


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _mine(verdicts: dict[str, Any], answer: Answer) -> dict[str, Any]:
    found = verdicts.get(answer.key)
    if found is None:
        raise SystemExit(
            f"no verdict for {answer.key} ({answer.id}: {answer.answer[:60]!r}): run with "
            "--todo to list the drawn answers the verdicts file lacks"
        )
    if found.get("verdict") not in ("right", "wrong"):
        raise SystemExit(f"{answer.key}: verdict must be 'right' or 'wrong', got {found!r}")
    return dict(found)


def _counts(drawn: list[Answer], verdicts: dict[str, Any], grader: list[bool]) -> list[str]:
    """The grader against the auditor: a table of counts and the agreement."""
    mine = [_mine(verdicts, a)["verdict"] == "right" for a in drawn]
    both = sum(g and m for g, m in zip(grader, mine, strict=True))
    neither = sum(not g and not m for g, m in zip(grader, mine, strict=True))
    passed_wrong = sum(g and not m for g, m in zip(grader, mine, strict=True))
    failed_right = sum(m and not g for g, m in zip(grader, mine, strict=True))
    n = len(drawn)
    return [
        "| | auditor: right | auditor: wrong |",
        "|---|---|---|",
        f"| grader: right | {both} | {passed_wrong} |",
        f"| grader: wrong | {failed_right} | {neither} |",
        "",
        f"**Agreement {both + neither} of {n}; disagreements {n - both - neither}** "
        f"({passed_wrong} passed that the auditor fails, {failed_right} failed that the "
        "auditor passes).",
        "",
    ]


def _said(right: bool, why: Any) -> str:
    return "right" if right else f"wrong ({', '.join(why) or '-'})"


def page(
    drawn: list[Answer],
    verdicts: dict[str, Any],
    *,
    total: int,
    readings: int,
    how: str,
    before: dict[str, Any] | None = None,
    said: list[str] | None = None,
) -> list[str]:
    """The audit as markdown lines: the counts (before a change of the grader too, given its
    saved verdicts), the disagreements, what the auditor `said` (markdown lines), every
    drawn answer."""
    n = len(drawn)
    lines = [
        f"Drawn: {how}. Population: {total} distinct answers from {readings} readings; "
        f"{sum(a.right for a in drawn)} of the {n} drawn grade right today.",
        "",
    ]
    if before:
        was = before["grader"]
        lines += [
            f"**The grader at {before['commit']}** (before the change), same {n} answers:",
            "",
            *_counts(drawn, verdicts, [was[a.key]["right"] for a in drawn]),
            "**Today's grader:**",
            "",
        ]
    lines += _counts(drawn, verdicts, [a.right for a in drawn])
    disagree = [a for a in drawn if (_mine(verdicts, a)["verdict"] == "right") != a.right]
    if disagree:
        lines += ["Disagreements with today's grader:", ""]
        for answer in disagree:
            mine = _mine(verdicts, answer)
            lines.append(
                f"- {answer.id}: {_cell(answer.answer)!r}: grader "
                f"{_said(answer.right, answer.why)}, auditor {mine['verdict']}: "
                f"{mine.get('note', '')}"
            )
        lines.append("")
    lines += [*(said or []), "## Every drawn answer", ""]
    head = "| # | item | words | answer |" + (" grader before |" if before else "")
    lines += [
        head + " grader | auditor | note |",
        "|---|---|---|---|" + ("---|" if before else "") + "---|---|---|",
    ]
    for number, answer in enumerate(drawn, 1):
        mine = _mine(verdicts, answer)
        agree = (mine["verdict"] == "right") == answer.right
        then = ""
        if before:
            was = before["grader"][answer.key]
            then = f" {_said(was['right'], was['why'])} |"
        lines.append(
            f"| {number} | {answer.id} | {', '.join(answer.concepts)} | {_cell(answer.answer)} |"
            f"{then} {_said(answer.right, answer.why)} | {mine['verdict']} | "
            f"{'' if agree else '**DISAGREE** '}{_cell(mine.get('note', ''))} |"
        )
    return lines


def main() -> None:
    """Command line: draw, then print the page (or `--todo`: the verdicts still to give)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draw", type=int, default=100, help="answers to draw (%(default)s)")
    parser.add_argument("--seed", type=int, default=2026, help="%(default)s")
    parser.add_argument("--verdicts", type=Path, default=VERDICTS, help="the auditor's JSON")
    parser.add_argument("--out", type=Path, help="write the page here (markdown)")
    parser.add_argument("--todo", action="store_true", help="print the verdicts still to give")
    parser.add_argument("--save-grader", type=Path, help="keep the grader's verdicts here")
    parser.add_argument("--before", type=Path, help="a --save-grader file to show beside")
    parser.add_argument(
        "--exclude",
        type=Path,
        action="append",
        default=[],
        help="a verdicts file whose answers are left out of the draw (may repeat)",
    )
    parser.add_argument(
        "--blind", action="store_true", help="as --todo, without the grader's verdicts"
    )
    args = parser.parse_args()
    paths = reported_runs()
    answers, readings = population(paths)
    judged = {k: v for f in args.exclude for k, v in json.loads(f.read_text())["verdicts"].items()}
    remaining = excluding(answers, judged)
    drawn = draw(remaining, args.draw, args.seed)
    audit = json.loads(args.verdicts.read_text()) if args.verdicts.is_file() else {}
    verdicts = audit.get("verdicts", {})
    if args.blind:
        print(json.dumps(blind_todo(drawn, verdicts), indent=1, ensure_ascii=False))
        return
    if args.todo:
        todo = {
            a.key: {"answer": a.answer, "concepts": a.concepts, "grader": a.right, "verdict": ""}
            for a in drawn
            if a.key not in verdicts
        }
        print(json.dumps(todo, indent=1))
        return
    from benchmarks.quality.provenance import recorded_commit

    if args.save_grader:
        kept = {a.key: {"right": a.right, "why": list(a.why)} for a in drawn}
        saved = {"commit": recorded_commit(), "grader": kept}
        args.save_grader.write_text(json.dumps(saved, indent=1, ensure_ascii=False) + "\n")
    before = json.loads(args.before.read_text()) if args.before else None
    runs = sorted({where.rsplit(" ", 2)[0] for a in answers for where in a.where})
    excluded = "".join(f" --exclude {f}" for f in args.exclude)
    how = (
        f"`python -m benchmarks.quality.audit --draw {args.draw} --seed {args.seed}{excluded}` "
        f"at commit {recorded_commit()}: `random.Random({args.seed}).sample` of the distinct "
        "(item, answer) pairs sorted by item id then text, from the runs that hold answers to "
        "reported items: " + ", ".join(runs)
    )
    if args.exclude:
        how += (
            f"; less the {len(judged)} answers judged in {', '.join(f.name for f in args.exclude)}"
            f" ({len(remaining)} left, {len(drawn)} drawn)"
        )
    said = []
    for title, field in (("What the auditor judged by", "standard"), ("Notes", "notes")):
        if audit.get(field):
            said += [f"## {title}", ""]
            for line in audit[field]:
                said += [line, ""]
    lines = [
        f"# Hand audit of the constrained grader: {len(drawn)} verdicts drawn from the "
        "reported runs" + (", none an earlier audit judged" if args.exclude else ""),
        "",
        *page(
            drawn,
            verdicts,
            total=len(answers),
            readings=readings,
            how=how,
            before=before,
            said=said,
        ),
    ]
    show_page(lines, args.out)


if __name__ == "__main__":
    main()
