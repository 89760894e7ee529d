"""A run's drafts in words, for `run`, `show`, the pages and batch summaries.

A run that samples or searches numbers its drafts and records the node
each one refined, so its drafts form a tree; a refine run's draft k refines draft
k - 1 (`self_refine.drafts`: the types, and where each draft sits). This module says
what each draft is, what each step did, which draft became the answer, and the values
a step's pick compared (the fields `nodes/ranking.best_candidate` ranks on, in its order).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from self_refine.drafts import drafts_by_node, is_tree, numbered, place_of, replies_by_kind

__all__ = [
    "RANKED_ON",
    "Found",
    "answer_draft",
    "draft_kind",
    "ranking_values",
    "step_kinds",
    "steps_taken",
]

RANKED_ON = (
    "a usable reply, then one the verifiers passed, then the verifiers' lowest score, "
    "then the critic's score, then the earlier"
)
"""The order in which a step's pick compares its replies (`nodes/ranking.best_candidate`)."""


def _count(number: int, noun: str) -> str:
    """A number and its noun: "1 step", "3 steps"."""
    return f"{number} {noun if number == 1 else noun + 's'}"


def draft_kind(draft: Mapping[str, Any], iteration: int) -> str:
    """What a draft (an attempt or a candidate of step `iteration`) is: "first draft",
    "fresh draft", "refinement of node N", or in a refine run "refinement of step k"."""
    place = place_of(draft)
    if place is not None:
        return "fresh draft" if place.parent is None else f"refinement of node {place.parent}"
    return "first draft" if iteration == 0 else f"refinement of step {iteration - 1}"


def step_kinds(attempt: Mapping[str, Any]) -> str:
    """What one step of a run that samples or searches wrote: "4 fresh drafts",
    "1 refinement, 3 fresh drafts"."""
    return _kinds(*replies_by_kind([attempt]))


def _kinds(fresh: int, refined: int) -> str:
    parts = [_count(refined, "refinement")] if refined else []
    if fresh or not refined:
        parts.append(_count(fresh, "fresh draft"))
    return ", ".join(parts)


def steps_taken(values: Mapping[str, Any]) -> str:
    """How many steps a finished run took, and of which kind: "2 refine step(s)" for a
    refine run, "4 steps (13 fresh drafts, 3 refinements)" for one that samples or searches."""
    attempts = values.get("attempts") or []
    if not is_tree(attempts):
        return f"{values.get('iterations', 0)} refine step(s)"
    return f"{_count(len(attempts), 'step')} ({_kinds(*replies_by_kind(attempts))})"


class Found:
    """Where a run's answer came from: the step, the candidate, the node and what it was."""

    def __init__(self, attempt: Mapping[str, Any], draft: Mapping[str, Any]) -> None:
        self.step = int(attempt["iteration"])
        self.kept = draft is attempt
        self.candidate = attempt.get("candidate") if self.kept else draft.get("index")
        place = place_of(draft)
        self.node = None if place is None else place.node
        self.kind = draft_kind(draft, self.step)
        self.tree = place is not None

    def words(self) -> str:
        """ "step 1, candidate 1: node 5, a refinement of node 0"; in a refine run "the first
        draft" or "refine step 2, candidate 1"."""
        if self.tree:
            where = f"step {self.step}"
        else:
            where = "the first draft" if self.step == 0 else f"refine step {self.step}"
        if self.candidate is not None:
            where += f", candidate {self.candidate}"
            if not self.kept:
                where += " (not the one its step kept)"
        return f"{where}: node {self.node}, a {self.kind}" if self.tree else where


def answer_draft(values: Mapping[str, Any]) -> Found | None:
    """The draft a run answered with, found in its attempts (None: it matches none)."""
    attempts = list(values.get("attempts") or [])
    answer = values.get("answer")
    if not attempts or answer is None:
        return None
    # The run's answer is its `best` or its `last` (`select`): whichever holds the answer; a
    # vote's answer may be neither, and is found by its text below, as a batch record's is.
    named = [
        chosen
        for chosen in (values.get("best"), values.get("last"))
        if isinstance(chosen, Mapping) and chosen.get("draft") == answer
    ]
    if is_tree(attempts):
        nodes = [place.node for chosen in named if (place := place_of(chosen)) is not None]
        by_node = drafts_by_node(attempts)
        if not nodes:  # no `best` (a batch record), or a vote: the answer text's first draft
            nodes = [n for n, d in sorted(by_node.items()) if d.get("draft") == answer][:1]
        for attempt, draft, place in numbered(attempts):
            if nodes and place.node == nodes[0]:
                return Found(attempt, draft)
        return None
    steps = [chosen["iteration"] for chosen in named] or [
        a["iteration"] for a in attempts if a.get("draft") == answer
    ][-1:]
    for attempt in reversed(attempts):
        if steps and attempt["iteration"] == steps[0] and attempt.get("draft") == answer:
            return Found(attempt, attempt)
    return None


def ranking_values(draft: Mapping[str, Any]) -> str:
    """The values a step's pick compared for one reply: "verified no, lowest 0.33, critic 0.33".

    `verified` and `checked` (the verifiers' verdict and lowest score) are a candidate's
    own fields; a kept reply's are on its attempt (its critique's verdict, and `checked`:
    "not recorded" for a refine run's attempt saved by a version that did not record
    it). "-": no verifier judged it, or no score.
    """
    rejected = draft.get("rejected")
    if rejected:
        return f"rejected ({rejected.get('reason', 'rejected')})"
    critique = draft.get("critique") or {}
    verified = draft["verified"] if "verified" in draft else critique.get("verified")
    said = "-" if verified is None else "yes" if verified else "no"
    lowest = _value(draft["checked"]) if "checked" in draft else "not recorded"
    return f"verified {said}, lowest {lowest}, critic {_value(critique.get('score'))}"


def _value(value: Any) -> str:
    return "-" if value is None else f"{float(value):.2f}"
