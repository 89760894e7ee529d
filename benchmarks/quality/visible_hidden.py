"""Do the code set's hidden tests catch what its examples let through?
`python -m benchmarks.quality.visible_hidden`.

Each code item's first draft (the graph's greedy generate step, as the budget benchmark
makes it, answering from the same reply cache) is judged twice: by the example asserts
its task shows (what a run may check) and by every test (the grader). Prints, per part
of the set, how many drafts pass the examples and how many of those the hidden tests
still fail: the share a run checking only the examples cannot see. With `--out`, writes
every item's two verdicts as JSON there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.quality.document import add_model_options
from benchmarks.quality.reply_cache import DEFAULT_FOLDER
from benchmarks.quality.sets import PARTS, PROFILE

__all__ = ["main", "verdicts"]


async def verdicts(model: Any, parts: list[str], n: int | None) -> list[dict[str, Any]]:
    """Each item's first draft with its verdict on the examples and on every test."""
    from benchmarks.quality.run import first_drafts, load_items
    from self_refine.batch.judge import VerifierJudge

    examples = VerifierJudge(["python_tests"])
    rows = []
    for part in parts:
        items = load_items("code", n, part)
        for item, first in zip(items, await first_drafts(model, "code", items), strict=True):
            shown = examples(item["task"], first["answer"], item["reference"])
            rows.append(
                {
                    "id": item["id"],
                    "part": part,
                    "examples_pass": shown is True,
                    "all_pass": first["correct_first"] is True,
                    "draft": first["answer"],
                }
            )
            print(f"{item['id']}: examples {shown}, all {first['correct_first']}", file=sys.stderr)
    return rows


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """One line per part: drafts, passing the examples, and of those failing hidden tests."""
    lines = []
    for part in dict.fromkeys(row["part"] for row in rows):
        mine = [row for row in rows if row["part"] == part]
        shown = [row for row in mine if row["examples_pass"]]
        caught = [row for row in shown if not row["all_pass"]]
        share = f"{100 * len(caught) / len(shown):.0f}%" if shown else "-"
        lines.append(
            f"{part}: {len(mine)} first drafts, {len(shown)} pass the examples the task shows, "
            f"{len(caught)} of those fail hidden tests ({share}); "
            f"{sum(row['all_pass'] for row in mine)} pass every test"
        )
    return lines


def main() -> None:
    """Command line: judge the first drafts, print the summary."""
    from benchmarks.quality.spend import _model, capped_roles

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_model_options(parser)
    parser.add_argument("--parts", default=",".join(PARTS), help="default: %(default)s")
    parser.add_argument("--n", type=int, help="first N items per part (default: all)")
    parser.add_argument("--max-tokens", type=int, help="per reply (default: the profile's cap)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_FOLDER, help="reply cache folder")
    parser.add_argument("--no-cache", action="store_true", help="ask the model every request")
    parser.add_argument("--out", type=Path, help="write every item's verdicts here (JSON)")
    args = parser.parse_args()
    parts = [part for part in args.parts.split(",") if part]
    if not parts or any(part not in PARTS for part in parts):
        raise SystemExit(f"--parts takes {', '.join(PARTS)}, got {args.parts!r}")
    model, _, _ = _model(args, None)
    draft_model, _ = capped_roles(model, PROFILE["code"], args.max_tokens)
    rows = asyncio.run(verdicts(draft_model, parts, args.n))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    print("\n".join(summary(rows)))


if __name__ == "__main__":
    main()
