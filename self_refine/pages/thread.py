"""The data of a thread page: attempts, diffs, critique items and their fate, the answer."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from self_refine.content import describe_task, image_source
from self_refine.pages.charts import line_chart
from self_refine.pages.diff import compare_drafts

__all__ = [
    "PERSON_OR_MODEL",
    "attempt_views",
    "candidate_views",
    "step_times",
    "task_images",
    "thread_view",
]

PERSON_OR_MODEL = ("llm", "human")
"""Sources whose items cannot be checked against the next draft."""

_TAG = re.compile(r"^\[([\w.+-]+)\]\s*")
_PLAIN_TEXT = "the critique was not JSON"


def _items(critique: dict[str, Any]) -> list[tuple[str, str]]:
    """(source, text) of each feedback item; a merged critique tags items "[name] ..."."""
    default = str(critique.get("source") or "llm")
    items = []
    for text in critique.get("feedback") or []:
        tag = _TAG.match(str(text))
        source = tag.group(1) if tag else default
        items.append((source, str(text)[tag.end() :] if tag else str(text)))
    return items


def _fate(source: str, by_verifier: bool, following: dict[str, Any] | None) -> str:
    """Whether a verifier's item was fixed in the next draft; "unknown" for a person or model.

    The next attempt's verifier result tells: it passed (fixed) or it still
    reports items (not fixed). A critique that no verifier judged (`verified`
    None, as from the offline model or an LLM) cannot tell.
    """
    if following is None:
        return "no next draft"
    if source in PERSON_OR_MODEL or not by_verifier:
        return "unknown"
    critique = following.get("critique") or {}
    if critique.get("verified") is True:
        return "fixed"
    later = _items(critique)
    if any(s == source for s, _ in later):
        return "not fixed"
    if source in str(critique.get("source") or "").split("+"):
        return "fixed"
    return "unknown"


def _answer_iteration(attempts: Sequence[dict[str, Any]], answer: str) -> int | None:
    matches = [a["iteration"] for a in attempts if a.get("draft") == answer]
    return matches[-1] if matches else None


def _why(attempts: Sequence[dict[str, Any]], picked: int | None) -> str:
    """Why the answer is the attempt it is."""
    if picked is None:
        return "the answer matches no attempt"
    scores = [a["critique"].get("score") for a in attempts]
    last = attempts[-1]["iteration"]
    known = [s for s in scores if s is not None]
    chosen = next(a for a in reversed(attempts) if a["iteration"] == picked)
    score = chosen["critique"].get("score")
    if known and score is not None and score >= max(known):
        tie = " (ties go to the earlier, then the shorter draft)" if scores.count(score) > 1 else ""
        return f"highest score, {score:.2f}, at iteration {picked}{tie}"
    if picked == last:
        return "the last draft" + (" (no scores)" if not known else " (select=last)")
    return f"attempt {picked}"


def _rejected(given: Any) -> list[dict[str, str]]:
    """The rejected replies as the page shows them: reason, detail, reply, each as text."""
    entries = given if isinstance(given, list) else [given] if given else []
    return [
        {k: str(e.get(k) or "") for k in ("reason", "detail", "reply")}
        if isinstance(e, dict)
        else {"reason": "unknown", "detail": "", "reply": str(e)}
        for e in entries
    ]


def attempt_views(attempts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per attempt: draft diffed against the previous one, items, rejected replies."""
    views = []
    for index, attempt in enumerate(attempts):
        following = attempts[index + 1] if index + 1 < len(attempts) else None
        before = attempts[index - 1]["draft"] if index else None
        critique = attempt.get("critique") or {}
        problems = [str(p) for p in attempt.get("problems") or []]
        by_verifier = critique.get("verified") is not None
        compared = compare_drafts(before, attempt["draft"]) if before is not None else None
        views.append(
            {
                "iteration": attempt["iteration"],
                "draft": attempt["draft"],
                "diff": compared.segments if compared else None,
                "diff_note": compared.coarse if compared else None,
                "score": critique.get("score"),
                "done": bool(critique.get("done")),
                "verified": critique.get("verified"),
                "source": critique.get("source") or "llm",
                "feedback": [
                    {"source": s, "text": t, "fate": _fate(s, by_verifier, following)}
                    for s, t in _items(critique)
                ],
                "problems": problems,
                "parse_fallback": any(p.startswith(_PLAIN_TEXT) for p in problems),
                "rejected": _rejected(attempt.get("rejected")),
                "tokens": int((attempt.get("usage") or {}).get("total_tokens", 0)),
                "correct": attempt.get("correct"),
                **candidate_views(attempt),
            }
        )
    return views


def candidate_views(attempt: dict[str, Any]) -> dict[str, Any]:
    """A step's candidates as the page shows them, the kept one first, and why it was kept.

    Empty (`candidates` None) for an attempt that was one reply.
    """
    others = sorted(attempt.get("candidates") or [], key=lambda c: c["index"])
    if not others:
        return {"candidates": None, "kept": None, "kept_because": None}
    views = []
    if "candidate" in attempt:
        kept = {
            "index": attempt["candidate"],
            "draft": attempt["draft"],
            "critique": attempt.get("critique") or {},
            "usage": attempt.get("usage") or {},
        }
        views.append(_candidate_view(kept, kept=True))
    views += [_candidate_view(c, kept=False) for c in others]
    return {
        "candidates": views,
        "kept": attempt.get("candidate"),
        "kept_because": attempt.get("kept_because"),
    }


def _candidate_view(candidate: dict[str, Any], *, kept: bool) -> dict[str, Any]:
    critique = candidate.get("critique") or {}
    rejected = candidate.get("rejected")
    return {
        "index": candidate["index"],
        "kept": kept,
        "draft": candidate.get("draft") or "",
        "score": critique.get("score"),
        "verified": critique.get("verified"),
        "source": critique.get("source") or "",
        "feedback": [{"source": s, "text": t} for s, t in _items(critique)],
        "problems": [str(p) for p in candidate.get("problems") or []],
        "rejected": _rejected(rejected)[0] if rejected else None,
        # a kept candidate's tokens are the step's, counted on the attempt
        "tokens": None if kept else int((candidate.get("usage") or {}).get("total_tokens", 0)),
    }


def task_images(task: Any) -> list[str]:
    """The images a task holds (data:image/ URLs), for <img> tags.

    An image given by URL is left out: a page fetches nothing (opening it would tell
    that host who read it, and when); the task's text names it where it stands.
    """
    if not isinstance(task, list):
        return []
    sources = (image_source(b) for b in task if isinstance(b, dict) and b.get("type") != "text")
    return [source for source in sources if source.startswith("data:image/")]


def step_times(history: Sequence[Any]) -> list[dict[str, Any]]:
    """Seconds per node of the latest run, from checkpoint timestamps (newest first, as read).

    Each checkpoint names the node that runs next; the time to the following
    checkpoint is that node's time.
    """
    chronological = list(reversed(history))
    starts = [i for i, s in enumerate(chronological) if (s.metadata or {}).get("source") == "input"]
    run = chronological[starts[-1] :] if starts else chronological
    steps = []
    for before, after in zip(run, run[1:], strict=False):
        if not before.next or not before.created_at or not after.created_at:
            continue
        seconds = (
            datetime.fromisoformat(after.created_at) - datetime.fromisoformat(before.created_at)
        ).total_seconds()
        steps.append({"node": _nodes(before.next), "seconds": round(seconds, 3)})
    return steps


def _nodes(names: Sequence[str]) -> str:
    """The nodes of a step: "candidate x4" for a step of four candidates."""
    counted = Counter(names)
    return ", ".join(name if n == 1 else f"{name} x{n}" for name, n in counted.items())


def thread_view(
    values: dict[str, Any], *, title: str, steps: Sequence[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The whole thread page's data from a state (or a batch record) and its step times."""
    attempts = list(values.get("attempts") or [])
    answer = values.get("answer")
    picked = _answer_iteration(attempts, answer) if answer is not None else None
    scores = [a["critique"].get("score") for a in attempts]
    usage = values.get("usage") or {}
    return {
        "title": title,
        "task": describe_task(values.get("task")),
        "images": task_images(values.get("task")),
        "reference": values.get("reference"),
        "attempts": attempt_views(attempts),
        "score_chart": (
            line_chart("score per iteration", [float(s) for s in scores])
            if attempts and all(s is not None for s in scores)
            else None
        ),
        "stop_reason": values.get("stop_reason"),
        "answer": answer,
        "picked": picked,
        "why": _why(attempts, picked) if attempts and answer is not None else None,
        "tokens": {
            k: int(usage.get(k, 0)) for k in ("input_tokens", "output_tokens", "total_tokens")
        },
        "steps": list(steps) if steps else None,
        "typed": "structured_response" in values,
        "structured_response": values.get("structured_response"),
        "structured_error": values.get("structured_error"),
    }
