"""Run the budget benchmark on a reported part, on the ledger:
`python -m benchmarks.quality.reported --why "REASON" -- [spend.py options]`.

The reported part is run to report, never to choose (constants, defaults and forms are
chosen on the tuning part, `--part tune`). This command is the one way a reported run is
made: it refuses a tree with uncommitted changes (what ran must be a commit others can
check out), refuses `--part tune`, and appends to `LEDGER` one line when the run starts
and one when it ends: the date (UTC), the full commit, the command, the reason given
(`--why`, required) and, at the end, the files written. The run's files record the same
commit and point at the ledger.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.quality.provenance import ROOT, commit_of, tree_changes
from benchmarks.quality.run import RESULTS

__all__ = ["LEDGER", "append", "main"]

LEDGER = RESULTS / "ledger.jsonl"
"""Every reported run, one JSON object a line, appended to only."""


def append(entry: dict[str, Any], ledger: Path = LEDGER) -> None:
    """Add one line to the ledger (created when missing); never rewrites a line."""
    ledger.parent.mkdir(parents=True, exist_ok=True)
    with ledger.open("a", encoding="utf-8") as sink:
        sink.write(json.dumps(entry, sort_keys=True) + "\n")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def main(argv: list[str] | None = None, chat_model: Any = None, cwd: Path = ROOT) -> dict[str, Any]:
    """Check the tree, run spend.py's command line on the reported part, keep the ledger.

    Returns the ledger's closing entry. `chat_model` (a scripted model) and `cwd` (another
    checkout) are for tests.
    """
    from benchmarks.quality.document import shown_arguments
    from benchmarks.quality.spend import arguments, run

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--why", required=True, help="why this reported run is made")
    parser.add_argument("--ledger", type=Path, default=LEDGER, help="default: %(default)s")
    parser.add_argument("spend", nargs=argparse.REMAINDER, help="spend.py's options, after --")
    args = parser.parse_args(argv)
    given = [a for a in args.spend if a != "--"]
    if not args.why.strip():
        raise SystemExit("--why must say why this reported run is made")
    options = arguments(given)
    if options.part != "report":
        raise SystemExit(
            "the ledger is for the reported part: run the tuning part with "
            "python -m benchmarks.quality.spend --part tune"
        )
    changed = tree_changes(cwd)
    if changed:
        shown = ", ".join(line[3:] for line in changed[:5]) + (" ..." if len(changed) > 5 else "")
        raise SystemExit(
            f"the tree has uncommitted changes ({shown}): commit them (or stash them) first, "
            "so the reported run names a commit that holds what ran"
        )
    entry = {
        "date": _now(),
        "commit": commit_of(cwd),
        "command": " ".join(
            ["python -m benchmarks.quality.reported", "--why", json.dumps(args.why), "--"]
            + shown_arguments(given)
        ),
        "why": args.why,
    }
    append({**entry, "event": "started"}, args.ledger)
    options.ledger = {"file": args.ledger.name, "started": entry["date"]}
    options.commit = entry["commit"]
    _, _, paths = asyncio.run(run(options, chat_model))
    written = sorted(str(p.name) for p in paths.values() if p.exists())
    closing = {**entry, "event": "finished", "finished": _now(), "files": written}
    append(closing, args.ledger)
    for name in written:
        print(name)
    return closing


if __name__ == "__main__":
    main(sys.argv[1:])
