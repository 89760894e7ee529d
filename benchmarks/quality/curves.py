"""The budget benchmark's figures, from its item records (pure: tested alone).

An item record of a strategy (`spend.py` writes them) holds `budgets`: one reading per
budget (`multiple` of the item's first draft, `tokens` read, `output_tokens`, `calls`,
`correct`, `forms`, `echo`), and the run's `run_tokens`, `seconds`, `stop_reason`,
`attempts` and `error`. A reading from before its output tokens or calls were kept has
them counted from the attempts (`anytime.py`), so a page rebuilt from old records tells
the same spend.

Spend is told as it is: per strategy and budget the tokens read (prompt and reply), the
reply tokens and the model requests per item; and beside each comparison at an equal cap
(`differences`), one at matched spend (`matched_spend`): sample's accuracy at the same
mean reply tokens per item, interpolated on sample's own curve, and its nearest read,
with the paired test against it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.quality.anytime import calls_at, output_tokens_at
from benchmarks.quality.figures import draft_replies, rejected_replies
from benchmarks.quality.intervals import PairedBootstrap, mcnemar, paired_counts, wilson

__all__ = [
    "BASELINE",
    "differences",
    "first_figures",
    "matched_spend",
    "set_figures",
    "strategy_figures",
]

BASELINE = "sample"
"""The strategy every other is compared with: best-of-N fresh drafts."""


def _right(record: dict[str, Any], index: int) -> bool:
    return bool(record["budgets"][index]["correct"])


def _asked(records: Sequence[dict[str, Any]]) -> dict[str, float] | None:
    """Per item, what the model was asked on cache misses (None: no cache counted it)."""
    asked = [r["asked"] for r in records if r.get("asked")]
    if not asked:
        return None
    return {key: sum(float(a[key]) for a in asked) / len(asked) for key in asked[0]}


def _spent(record: dict[str, Any], index: int) -> tuple[int, int]:
    """The reply tokens and model requests of a record's reading at budget `index`: as
    recorded, else counted from its attempts within the reading's budget."""
    reading = record["budgets"][index]
    attempts = record.get("attempts") or []
    budget = reading.get("budget")
    output = reading.get("output_tokens")
    if output is None:
        output = output_tokens_at(attempts, int(budget)) if budget is not None else 0
    calls = reading.get("calls")
    if calls is None:
        calls = calls_at(attempts, int(budget)) if budget is not None else 0
    return int(output), int(calls)


def first_figures(firsts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The shared first draft: accuracy with its interval, its tokens (prompt and reply,
    and reply alone) and model requests per item."""
    n = len(firsts)
    right = sum(bool(f.get("correct_first")) for f in firsts)
    tokens = sum(int(f.get("first_tokens", 0)) for f in firsts)
    output = sum(int((f.get("usage") or {}).get("output_tokens", 0)) for f in firsts)
    calls = sum(calls_at(f.get("attempts") or []) for f in firsts)
    return {
        "items": n,
        "accuracy": wilson(right, n).as_dict(),
        "tokens_per_item": tokens / n if n else 0.0,
        "output_tokens_per_item": output / n if n else 0.0,
        "calls_per_item": calls / n if n else 0.0,
        "asked_per_item": _asked(firsts),
    }


def _unchanged(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How many replies that refined a draft were the draft unchanged: in a refine run,
    the replies of its steps from iteration 1 on; in a run that samples or searches,
    the drafts with a parent (its fresh drafts refine nothing)."""
    replies = unchanged = 0
    for record in records:
        planned = (record.get("settings") or {}).get("strategy") in ("sample", "search")
        for attempt in record.get("attempts") or []:
            if planned:
                refining = [
                    d
                    for d in [attempt, *attempt.get("candidates", [])]
                    if d.get("parent") is not None
                ]
                replies += len(refining)
                unchanged += sum(
                    r.get("reason") == "unchanged" for d in refining for r in _rejected_of(d)
                )
            elif int(attempt.get("iteration", 0)) >= 1:
                replies += draft_replies(attempt)
                unchanged += sum(r["reason"] == "unchanged" for r in rejected_replies(attempt))
    return {
        "refine_replies": replies,
        "unchanged_share_of_refine_replies": unchanged / replies if replies else None,
    }


def _rejected_of(draft: dict[str, Any]) -> list[dict[str, Any]]:
    """A draft's rejected replies: an attempt keeps a list, a candidate one."""
    rejected = draft.get("rejected") or []
    return list(rejected) if isinstance(rejected, list) else [rejected]


def strategy_figures(
    records: Sequence[dict[str, Any]], first_right: Sequence[bool], multiples: Sequence[int]
) -> dict[str, Any]:
    """Accuracy per budget with its interval, moves against the first draft, costs, hygiene.

    `first_right[i]` says whether item i's shared first draft was right. `right_to_wrong`
    at a budget counts items whose first draft was right and whose answer there is
    wrong; `lost_between_budgets` items right at one budget and wrong at a larger one.
    """
    n = len(records)
    per_budget = []
    for index, multiple in enumerate(multiples):
        right = [_right(r, index) for r in records]
        readings = [r["budgets"][index] for r in records]
        spent = [_spent(r, index) for r in records]
        per_budget.append(
            {
                "multiple": multiple,
                "accuracy": wilson(sum(right), n).as_dict(),
                "right": sum(right),
                "tokens_per_item": sum(int(x["tokens"]) for x in readings) / n if n else 0.0,
                "output_tokens_per_item": sum(o for o, _ in spent) / n if n else 0.0,
                "calls_per_item": sum(c for _, c in spent) / n if n else 0.0,
                "wrong_to_right": sum(r and not f for r, f in zip(right, first_right, strict=True)),
                "right_to_wrong": sum(f and not r for r, f in zip(right, first_right, strict=True)),
                "gamed_share": sum(bool(x.get("forms")) for x in readings) / n if n else 0.0,
                "echo_share": sum(bool(x.get("echo")) for x in readings) / n if n else 0.0,
                "no_answer": sum(x.get("answer") is None for x in readings),
            }
        )
    pairs = [(i, j) for i in range(len(multiples)) for j in range(i + 1, len(multiples))]
    lost = sum(any(_right(r, i) and not _right(r, j) for i, j in pairs) for r in records)
    return {
        "items": n,
        "budgets": per_budget,
        "lost_between_budgets": lost,
        "run_tokens_per_item": sum(int(r.get("run_tokens", 0)) for r in records) / n if n else 0.0,
        "run_calls_per_item": (
            sum(calls_at(r.get("attempts") or []) for r in records) / n if n else 0.0
        ),
        "seconds_per_item": sum(float(r.get("seconds", 0.0)) for r in records) / n if n else 0.0,
        "asked_per_item": _asked(records),
        **_unchanged(records),
        "stop_reasons": dict(Counter(str(r.get("stop_reason")) for r in records)),
        "errors": sum(bool(r.get("error")) for r in records),
    }


def differences(
    runs: Mapping[str, Sequence[dict[str, Any]]],
    multiples: Sequence[int],
    bootstrap: PairedBootstrap,
) -> dict[str, list[dict[str, Any]]]:
    """Every strategy's accuracy minus `BASELINE`'s, per budget, paired over the items: the
    bootstrap interval, the items gained and lost, and their exact McNemar p."""
    base = runs.get(BASELINE)
    if base is None:
        return {}
    found: dict[str, list[dict[str, Any]]] = {}
    for strategy, records in runs.items():
        if strategy == BASELINE:
            continue
        found[strategy] = []
        for index, multiple in enumerate(multiples):
            mine = [_right(r, index) for r in records]
            theirs = [_right(r, index) for r in base]
            found[strategy].append(
                {
                    "multiple": multiple,
                    **bootstrap.difference(
                        list(map(float, mine)), list(map(float, theirs))
                    ).as_dict(),
                    **_tested(mine, theirs),
                }
            )
    return found


def _tested(mine: Sequence[bool], theirs: Sequence[bool]) -> dict[str, Any]:
    """The paired test of two strategies' verdicts on the same items."""
    gained, lost = paired_counts(mine, theirs)
    return {"gained": gained, "lost": lost, "mcnemar_p": mcnemar(gained, lost)}


def matched_spend(
    runs: Mapping[str, Sequence[dict[str, Any]]], multiples: Sequence[int]
) -> dict[str, list[dict[str, Any]]]:
    """Every strategy against `BASELINE` at the same mean reply (output) tokens per item.

    At each budget, the strategy's mean reply tokens per item `t` is read on sample's own
    curve (its accuracy against its mean reply tokens per item at each budget):
    `interpolated` is sample's accuracy there, linear between the two reads around `t`
    (None when `t` lies beyond sample's reads: `beyond` says "above" or "below"); the
    `nearest` read is sample's budget whose mean reply tokens per item are closest to
    `t`, and the paired test (items gained and lost, exact McNemar p) is against it.
    """
    base = runs.get(BASELINE)
    if base is None:
        return {}
    curve = [
        (
            sum(_spent(r, index)[0] for r in base) / len(base) if base else 0.0,
            sum(_right(r, index) for r in base) / len(base) if base else 0.0,
            index,
        )
        for index in range(len(multiples))
    ]
    found: dict[str, list[dict[str, Any]]] = {}
    for strategy, records in runs.items():
        if strategy == BASELINE:
            continue
        found[strategy] = []
        for index, multiple in enumerate(multiples):
            n = len(records)
            tokens = sum(_spent(r, index)[0] for r in records) / n if n else 0.0
            near = min(curve, key=lambda point: (abs(point[0] - tokens), point[2]))
            mine = [_right(r, index) for r in records]
            value, beyond = _interpolated(curve, tokens)
            found[strategy].append(
                {
                    "multiple": multiple,
                    "output_tokens_per_item": tokens,
                    "accuracy": sum(mine) / n if n else 0.0,
                    "interpolated": value,
                    "beyond": beyond,
                    "nearest": {
                        "multiple": multiples[near[2]],
                        "output_tokens_per_item": near[0],
                        "accuracy": near[1],
                    },
                    "items": n,
                    **_tested(mine, [_right(r, near[2]) for r in base]),
                }
            )
    return found


def _interpolated(
    curve: Sequence[tuple[float, float, int]], tokens: float
) -> tuple[float | None, str | None]:
    """Sample's accuracy at `tokens` reply tokens per item, linear between the reads
    around it; (None, "above"/"below") beyond its reads."""
    points = sorted((t, a) for t, a, _ in curve)
    if not points or tokens > points[-1][0]:
        return None, "above"
    if tokens < points[0][0]:
        return None, "below"
    for (t0, a0), (t1, a1) in zip(points, points[1:], strict=False):
        if t0 <= tokens <= t1:
            return (a0 if t1 == t0 else a0 + (a1 - a0) * (tokens - t0) / (t1 - t0)), None
    return points[0][1], None  # a single read, at exactly these tokens


def set_figures(
    firsts: Sequence[dict[str, Any]],
    runs: Mapping[str, Sequence[dict[str, Any]]],
    multiples: Sequence[int],
    bootstrap: PairedBootstrap,
) -> dict[str, Any]:
    """A set's figures from its records: the first draft, each strategy, each against
    sample at an equal cap (`differences`) and at matched reply tokens (`matched_spend`)."""
    first_right = [bool(f.get("correct_first")) for f in firsts]
    return {
        "first": first_figures(firsts),
        "strategies": {
            strategy: strategy_figures(records, first_right, multiples)
            for strategy, records in runs.items()
        },
        "differences": differences(runs, multiples, bootstrap),
        "matched_spend": matched_spend(runs, multiples),
    }
