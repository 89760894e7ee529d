"""The data of a thread page: attempts, diffs, critique items and their fate, the answer."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from self_refine.content import describe_task, image_source
from self_refine.critics.verifiers.program import stated_answer
from self_refine.drafts import drafts_by_node, is_tree, numbered, place_of
from self_refine.pages.charts import line_chart
from self_refine.pages.diff import compare_drafts
from self_refine.tree import (
    RANKED_ON,
    answer_draft,
    draft_kind,
    ranking_values,
    step_kinds,
    steps_taken,
)
from self_refine.voting import recorded_tally

__all__ = [
    "PERSON_OR_MODEL",
    "attempt_views",
    "candidate_views",
    "step_times",
    "task_images",
    "recorded_vote",
    "thread_view",
    "tree_view",
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


def _fate(source: str, by_verifier: bool, following: Mapping[str, Any] | None, none: str) -> str:
    """Whether a verifier's item was fixed in the next draft; "unknown" for a person or model.

    The next draft's verifier result tells (in a run that samples or searches, the
    draft's first refinement): it passed (fixed) or it still reports items (not fixed).
    A critique that no verifier judged (`verified` None, as from the offline model or an
    LLM) cannot tell. `none` is said when there is no next draft.
    """
    if following is None:
        return none
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
    """One entry per attempt: its heading, draft diffed against the draft it refined (none
    for a fresh one), items, rejected replies and the step's candidates."""
    tree = is_tree(attempts)
    by_node = drafts_by_node(attempts)
    views = []
    for index, attempt in enumerate(attempts):
        if tree:
            place = place_of(attempt)
            before = _parent_draft(attempt, by_node)
            following = _first_child(None if place is None else place.node, by_node)
        else:
            before = attempts[index - 1]["draft"] if index else None
            following = attempts[index + 1] if index + 1 < len(attempts) else None
        critique = attempt.get("critique") or {}
        problems = [str(p) for p in attempt.get("problems") or []]
        by_verifier = critique.get("verified") is not None
        compared = compare_drafts(before, attempt["draft"]) if before is not None else None
        none = "not refined" if tree else "no next draft"
        views.append(
            {
                "iteration": attempt["iteration"],
                **_heading(attempt, tree),
                "draft": attempt["draft"],
                "diff": compared.segments if compared else None,
                "diff_note": compared.coarse if compared else None,
                "score": critique.get("score"),
                "done": bool(critique.get("done")),
                "verified": critique.get("verified"),
                "source": critique.get("source") or "llm",
                "feedback": [
                    {"source": s, "text": t, "fate": _fate(s, by_verifier, following, none)}
                    for s, t in _items(critique)
                ],
                "problems": problems,
                "parse_fallback": any(p.startswith(_PLAIN_TEXT) for p in problems),
                "rejected": _rejected(attempt.get("rejected")),
                "tokens": int((attempt.get("usage") or {}).get("total_tokens", 0)),
                "correct": attempt.get("correct"),
                **candidate_views(attempt, by_node),
            }
        )
    return views


def _heading(attempt: Mapping[str, Any], tree: bool) -> dict[str, Any]:
    """What a step did (its heading) and what its kept draft is (`kept_as`)."""
    step = attempt["iteration"]
    if not tree:
        heading = "first draft" if step == 0 else f"refine step {step}"
        return {"heading": heading, "kept_as": None, "node": None, "parent": None}
    place = place_of(attempt)
    kept_as = (
        f"kept node {place.node}, a {draft_kind(attempt, step)}"
        if place is not None
        else "no draft kept: every reply was rejected"
    )
    return {
        "heading": f"step {step}: {step_kinds(attempt)}",
        "kept_as": kept_as,
        "node": None if place is None else place.node,
        "parent": None if place is None else place.parent,
    }


def _parent_draft(draft: Mapping[str, Any], by_node: Mapping[int, Mapping[str, Any]]) -> str | None:
    """The text of the draft `draft` refined; None for a fresh draft (shown as new)."""
    place = place_of(draft)
    found = by_node.get(place.parent) if place is not None and place.parent is not None else None
    return None if found is None else str(found.get("draft") or "")


def _first_child(
    node: int | None, by_node: Mapping[int, Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    children = [
        d
        for _, d in sorted(by_node.items())
        if node is not None and (place := place_of(d)) is not None and place.parent == node
    ]
    usable = [d for d in children if not d.get("rejected")]
    return usable[0] if usable else None


def candidate_views(
    attempt: dict[str, Any], by_node: Mapping[int, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """A step's candidates as the page shows them, the kept one first, and why it was kept.

    Empty (`candidates` None) for an attempt that was one reply. In a run that samples or
    searches (`by_node`: its drafts by node), a refinement is diffed against its parent.
    """
    others = sorted(attempt.get("candidates") or [], key=lambda c: c["index"])
    if not others:
        return {"candidates": None, "kept": None, "kept_because": None, "ranked_on": None}
    views = []
    step = attempt["iteration"]
    if "candidate" in attempt:
        kept: dict[str, Any] = {
            "index": attempt["candidate"],
            "draft": attempt["draft"],
            "critique": attempt.get("critique") or {},
            "usage": attempt.get("usage") or {},
            **({"checked": attempt["checked"]} if "checked" in attempt else {}),
        }
        if (place := place_of(attempt)) is not None:
            kept |= place._asdict()
        views.append(_candidate_view(kept, step, by_node or {}, kept=True))
    views += [_candidate_view(c, step, by_node or {}, kept=False) for c in others]
    return {
        "candidates": views,
        "kept": attempt.get("candidate"),
        "kept_because": attempt.get("kept_because"),
        "ranked_on": RANKED_ON,
    }


def _candidate_view(
    candidate: dict[str, Any],
    step: int,
    by_node: Mapping[int, Mapping[str, Any]],
    *,
    kept: bool,
) -> dict[str, Any]:
    critique = candidate.get("critique") or {}
    rejected = candidate.get("rejected")
    place = place_of(candidate)
    before = _parent_draft(candidate, by_node) if place is not None else None
    draft = candidate.get("draft") or ""
    compared = compare_drafts(before, draft) if before is not None and not rejected else None
    return {
        "index": candidate["index"],
        "kept": kept,
        "node": None if place is None else place.node,
        "kind": draft_kind(candidate, step) if place is not None else None,
        "draft": draft,
        "diff": compared.segments if compared else None,
        "diff_note": compared.coarse if compared else None,
        "ranked": ranking_values(candidate),
        "score": critique.get("score"),
        "verified": critique.get("verified"),
        "source": critique.get("source") or "",
        "feedback": [{"source": s, "text": t} for s, t in _items(critique)],
        "problems": [str(p) for p in candidate.get("problems") or []],
        "rejected": _rejected(rejected)[0] if rejected else None,
        # a kept candidate's tokens are the step's, counted on the attempt
        "tokens": None if kept else int((candidate.get("usage") or {}).get("total_tokens", 0)),
    }


def tree_view(attempts: Sequence[dict[str, Any]], answer_node: int | None) -> list[dict[str, Any]]:
    """The drafts of a run that samples or searches as a tree: each root a fresh draft, each
    child a refinement of its parent (empty for a refine run)."""
    entries: dict[int, dict[str, Any]] = {}
    for attempt, draft, place in numbered(attempts):
        rejected = draft.get("rejected")
        entries[place.node] = {
            "node": place.node,
            "parent": place.parent,
            "step": attempt["iteration"],
            "candidate": attempt.get("candidate") if draft is attempt else draft["index"],
            "kept": draft is attempt,
            "answer": place.node == answer_node,
            "states": _stated(draft),
            "line": _first_line(str(draft.get("draft") or "")),
            "ranked": ranking_values(draft),
            "rejected": rejected.get("reason") if rejected else None,
            "planned_because": draft.get("planned_because"),
            "children": [],
        }
    roots: list[dict[str, Any]] = []
    for node in sorted(entries):
        entry = entries[node]
        parent = entries.get(entry["parent"]) if entry["parent"] is not None else None
        (parent["children"] if parent else roots).append(entry)
    return roots


def _stated(draft: Mapping[str, Any]) -> str | None:
    """The final answer a draft states ("The answer is 346."), as the vote reads it."""
    text = str(draft.get("draft") or "")
    found = stated_answer(text) if text.strip() else None
    return None if found is None else str(found[0])


def _first_line(text: str, width: int = 90) -> str:
    """A draft's first words on one line, cut at `width` characters."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


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


def recorded_vote(values: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The vote a run answered by (`select="vote"`), as its answer message records it; None
    for a run that did not vote, or whose drafts stated no final answer."""
    message = values.get("answer_message")
    metadata = (
        message.get("response_metadata")
        if isinstance(message, Mapping)
        else getattr(message, "response_metadata", None)
    )
    vote = ((metadata or {}).get("self_refine") or {}).get("vote")
    return vote if isinstance(vote, Mapping) else None


def _voted(vote: Mapping[str, Any]) -> str:
    """How a vote chose, in words: the count, a tie, the tally, and the draft that answers."""
    tied = [str(a) for a in vote.get("answers") or []][1:]
    tie = f", tied with {', '.join(tied)}, reached first" if tied else ""
    return (
        f"the final answer most of the run's drafts state ({vote['votes']} of "
        f"{vote['of']}{tie}; {recorded_tally(vote)}), the first draft to state it"
    )


def _kept_node(attempts: Sequence[Mapping[str, Any]], step: int | None) -> int | None:
    """The node a step kept as its draft; None when it kept none."""
    for attempt in attempts:
        if attempt["iteration"] == step:
            place = place_of(attempt)
            return None if place is None else place.node
    return None


def thread_view(
    values: dict[str, Any], *, title: str, steps: Sequence[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The whole thread page's data from a state (or a batch record) and its step times."""
    attempts = list(values.get("attempts") or [])
    answer = values.get("answer")
    picked = _answer_iteration(attempts, answer) if answer is not None else None
    why = _why(attempts, picked) if attempts and answer is not None else None
    tree = is_tree(attempts)
    found = answer_draft(values) if tree else None
    vote = recorded_vote(values)
    if found is not None:
        picked = found.step
        how = (
            _voted(vote)
            if vote
            else "the best of the run's drafts, ranked as each step's pick ranks"
        )
        why = f"{found.words()}; {how}"
    elif vote and picked is not None:
        why = f"{_voted(vote)}, at iteration {picked}"
    scores = [a["critique"].get("score") for a in attempts]
    usage = values.get("usage") or {}
    return {
        "title": title,
        "task": describe_task(values.get("task")),
        "images": task_images(values.get("task")),
        "reference": values.get("reference"),
        "attempts": attempt_views(attempts),
        "tree": tree_view(attempts, found.node if found else None) if tree else None,
        "steps_taken": steps_taken(values) if attempts else None,
        "score_chart": (
            line_chart(
                "score of each step's kept draft" if tree else "score per iteration",
                [float(s) for s in scores],
            )
            if attempts and all(s is not None for s in scores)
            else None
        ),
        "stop_reason": values.get("stop_reason"),
        "answer": answer,
        "picked": picked,
        "answer_step": (
            picked if found is None or _kept_node(attempts, picked) == found.node else None
        ),
        "why": why,
        "answer_node": found.node if found else None,
        "tokens": {
            k: int(usage.get(k, 0)) for k in ("input_tokens", "output_tokens", "total_tokens")
        },
        "steps": list(steps) if steps else None,
        "typed": "structured_response" in values,
        "structured_response": values.get("structured_response"),
        "structured_error": values.get("structured_error"),
    }
