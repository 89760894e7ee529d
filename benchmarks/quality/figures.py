"""The quality benchmark's figures, computed from batch result records (pure: tested alone)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

__all__ = ["condition_figures", "correct_at", "draft_replies", "rejected_replies"]

PLAIN_TEXT_FALLBACK = "the critique was not JSON; read it as plain text"


def correct_at(record: dict[str, Any], k: int) -> list[bool]:
    """Whether the answer after 0..k refine steps is right (a run that stopped keeps its answer).

    Unjudged steps (None) count as wrong: the checker must say right for a step to count.
    """
    steps = list(record.get("correct_at") or [record.get("correct_first")])
    steps = steps[: k + 1]
    while len(steps) < k + 1:
        steps.append(steps[-1] if steps else False)
    return [bool(step) for step in steps]


def draft_replies(attempt: dict[str, Any]) -> int:
    """Replies the model gave for one draft: one, or two when the first was rejected
    (a rejected reply is asked again once); a step of candidates, one per candidate."""
    if "candidates" in attempt:
        return len(attempt["candidates"]) + ("candidate" in attempt)
    return min(len(attempt.get("rejected") or []) + 1, 2)


def rejected_replies(attempt: dict[str, Any]) -> list[dict[str, Any]]:
    """The replies of one draft step that were not taken, candidates' included."""
    among = [c["rejected"] for c in attempt.get("candidates") or [] if c.get("rejected")]
    return [*(attempt.get("rejected") or []), *among]


def condition_figures(
    records: Sequence[dict[str, Any]], k: int, seconds: float, calls: int, *, written_from: int = 0
) -> dict[str, Any]:
    """Accuracy@0..k, transitions, score, cost and hygiene rates of one condition's records.

    Rejection rates are shares of the draft replies the model wrote: those of attempts
    from iteration `written_from` on (1 for a condition given its first drafts); a
    step of candidates wrote one reply per candidate. `gamed_final_answers` is the share
    of final answers of each form that counts them wrong (a record's `forms`, see
    `honesty.answer_forms`; an answer may have several), `gamed_share` the share of final
    answers with any of them.
    """
    n = len(records)
    if n == 0:
        return {"items": 0}
    table = [correct_at(record, k) for record in records]
    accuracy = [sum(row[step] for row in table) / n for step in range(k + 1)]
    first = [row[0] for row in table]
    final = [row[-1] for row in table]
    attempts = [a for record in records for a in record.get("attempts") or []]
    written = [a for a in attempts if int(a.get("iteration", 0)) >= written_from]
    rejected = Counter(r["reason"] for a in written for r in rejected_replies(a))
    replies = max(sum(draft_replies(a) for a in written), 1)
    critiques = max(len(attempts), 1)
    fallbacks = sum(PLAIN_TEXT_FALLBACK in (a.get("problems") or []) for a in attempts)
    scores = [r["score"] for r in records if r.get("score") is not None]
    usage = [r.get("usage") or {} for r in records]
    return {
        "items": n,
        "accuracy_at": accuracy,
        "wrong_to_right": sum(not a and b for a, b in zip(first, final, strict=True)),
        "right_to_wrong": sum(a and not b for a, b in zip(first, final, strict=True)),
        "mean_score": sum(scores) / len(scores) if scores else None,
        "input_tokens_per_item": sum(int(u.get("input_tokens", 0)) for u in usage) / n,
        "output_tokens_per_item": sum(int(u.get("output_tokens", 0)) for u in usage) / n,
        "seconds_per_item": seconds / n,
        "calls_per_item": calls / n,
        "draft_replies_per_item": replies / n,
        "rejected_share_of_replies": {
            reason: count / replies for reason, count in rejected.items()
        },
        "parse_fallbacks_per_critique": fallbacks / critiques,
        "echo_in_final_answers": sum(bool(r.get("echo_final")) for r in records) / n,
        "gamed_final_answers": {
            form: count / n
            for form, count in Counter(f for r in records for f in r.get("forms") or []).items()
        },
        "gamed_share": sum(bool(r.get("forms")) for r in records) / n,
        "stop_reasons": dict(Counter(str(r.get("stop_reason")) for r in records)),
    }
