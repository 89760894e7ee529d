"""The search over a run's tree of drafts: what each reply of the next step should do.

In a run that searches, every draft is a node of a tree: a fresh draft (a reply to
the task alone) is a root, a refined draft the child of the draft it refined. Each
step's replies are chosen by Thompson sampling in two draws, after REx (Tang et al.,
2024), with the changes the local models' measurements called for (see `refine_chance`
and the quality guide):

- which kind of reply: writing a fresh draft is believed to verify with chance
  Beta(1 + right, 1 + wrong) over the run's fresh drafts so far; refining one of its
  drafts with chance Beta(W*g + right', W*(1 - g) + wrong') over its refinements so
  far, g = g(h) for the run's best draft (h its graded score: the lowest score its
  verifiers gave, the share of required words, of tests passed, ...), W = 20, and g(h)
  the chance measured that a draft of score h refines into a verified one. One draw of
  each, divided by what a reply of that kind has cost so far (a refine request carries
  the draft and its feedback): the search spends a token budget, not a number of
  calls. The refinements are pooled, so every failed one counts against refining: with
  a model whose refinements never verify, the search soon writes only fresh drafts and
  spends its budget as sampling does (REx draws every draft as an arm of its own, and
  with many drafts the best of their draws beat a fresh draft's however often refining
  had failed);
- which draft to refine: draft k's draw from Beta(1 + C*g(h), 1 + C*(1 - g(h)) + n),
  n the times it was refined already, C = 20 as in REx (which takes g(h) = h: that
  made a small model refine half-right drafts its refinements almost never fixed).

A draft is an arm to refine only when its findings carry information (`informative`):
a verifier judged it, failed it and said what failed (a test's failure, the missing
words). A draft the LLM critic alone scored, or whose verifiers could not judge it,
is no arm: a refinement asked from a score alone knows nothing a fresh draft lacks. With
no such draft every reply is a fresh draft, and the search spends as sampling does.

Each reply of a step takes the best draw, the arm it took counted as taken for the
replies after it. A refinement is asked in the run's search form (`RunPlan.search_form`:
the fresh form, the task and the findings of the draft it refines with no draft to copy,
unless the run or the profile sets `refine_form`; in the conversation or single form with
the chain of drafts it refines). A run that samples keeps the fresh arm only (best-of-N).

The `planner` node (`nodes/planner.py`) calls these after each step. Everything the
search decides is state the graph keeps (`SearchState` in the `search` channel, the
next step's `next_replies`), so a run resumes, forks and is drawn as the tree it is;
the draws are seeded by the task and the step, so a step planned again plans the same.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from self_refine.content import task_text
from self_refine.drafts import DraftNode
from self_refine.state import Arm, PlannedReply, SearchState, Spent

__all__ = [
    "NO_ARMS",
    "REFINE_FLOOR",
    "REFINE_SLOPE",
    "REFINE_WEIGHT",
    "SCORE_WEIGHT",
    "graded",
    "informative",
    "initial_search",
    "plan_step",
    "record_step",
    "refine_chance",
]

SCORE_WEIGHT = 20
"""C: how many outcomes a node's graded score weighs as, in its arm's prior (REx's 20)."""

REFINE_WEIGHT = 20
"""W: how many outcomes the measured chance g(h) weighs as in the prior of refining at
all, against the run's own refinements."""

REFINE_FLOOR = 0.02
REFINE_SLOPE = 0.10
"""g(h) = REFINE_FLOOR + REFINE_SLOPE * h: the chance that refining a draft of graded score
h gives a verified draft, as measured with the local models (see `refine_chance`)."""


def refine_chance(h: float) -> float:
    """The chance believed, before any try, that refining a draft of graded score h gives a
    verified draft.

    Measured on the quality benchmark's records of the local 0.5B and 1.5B models
    (constrained generation, refine steps after a verifier's findings): 2 of 82 refine
    replies of the 0.5B model and 6 of 65 of the 1.5B model were verified, whatever the
    draft's score, against 19 of 153 fresh drafts of the 0.5B model. The budget benchmark's
    run of the 0.5B model (2026-11-26, every set) agrees: 1 of 123 refine replies verified,
    against 13-60% of fresh drafts by set. A draft's score says how close it is, not how
    likely a small model is to close the gap; the pooled draw of whether to refine at all
    corrects g within a run once its refinements fail.
    """
    return REFINE_FLOOR + REFINE_SLOPE * h


def initial_search() -> SearchState:
    """The search before any draft: no nodes, no fresh drafts, nothing spent."""
    return {
        "arms": [],
        "fresh": {"right": 0, "wrong": 0},
        "refines": {"right": 0, "wrong": 0},
        "spent": {"fresh_tokens": 0, "fresh": 0, "refine_tokens": 0, "refine": 0},
        "nodes": 0,
    }


def graded(candidate: Mapping[str, Any]) -> float:
    """A draft's graded score h in [0, 1]: its verifiers' lowest, else the critic's, else 0."""
    checked = candidate.get("checked")
    if checked is not None:
        return float(checked)
    score = (candidate.get("critique") or {}).get("score")
    return float(score) if score is not None else 0.0


def informative(candidate: Mapping[str, Any]) -> bool:
    """Whether a draft's findings tell a refinement what to fix: a verifier judged it
    (`checked`), failed it (`verified` False: only a verifier's verdict says so) and its
    critique says what failed; never a critic's score alone or an unjudged draft."""
    critique = candidate.get("critique") or {}
    return (
        candidate.get("checked") is not None
        and critique.get("verified") is False
        and bool(critique.get("feedback"))
    )


def record_step(
    search: SearchState, branches: Sequence[DraftNode], earlier: Iterable[str] = ()
) -> SearchState:
    """The search once a step's replies are judged: new arms, parents counted as refined.

    A reply that was rejected, or that repeats a draft of an earlier step (`earlier`)
    or of this one, is no arm: refining it again would ask what was asked; nor is a
    draft whose findings carry no information (`informative`).
    """
    arms: list[Arm] = [{**arm} for arm in search["arms"]]
    right, wrong = search["fresh"]["right"], search["fresh"]["wrong"]
    refines = search.get("refines") or {"right": 0, "wrong": 0}
    refine_right, refine_wrong = refines["right"], refines["wrong"]
    spent: Spent = {**search.get("spent", initial_search()["spent"])}
    seen = set(earlier)
    by_node = {arm["node"]: arm for arm in arms}
    for branch in sorted(branches, key=lambda b: b["node"]):
        parent = branch["parent"]
        tokens = int((branch.get("usage") or {}).get("total_tokens", 0))
        if parent is None:
            right, wrong = (right + 1, wrong) if branch.get("verified") else (right, wrong + 1)
            spent["fresh_tokens"] += tokens
            spent["fresh"] += 1
        else:
            spent["refine_tokens"] += tokens
            spent["refine"] += 1
            if branch.get("verified"):
                refine_right += 1
            else:
                refine_wrong += 1
            if parent in by_node:
                by_node[parent]["refined"] += 1
        draft = branch["draft"]
        if draft.strip() and draft not in seen and informative(branch):
            arm: Arm = {"node": branch["node"], "h": graded(branch), "refined": 0}
            arms.append(arm)
            by_node[arm["node"]] = arm
        seen.add(draft)
    nodes = max([search["nodes"], *(b["node"] + 1 for b in branches)])
    return {
        "arms": arms,
        "fresh": {"right": right, "wrong": wrong},
        "refines": {"right": refine_right, "wrong": refine_wrong},
        "spent": spent,
        "nodes": nodes,
    }


def _costs(spent: Spent) -> tuple[float, float]:
    """What a fresh reply and a refine reply cost so far, in tokens (1 when unknown; a
    refine reply not tried yet is taken to cost half as much again as a fresh one)."""
    fresh = spent["fresh_tokens"] / spent["fresh"] if spent["fresh"] else 1.0
    refine = spent["refine_tokens"] / spent["refine"] if spent["refine"] else 1.5 * fresh
    return max(fresh, 1.0), max(refine, 1.0)


def _seed(task: Any, step: int) -> int:
    digest = hashlib.sha256(f"{task_text(task)}\n{step}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def plan_step(
    search: SearchState, width: int, *, may_refine: bool, task: Any, step: int
) -> list[PlannedReply]:
    """The next step's replies: `width` of them, each refining a node or writing afresh."""
    rng = random.Random(_seed(task, step))
    refined = {arm["node"]: arm["refined"] for arm in search["arms"]}
    right, wrong = search["fresh"]["right"], search["fresh"]["wrong"]
    refines = search.get("refines") or {"right": 0, "wrong": 0}
    refine_right, refine_wrong = refines["right"], refines["wrong"]
    fresh_cost, refine_cost = _costs(search.get("spent", initial_search()["spent"]))
    arms = search["arms"] if may_refine else []
    top = max((refine_chance(arm["h"]) for arm in arms), default=0.0)
    plan: list[PlannedReply] = []
    for offset in range(width):
        node = search["nodes"] + offset
        fresh_draw = rng.betavariate(1 + right, 1 + wrong)
        fresh = fresh_draw / fresh_cost
        refine = refine_draw = 0.0
        if arms:
            a = REFINE_WEIGHT * top + refine_right
            b = REFINE_WEIGHT * (1 - top) + refine_wrong
            refine_draw = rng.betavariate(a, b)
            refine = refine_draw / refine_cost
        kinds = _kinds_said(fresh_draw, fresh_cost, refine_draw, refine_cost)
        if refine <= fresh:
            wrong += 1  # counted as taken: the next reply's draw knows it is being tried
            reply: PlannedReply = {"node": node, "parent": None}
            if may_refine:
                reply["planned_because"] = (
                    f"a fresh draft: {kinds}" if arms else f"a fresh draft: {NO_ARMS}"
                )
            plan.append(reply)
            continue
        draws: list[tuple[Arm, float]] = []
        for arm in arms:
            g = refine_chance(arm["h"])
            draw = rng.betavariate(
                1 + SCORE_WEIGHT * g, 1 + SCORE_WEIGHT * (1 - g) + refined[arm["node"]]
            )
            draws.append((arm, draw))
        best = max(draws, key=lambda found: found[1])[0]["node"]  # the first of equal draws
        because = f"refines node {best}: {kinds}; {_arms_said(draws, refined)}"
        plan.append({"node": node, "parent": best, "planned_because": because})
        refined[best] += 1
        refine_wrong += 1
    return plan


NO_ARMS = "no draft has a verifier's findings to refine yet (a failed check saying what failed)"
"""Why a search step writes only fresh drafts: it has no arm to refine (`informative`)."""


def _kinds_said(fresh: float, fresh_cost: float, refine: float, refine_cost: float) -> str:
    """The first draw of a reply, in words: each kind's sampled chance, its cost, and which
    won per token (refining not drawn: the step has no draft to refine)."""
    won = "a fresh draft" if refine / refine_cost <= fresh / fresh_cost else "refining"
    return (
        f"Thompson sampling drew a fresh draft's chance to verify at {fresh:.2f} "
        f"(~{fresh_cost:,.0f} tokens a reply) and refining's at {refine:.2f} "
        f"(~{refine_cost:,.0f} tokens); per token, {won} won"
    )


def _arms_said(draws: Sequence[tuple[Arm, float]], refined: Mapping[int, int]) -> str:
    """The second draw, in words: each draft's sampled chance that refining it verifies,
    beside its score and the chance believed before the draw (`refine_chance`)."""
    said = ", ".join(
        f"node {arm['node']} {draw:.3f} (score {arm['h']:.2f}, believed "
        f"{refine_chance(arm['h']):.2f}, refined {refined[arm['node']]}x)"
        for arm, draw in draws
    )
    return (
        f"each draft's chance to verify once refined was drawn: {said}; the highest draw is refined"
    )
