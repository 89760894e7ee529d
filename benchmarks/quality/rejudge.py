"""Judge a finished run's answers again with the checkers as they are now.

`python -m benchmarks.quality.rejudge RESULTS.json ...` reads a quality run
(`quality-*.json`, written by `run.py`) or a budget run (`budget-*.json`, written by
`spend.py`) with its `.records.jsonl`, judges every draft and answer of the sets named
(`--sets`, default the constrained set, whose checker's rule changed) with the set's
grader (`feedback.Grader`: its checker on the item's grading data) as it is now, and
writes the run's files again from its records, with a line on the page saying that it
was re-judged, at which commit, and which answers fell.

The verdicts only fall: an answer the checker now fails counts wrong, one it failed
before stays wrong. The run's picks are not replayed: where a run stopped at a draft
the checker now fails, today's code would have gone on (or picked another candidate),
so a re-judged figure is what the run's own answers are worth now, not a new run.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.quality.feedback import Grader
from benchmarks.quality.honesty import answer_forms, rejudge
from benchmarks.quality.sets import SETS_DIR

__all__ = ["rejudge_budget_run", "rejudge_quality_run"]

Verdict = Callable[[str], bool]
"""Whether a draft still passes the set's checker (True when it cannot judge it)."""


def _verdict(name: str, task: str, reference: Any) -> Verdict:
    grader = Grader(name)

    def passes(draft: str | None) -> bool:
        item = {"task": task, "grade": reference}
        return draft is not None and grader(item, draft) is not False

    return passes


def _items(name: str) -> dict[str, dict[str, Any]]:
    lines = (SETS_DIR / f"{name}.jsonl").read_text().splitlines()
    return {item["id"]: item for item in map(json.loads, filter(str.strip, lines))}


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _fall(holder: dict[str, Any], key: str, passes: bool) -> bool:
    """Set `holder[key]` False when it was True and the draft no longer passes."""
    if holder.get(key) and not passes:
        holder[key] = False
        return True
    return False


def _quality_record(record: dict[str, Any], item: dict[str, Any], name: str) -> bool:
    """Judge one record of a quality run again, in place; True when a verdict fell."""
    passes = _verdict(name, item["task"], item["grade"])
    fell = False
    for attempt in record.get("attempts") or []:
        fell |= _fall(attempt, "correct", passes(attempt.get("draft")))
    fell |= _fall(record, "correct_first", passes(record.get("first")))
    fell |= _fall(record, "correct_final", passes(record.get("answer")))
    judged = any("correct" in attempt for attempt in record.get("attempts") or [])
    if judged:  # a refining or best-of-N record: its steps' picks, as `run.py` reads them
        record.update(rejudge(record))
    elif "correct_at" in record:  # a first draft alone
        record["correct_at"] = [bool(record.get("correct_final", record.get("correct_first")))]
    worded = bool(record.get("feedback_wording_final"))
    record["forms"] = answer_forms(
        item["task"], str(record.get("answer", "")), item["reference"], worded
    )
    return fell


def rejudge_quality_run(path: Path, sets: list[str]) -> list[str]:
    """Re-judge a quality run's files in place; the ids (set/condition/id) whose verdict fell."""
    from benchmarks.quality.document import examples_of
    from benchmarks.quality.figures import condition_figures
    from benchmarks.quality.report import write_results

    document = json.loads(path.read_text())
    stem = path.name.removesuffix(".json")
    lines = _records(path.with_name(f"{stem}.records.jsonl"))
    records: dict[str, dict[str, list[dict[str, Any]]]] = {}
    fell = []
    for line in lines:
        name, condition = line.pop("set"), line.pop("condition")
        records.setdefault(name, {}).setdefault(condition, []).append(line)
        if name in sets and _quality_record(line, _items(name)[line["id"]], name):
            fell.append(f"{name}/{condition}/{line['id']}")
    for name in sets:
        runs = records.get(name) or {}
        for condition, done in runs.items():
            old = document["results"][name][condition]
            once = condition in ("first", "bestofn")
            n = old["items"]
            figures = condition_figures(
                done,
                0 if once else document["k"],
                old["seconds_per_item"] * n,
                round(old["calls_per_item"] * n),
                written_from=0 if once else 1,
            )
            if "n" in old:
                figures["n"] = old["n"]
            document["results"][name][condition] = figures
        document["examples"][name] = examples_of(runs)
    latest = path.parent / "quality-latest.md"
    was_latest = latest.is_file() and latest.read_text() == path.with_suffix(".md").read_text()
    written = write_results(document, path.parent, records, stem=stem, latest=was_latest)
    _note([p for p in written if p.suffix == ".md"], "- judged by", fell)
    return fell


def rejudge_budget_run(path: Path, sets: list[str]) -> list[str]:
    """Re-judge a budget run's files in place; the ids (set/strategy/id) whose verdict fell."""
    from benchmarks.quality.budget_page import write_files
    from benchmarks.quality.curves import differences, first_figures, strategy_figures
    from benchmarks.quality.intervals import PairedBootstrap

    document = json.loads(path.read_text())
    stem = path.name.removesuffix(".json")
    paths = {
        kind: path.with_name(stem + suffix)
        for kind, suffix in {"json": ".json", "md": ".md", "png": ".png"}.items()
    }
    paths["records"] = path.with_name(f"{stem}.records.jsonl")
    records = _records(paths["records"])
    fell = []
    for record in records:
        name = record["set"]
        if name not in sets:
            continue
        # a budget record keeps what graded it (`grade`; `reference` in records before the split)
        reference = (
            record.get("grade") or record.get("reference") or _items(name)[record["id"]]["grade"]
        )
        passes = _verdict(name, record["task"], reference)
        fallen = _fall(record, "correct_first", passes(record.get("answer")))
        for attempt in record.get("attempts") or []:
            _fall(attempt, "correct", passes(attempt.get("draft")))
        for reading in record.get("budgets") or []:
            answer = reading.get("answer")
            fallen |= _fall(reading, "correct", passes(answer))
            if answer is not None:
                worded = bool(reading.get("feedback_wording"))
                reading["forms"] = answer_forms(record["task"], answer, reference, worded)
        if fallen:
            fell.append(f"{name}/{record['strategy']}/{record['id']}")
    for name in sets:
        if name not in document["results"]:
            continue
        firsts = [r for r in records if r["set"] == name and r["strategy"] == "first"]
        runs: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            if record["set"] == name and record["strategy"] != "first":
                runs.setdefault(record["strategy"], []).append(record)
        result = document["results"][name]
        result["first"] = {**result["first"], **first_figures(firsts)}
        first_right = [bool(f.get("correct_first")) for f in firsts]
        for strategy, done in runs.items():
            result["strategies"][strategy] = strategy_figures(
                done, first_right, document["budgets"]
            )
        bootstrap = PairedBootstrap(
            len(firsts), resamples=document["resamples"], seed=document["seed"]
        )
        result["differences"] = differences(runs, document["budgets"], bootstrap)
    document.pop("plot_missing", None)
    write_files(paths, document, records, final=True)
    _note([paths["md"]], "- judged by", fell)
    return fell


def _note(pages: list[Path], after: str, fell: list[str]) -> None:
    """Say on each page, under its line on judging, that the run was judged again."""
    from benchmarks.quality.provenance import recorded_commit

    said = ", ".join(fell) if fell else "none"
    line = (
        f"- **re-judged** at commit {recorded_commit()} with the checker of that commit "
        "(`python -m benchmarks.quality.rejudge`): the answers it now fails count wrong, "
        f"picks not replayed; verdicts that fell: {said}"
    )
    for page in pages:
        lines = page.read_text().splitlines()
        lines = [old for old in lines if not old.startswith("- **re-judged**")]
        at = next((i for i, old in enumerate(lines) if old.startswith(after)), 1) + 1
        page.write_text("\n".join([*lines[:at], line, *lines[at:]]) + "\n")


def main() -> None:
    """Command line: re-judge each results file given, saying which verdicts fell."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="a quality-*.json or budget-*.json")
    parser.add_argument(
        "--sets", default="constrained", help="comma-separated sets to judge (constrained)"
    )
    args = parser.parse_args()
    sets = [name.strip() for name in args.sets.split(",") if name.strip()]
    for path in args.results:
        budget = "strategies" in json.loads(path.read_text())
        fell = (rejudge_budget_run if budget else rejudge_quality_run)(path, sets)
        print(f"{path.name}: {len(fell)} verdict(s) fell: {', '.join(fell) or 'none'}")


if __name__ == "__main__":
    main()
