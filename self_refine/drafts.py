"""A run's drafts: the attempts and candidates it records, their types, and every way to read them.

A run that refines records one chain of drafts: its draft k (a `ChainAttempt`) refines
draft k - 1. A run that samples or searches records a tree: each draft is a
node (`TreeAttempt`, each other reply of a step a `DraftNode`), numbered in the order the
run made it, and `parent` names the node it refined (None: a fresh draft of the task).
A step of candidates keeps one reply as its attempt and the others beside it
(`candidates`). Every read of a draft's place in the tree is here (`place_of`), and so is
every conversion between a step's attempt and the drafts it holds; what they mean in
words is `self_refine.tree`'s.

Stored threads hold these as plain dicts (the `attempts` channel): a tree's node is the
`node` and `parent` keys of its attempt or candidate, as it always was, so a thread
written by an earlier version reads the same. This module imports nothing of the package.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, NotRequired, overload

# pydantic builds JSON schemas (LangGraph's input/output schemas, Studio) only from
# typing_extensions' TypedDict on Python < 3.12.
from typing_extensions import TypedDict, TypeIs

__all__ = [
    "Attempt",
    "Candidate",
    "ChainAttempt",
    "DraftNode",
    "Place",
    "RejectedReply",
    "TreeAttempt",
    "Usage",
    "add_usage",
    "as_attempt",
    "chain_of",
    "drafts_by_node",
    "drafts_of",
    "in_tree",
    "is_tree",
    "numbered",
    "place_of",
    "placed",
    "replies_by_kind",
    "step_drafts",
]


class Usage(TypedDict):
    """Token counts of model calls, as the models reported them."""

    input_tokens: int
    output_tokens: int
    total_tokens: int


def add_usage(*usages: Usage | None) -> Usage:
    """Sum token counts, treating None as zero."""
    total: Usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    for usage in usages:
        if usage:
            total["input_tokens"] += int(usage.get("input_tokens", 0))
            total["output_tokens"] += int(usage.get("output_tokens", 0))
            total["total_tokens"] += int(usage.get("total_tokens", 0))
    return total


class RejectedReply(TypedDict):
    """A model reply that was not taken as a draft, and why.

    `reason` is one of "echo" (it repeats the prompt's tags, instructions, the
    task or earlier feedback), "refusal", "too_long", "empty", "unchanged" (a
    refine reply that is the draft it had feedback on, as it was) or "stopped" (a
    candidate whose step ended when another candidate verified first: `STOPPED`); `reply` is the
    reply, cut to 2,000 characters; `detail` says what was found. A rejected
    reply is never a draft: verifiers never see it and it is never the answer.
    """

    reason: str
    reply: str
    detail: str


class Candidate(TypedDict):
    """One of the replies a draft step sampled at once (`candidates` > 1), judged.

    `index` is its place among the step's replies (0 at the model's own temperature);
    `draft` is "" when the reply was rejected (`rejected` says why, and it was never
    critiqued: `critique` is empty); `usage` covers its draft call and its critique,
    `critique_usage` the critique's part (absent in records made before it was kept).
    `verified` is the verifiers' verdict (None when none judged it) and `checked` their
    lowest score, which rank candidates before the critic's score does. In a run that
    samples or searches each one is a `DraftNode`.
    """

    index: int
    draft: str
    critique: dict[str, Any]
    usage: Usage
    verified: bool | None
    checked: float | None
    critique_usage: NotRequired[Usage]
    problems: NotRequired[list[str]]
    rejected: NotRequired[RejectedReply]
    planned_because: NotRequired[str]
    """Why the search planned this reply (its Thompson draws), in a run that searches."""


class DraftNode(Candidate):
    """A draft of a run that samples or searches: a reply of one of its steps, and its place
    in the run's tree: `node` numbers it in the order the run made its drafts, `parent` is
    the node it refined (None: a fresh draft of the task)."""

    node: int
    parent: int | None


class _Step(TypedDict):
    iteration: int
    draft: str
    critique: dict[str, Any]
    usage: Usage
    critique_usage: NotRequired[Usage]
    problems: NotRequired[list[str]]
    rejected: NotRequired[list[RejectedReply]]
    candidate: NotRequired[int]
    kept_because: NotRequired[str]
    candidates: NotRequired[list[Candidate]]
    checked: NotRequired[float | None]
    planned_because: NotRequired[str]


class ChainAttempt(_Step):
    """One step of a run that refines: its draft and the critique it received.

    `iteration` 0 is the first draft (generated or given); iteration k is the
    draft made by the k-th refine step, from draft k - 1. `usage` covers the call that
    wrote the draft and the call that critiqued it, `critique_usage` the critique's part
    (absent in records made before it was kept; a step of candidates': all their
    critiques'). `problems`, present only when
    something went wrong, says what (an empty or refused reply, a critique that
    was not valid JSON, a score outside [0, 1]) and how it was handled.
    `rejected`, present only when it happened, lists the replies that were not
    taken as this draft (see `RejectedReply`). When the step sampled several
    candidates, `candidate` is the index of the one picked (absent when every reply
    was rejected and the previous draft stayed), `kept_because` says which ranking
    rule picked it, `checked` is its lowest verifier score, `candidates` holds the
    others, and `usage` covers every candidate's calls.
    """


class TreeAttempt(_Step):
    """One step of a run that samples or searches: the draft it kept and the others it
    judged (`candidates`, each a `DraftNode`), with the keys of a `ChainAttempt`.

    `node` and `parent` are the kept draft's place in the run's tree; like `candidate`,
    they are absent only when every reply of the step was rejected and it kept no draft.
    `checked` is the kept draft's lowest verifier score (a given draft's too: the tree's
    node 0). `iteration` is the step's number: a step refines no one draft.
    """

    node: NotRequired[int]
    parent: NotRequired[int | None]


Attempt = ChainAttempt | TreeAttempt
"""One step of a run, as its `attempts` record it: a chain's or a tree's (`in_tree`)."""


class Place(NamedTuple):
    """Where a draft sits in its run's tree: its node, and the node it refined (None: a fresh
    draft of the task)."""

    node: int
    parent: int | None


def place_of(draft: Mapping[str, Any]) -> Place | None:
    """Where a draft (an attempt, a candidate, a planned reply, a branch's input) sits in its
    run's tree; None for a draft of a chain, and for a tree's step that kept no draft."""
    if "node" not in draft:
        return None
    return Place(int(draft["node"]), draft.get("parent"))


@overload
def placed(record: Candidate, place: Place | None) -> Candidate: ...
@overload
def placed(record: ChainAttempt, place: Place | None) -> Attempt: ...
def placed(record: Mapping[str, Any], place: Place | None) -> Any:
    """`record` (a reply's or a step's) at `place` in its run's tree: a `DraftNode` or a
    `TreeAttempt`; as it is without a place (a run that refines)."""
    if place is None:
        return record
    return {**record, "node": place.node, "parent": place.parent}


def _replies(attempt: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A step's drafts as it recorded them: the kept one (the attempt), then the others."""
    return [attempt, *(attempt.get("candidates") or [])]


def in_tree(attempt: Attempt) -> TypeIs[TreeAttempt]:
    """Whether a step's drafts are nodes of a tree (a step of a run that samples or searches):
    its kept draft's, or when it kept none, its other replies'."""
    return any(place_of(draft) is not None for draft in _replies(attempt))


def is_tree(attempts: Iterable[Mapping[str, Any]]) -> bool:
    """Whether the attempts come from a run that samples or searches (its drafts are nodes)."""
    return any(place_of(draft) is not None for a in attempts for draft in _replies(a))


def numbered(
    attempts: Iterable[Mapping[str, Any]],
) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any], Place]]:
    """Every draft of a run's tree as recorded, with its step and its place: each step's kept
    one (the attempt itself), then the others; nothing for a run that refines."""
    for attempt in attempts:
        for draft in _replies(attempt):
            if (place := place_of(draft)) is not None:
                yield attempt, draft, place


def drafts_by_node(attempts: Iterable[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    """Every draft of a run's tree (each step's kept one and its others, as recorded), by node."""
    return {place.node: draft for _, draft, place in numbered(attempts)}


def replies_by_kind(attempts: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """How many fresh drafts and how many refinements a run's steps asked for (a rejected
    or stopped reply counted by what it was asked to be)."""
    places = [place for _, _, place in numbered(attempts)]
    refined = sum(1 for place in places if place.parent is not None)
    return len(places) - refined, refined


def _kept(attempt: Attempt, place: Place, usage: Usage) -> DraftNode:
    kept: DraftNode = {
        "index": attempt.get("candidate", -1),
        "draft": attempt["draft"],
        "critique": attempt["critique"],
        "usage": usage,
        "verified": attempt["critique"].get("verified"),
        "checked": attempt.get("checked"),
        "node": place.node,
        "parent": place.parent,
    }
    if "planned_because" in attempt:
        kept["planned_because"] = attempt["planned_because"]
    return kept


def _is_node(reply: Candidate) -> TypeIs[DraftNode]:
    return place_of(reply) is not None


def _others(attempt: Attempt) -> list[DraftNode]:
    return [other for other in attempt.get("candidates") or [] if _is_node(other)]


def step_drafts(attempt: Attempt) -> list[DraftNode]:
    """The drafts of a tree's step, each with what its calls cost: the kept one (its cost is
    the step's less the others') and the others beside it; none but those when every
    reply was rejected."""
    others = _others(attempt)
    place = place_of(attempt)
    if place is None:
        return others
    step, spent = add_usage(attempt["usage"]), add_usage(*(other["usage"] for other in others))
    usage: Usage = {
        "input_tokens": step["input_tokens"] - spent["input_tokens"],
        "output_tokens": step["output_tokens"] - spent["output_tokens"],
        "total_tokens": step["total_tokens"] - spent["total_tokens"],
    }
    return [_kept(attempt, place, usage), *others]


def drafts_of(attempts: Iterable[Attempt]) -> list[DraftNode]:
    """Every draft of a run's tree, in the order they were made (none for a run that refines)."""
    found = [draft for attempt in attempts for draft in step_drafts(attempt)]
    return sorted(found, key=lambda draft: draft["node"])


def as_attempt(attempts: Sequence[Attempt], chosen: DraftNode) -> Attempt | None:
    """A draft of a run's tree as an attempt (the reverse of `drafts_of`): the step's attempt
    when its step kept it, else one of its step (iteration, draft, critique, usage, place);
    None when no step of `attempts` holds it."""
    for attempt in attempts:
        place = place_of(attempt)
        if place is not None and place.node == chosen["node"]:
            return attempt
        if chosen in (attempt.get("candidates") or []):
            found: TreeAttempt = {
                "iteration": attempt["iteration"],
                "draft": chosen["draft"],
                "critique": chosen["critique"],
                "usage": chosen["usage"],
                "node": chosen["node"],
                "parent": chosen["parent"],
                "checked": chosen.get("checked"),
            }
            if "planned_because" in chosen:
                found["planned_because"] = chosen["planned_because"]
            return found
    return None


def chain_of(node: int | None, attempts: Iterable[Attempt]) -> list[ChainAttempt]:
    """The drafts a reply that refines `node` builds on: its ancestors, then `node` itself,
    each as a chain's attempt (iteration, draft, critique); none for a fresh draft."""
    if node is None:
        return []
    by_node = {draft["node"]: draft for draft in drafts_of(attempts)}
    chain: list[ChainAttempt] = []
    while node is not None and node in by_node:
        found = by_node[node]
        chain.append(
            {
                "iteration": 0,
                "draft": found["draft"],
                "critique": found["critique"],
                "usage": found["usage"],
            }
        )
        node = found["parent"]
    chain.reverse()
    for depth, attempt in enumerate(chain):
        attempt["iteration"] = depth
    return chain
