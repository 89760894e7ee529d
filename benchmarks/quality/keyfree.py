"""Arithmetic with no answer key in the run: first draft, vote, program check, critic loop.

Runs the tuning items of the arithmetic set through the public API (`refine()`) in four
settings a user can switch on, and grades each answer with the set's grader on the item's
`grade` afterwards (the key only grades):

- `first`: the first draft alone (the vote run's first sample, node 0);
- `vote`: self-consistency, 4 samples of the math profile, `select="vote"`, no critic
  (`critics="none"`): no draft is critiqued, so every token goes to the samples;
- `program`: the `math_program` profile with the `program` verifier: samples until a
  draft's own program prints its stated answer (at most 4), else the vote of the 4;
- `critic`: the paper's loop, math profile, the LLM critic, one refine step.

Usage: python -m benchmarks.quality.keyfree run OUT.jsonl [--items 0-19] [--minutes 33]
           [--settings vote,program,critic]
       python -m benchmarks.quality.keyfree summary OUT.jsonl [--settings ...]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from benchmarks.quality.feedback import Grader
from benchmarks.quality.intervals import wilson
from self_refine import refine
from self_refine.critics.verifiers.program import without_program

SET = Path(__file__).parent / "sets" / "arithmetic.jsonl"
SETTINGS = ("first", "vote", "program", "critic")
_GRADER = Grader("arithmetic")


_RUNS: dict[str, dict[str, Any]] = {
    "vote": {
        "profile": "math",
        "strategy": "sample",
        "critics": "none",
        "select": "vote",
        "max_iterations": 3,
    },
    "program": {
        "profile": "math_program",
        "strategy": "sample",
        "critics": ["program"],
        "select": "vote",
        "max_iterations": 3,
    },
    "critic": {"profile": "math", "critics": ["llm"], "max_iterations": 1},
}


def _items(spec: str) -> list[dict[str, Any]]:
    """The set's lines `low-high`, refused when any is not a tuning item (this script
    compares settings: the reported part is run only to report)."""
    low, high = (int(n) for n in spec.split("-"))
    lines = SET.read_text().splitlines()
    items = [json.loads(line) for line in lines[low : high + 1]]
    reported = [item["id"] for item in items if item["split"] != "tune"]
    if reported:
        raise SystemExit(
            f"--items {spec} holds reported items ({', '.join(reported)}): choose lines of "
            "the tuning part (0-29)"
        )
    return items


def _right(item: dict[str, Any], answer: str) -> bool:
    """Graded by the key (the item's `grade`; its run-time `reference` holds none), on the
    answer a reader reads: outside the draft's program."""
    return _GRADER(item, without_program(answer)) is True


def _run(out: Path, items: list[dict[str, Any]], minutes: float, settings: list[str]) -> None:
    done = set()
    if out.exists():
        done = {(r["id"], r["setting"]) for r in map(json.loads, out.read_text().splitlines())}
    stop_at = time.monotonic() + minutes * 60
    with out.open("a") as sink:
        for item in items:
            for setting in settings:
                options = _RUNS[setting]
                if (item["id"], setting) in done:
                    continue
                if time.monotonic() > stop_at:
                    return
                began = time.monotonic()
                result = refine(item["task"], model="local", **options)
                attempts = result["attempts"]
                records: list[dict[str, Any]] = [
                    {
                        "setting": setting,
                        "answer": result["answer"],
                        "tokens": result["usage"]["total_tokens"],
                        "drafts": sum(1 + len(a.get("candidates", [])) for a in attempts),
                        "stop_reason": result["stop_reason"],
                    }
                ]
                if setting == "vote":
                    first = attempts[0]
                    records.append(
                        {
                            "setting": "first",
                            "answer": first["draft"],
                            "tokens": first["usage"]["total_tokens"],
                            "drafts": 1,
                            "stop_reason": None,
                        }
                    )
                for record in records:
                    record.update(
                        id=item["id"],
                        task=item["task"],
                        right=_right(item, record["answer"]),
                        seconds=round(time.monotonic() - began, 1),
                    )
                    sink.write(json.dumps(record) + "\n")
                sink.flush()


def _summary(out: Path, settings: list[str]) -> None:
    """Each setting's accuracy on the items every shown setting finished, every answer
    graded again by today's grader on its item's `grade` (a verdict the run recorded
    counts for nothing; a record of a task the set no longer holds is refused)."""
    items = {item["id"]: item for item in map(json.loads, SET.read_text().splitlines())}
    records = [json.loads(line) for line in out.read_text().splitlines()]
    for record in records:
        item = items[record["id"]]
        if record.get("task", item["task"]) != item["task"]:
            raise SystemExit(
                f"{record['id']} of {out} was run on another task than the set's item of that "
                "id: the set changed since, so its grade does not grade this answer"
            )
        record["right"] = _right(item, record["answer"])
    shown = [s for s in SETTINGS if s in settings or (s == "first" and "vote" in settings)]
    complete = {
        i
        for i in {r["id"] for r in records}
        if set(shown) <= {r["setting"] for r in records if r["id"] == i}
    }
    print(f"{len(complete)} items with every setting shown: {', '.join(sorted(complete))}")
    print(f"{'setting':<8} {'right':>6} {'acc':>5} {'95% Wilson':>13} {'tokens/item':>11}")
    for setting in shown:
        rows = [r for r in records if r["setting"] == setting and r["id"] in complete]
        right = sum(r["right"] for r in rows)
        share = wilson(right, len(rows))
        tokens = sum(r["tokens"] for r in rows) / max(1, len(rows))
        print(
            f"{setting:<8} {right:>3}/{len(rows):<2} {share.value:>5.0%} "
            f"[{share.low:>4.0%}, {share.high:>4.0%}] {tokens:>11.0f}"
        )


def main() -> None:
    """Run the settings, or print the summary of a run's records."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("run", "summary"))
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--items", default="0-19", help="line range of the set, tuning items only (0-29)"
    )
    parser.add_argument("--minutes", type=float, default=33.0, help="start nothing after this")
    parser.add_argument(
        "--settings",
        default="vote,program,critic",
        help="runs to make for each item, in order (vote also gives first)",
    )
    args = parser.parse_args()
    settings = [name for name in args.settings.split(",") if name]
    unknown = [name for name in settings if name not in _RUNS]
    if unknown:
        parser.error(f"unknown settings {unknown}; choose from {', '.join(_RUNS)}")
    if args.command == "run":
        _run(args.out, _items(args.items), args.minutes, settings)
    _summary(args.out, settings)


if __name__ == "__main__":
    main()
