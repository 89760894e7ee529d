"""Which draft is kept: the ranking rules of the loop, each written once.

- `best_attempt`: a run's answer among its attempts (`select="best"`) when it refines:
  the highest score, ties to the earlier, then the shorter draft;
- `best_candidate`: the reply a step of candidates keeps, and the answer of a run that
  samples or searches among all its drafts: a usable reply the verifiers passed, else
  the one they scored highest, then the critic's score, ties to the earlier (the lower
  index in a step; the earlier node in a run); `why_kept` says which of these rules decided;
- `voted_candidate`: the answer of a run with `select="vote"`: the draft that first stated
  the final answer most drafts state (`self_refine.voting`; a tie goes to the answer
  reached first), the drafts the verifiers passed voting alone when there are any;
  `voted_attempt` the same over one chain of drafts (a run that refines);
- `tree_attempt`: the draft a run that samples or searches answers with, among all its
  drafts (each step's other replies too), as an attempt;
- `chosen_attempt`: the attempt a run answers with by its `select`, as `finalize` picks
  it, and so the answer it would have given after k steps (a batch's per-step curve).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from self_refine.drafts import Attempt, Candidate, DraftNode, as_attempt, drafts_of, place_of
from self_refine.state import STOPPED
from self_refine.voting import Tally, tally

__all__ = [
    "attempt_votes",
    "best_attempt",
    "best_candidate",
    "chosen_attempt",
    "tree_attempt",
    "vote_count",
    "voted_attempt",
    "voted_candidate",
    "vote_so_far",
    "why_kept",
]

_C = TypeVar("_C", bound=Candidate)


def best_attempt(attempts: Sequence[Attempt]) -> Attempt | None:
    """The highest-scoring attempt; the last when none has a score.

    Ties go to the earlier, and among those the shorter, draft: a later draft
    must score higher to be preferred, so growth never wins a tie. Empty drafts
    (no usable reply) are candidates only when nothing else is.
    """
    usable = [a for a in attempts if a["draft"].strip()] or list(attempts)
    scored = [a for a in usable if a["critique"].get("score") is not None]
    if not scored:
        return usable[-1] if usable else None
    return max(scored, key=lambda a: (a["critique"]["score"], -a["iteration"], -len(a["draft"])))


def chosen_attempt(attempts: Sequence[Attempt], select: str) -> Attempt | None:
    """The attempt a run answers with: the last for `select="last"`; in a run that samples
    or searches, the draft `voted_candidate` (`select="vote"`) or `best_candidate` picks
    among all its drafts (`tree_attempt`); in one that refines, for `select="vote"` the
    attempt `voted_attempt` picks, else the best (`best_attempt`)."""
    if select == "last":
        return attempts[-1] if attempts else None
    pick = voted_candidate if select == "vote" else best_candidate
    if (in_tree := tree_attempt(attempts, pick)) is not None:
        return in_tree
    if select == "vote" and (voted := voted_attempt(attempts)) is not None:
        return voted
    return best_attempt(attempts)


def voted_attempt(attempts: Sequence[Attempt]) -> Attempt | None:
    """The answer of a vote over one chain of drafts (a run that refines): the attempt that
    first stated the most-voted final answer (on a tie, the answer reached first), the
    verified ones voting alone when there are any. None when no attempt states a final
    answer."""
    voters, votes = _attempts_vote(attempts)
    return None if votes is None else attempts[voters[votes.drafts[0]]]


def attempt_votes(attempts: Sequence[Attempt]) -> Tally | None:
    """How the attempts of one chain that vote (see `voted_attempt`) voted; None when none
    states a final answer."""
    return _attempts_vote(attempts)[1]


def _attempts_vote(attempts: Sequence[Attempt]) -> tuple[list[int], Tally | None]:
    drafts = [a["draft"] for a in attempts]
    return _vote(drafts, [a["critique"].get("verified") is True for a in attempts])


def _candidate_rank(candidate: Candidate) -> tuple[bool, bool, float, float, int]:
    score = candidate["critique"].get("score")
    checked = candidate.get("checked")
    place = place_of(candidate)
    return (
        bool(candidate["draft"].strip()),
        candidate.get("verified") is True,
        -1.0 if checked is None else float(checked),
        -1.0 if score is None else float(score),
        -(candidate["index"] if place is None else place.node),
    )


def best_candidate(candidates: Sequence[_C]) -> _C | None:
    """The candidate to keep: a usable reply the verifiers passed, else the one they scored
    highest, then the critic's score; ties go to the lower index (candidate 0 is the
    model's own sample). None when every reply was rejected."""
    usable = [c for c in candidates if c["draft"].strip()]
    return max(usable, key=_candidate_rank) if usable else None


def _vote(drafts: Sequence[str], verified: Sequence[bool]) -> tuple[list[int], Tally | None]:
    """Which drafts vote (their positions) and how they voted: the usable ones the verifiers
    passed, when any did (a checked draft outweighs any number a check rejected), else every
    usable one; the tally None when none states a final answer."""
    usable = [i for i, draft in enumerate(drafts) if draft.strip()]
    voters = [i for i in usable if verified[i]] or usable
    return voters, tally([drafts[i] for i in voters])


def _candidates_vote(candidates: Sequence[Candidate]) -> tuple[list[int], Tally | None]:
    return _vote([c["draft"] for c in candidates], [c.get("verified") is True for c in candidates])


def vote_count(candidates: Sequence[Candidate]) -> Tally | None:
    """How the candidates that vote (see `voted_candidate`) voted; None when none states a
    final answer."""
    return _candidates_vote(candidates)[1]


def vote_so_far(drafts: Sequence[Mapping[str, Any]]) -> Tally | None:
    """How `drafts` (a run's drafts so far, in the order made) vote, as `voted_candidate`
    counts them; None when none states a final answer."""
    return _vote([d["draft"] for d in drafts], [d.get("verified") is True for d in drafts])[1]


def voted_candidate(candidates: Sequence[_C]) -> _C | None:
    """The candidate a vote answers with: the one that first stated the most-voted final
    answer (on a tie, the answer reached first), in the order `candidates` come (a run's
    drafts by node: the order they were made); the best (`best_candidate`) of the voters
    when none states a final answer.

    When the verifiers passed some drafts, only those vote.
    """
    voters, votes = _candidates_vote(candidates)
    if votes is None:
        return best_candidate([candidates[i] for i in voters])
    return candidates[voters[votes.drafts[0]]]


def tree_attempt(
    attempts: Sequence[Attempt],
    pick: Callable[[Sequence[DraftNode]], DraftNode | None] = best_candidate,
    drafts: Sequence[DraftNode] | None = None,
) -> Attempt | None:
    """The draft `pick` chooses among every draft of a run that samples or searches (`drafts`:
    those it may choose from, by default all of `attempts`' drafts), as an attempt; None for
    a run whose drafts are no tree (one that refines).

    Not only each step's pick: a step's other replies are drafts of the tree too.
    """
    chosen = pick(drafts_of(attempts) if drafts is None else drafts)
    return None if chosen is None else as_attempt(attempts, chosen)


def why_kept(chosen: Candidate, candidates: Sequence[Candidate]) -> str:
    """Why `best_candidate` kept `chosen` among a step's `candidates`, in a few words."""
    others = [c for c in candidates if c is not chosen]
    stopped = sum(1 for c in others if "rejected" in c and c["rejected"]["reason"] == STOPPED)
    usable = [c for c in others if c["draft"].strip()]
    if chosen.get("verified") is True and stopped:
        return (
            f"the verifiers passed it first; {_count(stopped, 'other was', 'others were')} stopped"
        )
    if not usable:
        return "the only usable reply" + (" (the others were rejected)" if others else "")
    rival = max(usable, key=_candidate_rank)
    mine, theirs = _candidate_rank(chosen), _candidate_rank(rival)
    checked, score = chosen.get("checked"), chosen["critique"].get("score")
    if mine[1] != theirs[1]:
        return "the verifiers passed it, and no other"
    if mine[2] != theirs[2] and checked is not None:
        return f"the verifiers scored it highest ({float(checked):.2f})"
    if mine[3] != theirs[3] and score is not None:
        return f"the critic scored it highest ({float(score):.2f})"
    return f"it ties with candidate {rival['index']}; ties go to the lower index"


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"
