"""Rebuild a budget run's page from its records: `python -m benchmarks.quality.rebuild
RUN.records.jsonl [...]`. Calls no model and grades nothing again: every figure (accuracy,
spend per item: tokens, reply tokens and model requests; each strategy against sample at
an equal cap and at matched reply tokens, with the exact McNemar test) is worked out again
from the records by today's `curves.py`, and the page and plot by today's
`budget_page.py`.

The run's description (command, commit, model, feedback, part, bootstrap seed, ...) is
read from the `.json` beside the records, the one the run wrote; with none there, the
page says the records alone were read (no command, commit or model to name). Writes
`<stem>.json`, `.md` and `.png` beside the records (or under `--out`), replacing those of
the run; the records are left as they are. A run still going has records of the
strategies it finished: its page says which were left (from the run's own `.json`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.quality.budget_page import write_files
from benchmarks.quality.curves import set_figures
from benchmarks.quality.intervals import PairedBootstrap

__all__ = ["figures_of", "main", "rebuild"]

_ALONE = {
    "command": "not known: the page was rebuilt from the records alone",
    "model": {"name": "not known (the records name no model)"},
    "machine": {"cores": "-", "python": "-"},
    "max_tokens": None,
    "candidates": "-",
    "resamples": 10_000,
    "seed": 2026,
}


def figures_of(
    records: list[dict[str, Any]], multiples: list[int], *, resamples: int, seed: int
) -> dict[str, Any]:
    """Every set's figures from the run's records, sets and strategies in the run's order."""
    results: dict[str, Any] = {}
    sets: dict[str, tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]] = {}
    for record in records:
        firsts, runs = sets.setdefault(record["set"], ([], {}))
        if record["strategy"] == "first":
            firsts.append(record)
        else:
            runs.setdefault(record["strategy"], []).append(record)
    for name, (firsts, runs) in sets.items():
        by_id = {r["id"]: r for r in firsts}
        for strategy, done in runs.items():
            if [r["id"] for r in done] != [f["id"] for f in firsts]:
                raise SystemExit(
                    f"{name}/{strategy}: its records are not the first drafts' items in order "
                    f"({len(done)} against {len(by_id)}): the records file is not one run's"
                )
        bootstrap = PairedBootstrap(len(firsts), resamples=resamples, seed=seed)
        results[name] = set_figures(firsts, runs, multiples, bootstrap)
    return results


def _multiples(records: list[dict[str, Any]]) -> list[int]:
    for record in records:
        if record.get("budgets"):
            return [int(b["multiple"]) for b in record["budgets"]]
    raise SystemExit("no strategy's records in the file: nothing was run past the first drafts")


def rebuild(path: Path, out: Path | None = None) -> dict[str, Path]:
    """Rebuild the page (json, md, png) of the run whose records are at `path`."""
    from benchmarks.quality.provenance import recorded_commit

    if not path.name.endswith(".records.jsonl"):
        raise SystemExit(f"{path} is no budget run's records: give a <stem>.records.jsonl")
    stem = path.name.removesuffix(".records.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    multiples = _multiples(records)
    beside = path.with_name(f"{stem}.json")
    if beside.is_file():
        head = {k: v for k, v in json.loads(beside.read_text()).items() if k != "results"}
        head.pop("plot_missing", None)
    else:
        first = records[0]
        head = {
            **_ALONE,
            "date": "not known",
            "feedback": first.get("feedback"),
            "strategies": list(dict.fromkeys(r["strategy"] for r in records[1:]))
            if len(records) > 1
            else [],
            "budgets": multiples,
            "note": f"rebuilt from {path.name} alone: no .json of the run beside it",
        }
    head["budgets"] = multiples
    head["rebuilt"] = {
        "records": path.name,
        "command": f"python -m benchmarks.quality.rebuild {path.name}",
        "commit": recorded_commit(),
        "date": datetime.date.today().isoformat(),
    }
    resamples, seed = int(head.get("resamples") or 10_000), int(head.get("seed") or 2026)
    document = {
        **head,
        "results": figures_of(records, multiples, resamples=resamples, seed=seed),
    }
    folder = out or path.parent
    paths = {
        "json": folder / f"{stem}.json",
        "md": folder / f"{stem}.md",
        "png": folder / f"{stem}.png",
        "records": path,
    }
    write_files(paths, document, None, final=True)
    return paths


def main(argv: list[str] | None = None) -> None:
    """Command line: rebuild each run's page, then say where it is."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("records", nargs="+", type=Path, help="<stem>.records.jsonl")
    parser.add_argument("--out", type=Path, help="folder (default: beside the records)")
    args = parser.parse_args(argv)
    for path in args.records:
        if not path.is_file():
            raise SystemExit(f"no records at {path}")
        paths = rebuild(path, args.out)
        print(paths["md"], file=sys.stdout)


if __name__ == "__main__":
    main()
