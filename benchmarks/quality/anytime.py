"""What a run would have answered had it stopped at a token budget: the anytime reading.

One run per item and strategy at the largest budget; the answer at a smaller budget b
is read from its attempts. The run's replies are taken in order, each with its tokens
(prompt and reply, its critique's included): a step of one reply is one unit; a step of
candidates is one unit per candidate, in the order of their index (the attempt's
`usage` is the whole step's, each candidate in `candidates` has its own, and the picked
one's is the rest). The reading stops at the first unit that would take the total past
b. The answer is the library's own choice (`best_attempt`) among the steps read whole;
a step read in part counts as the candidates read, the library's pick among them
(`best_candidate`): the pick of all of them when it is among those read, as the rank
is one order. A run that votes (`select="vote"`) answers with the vote among the drafts
read (`voted_candidate`; over one refine chain, `voted_attempt`), as its finalize does
among all of them.

What a reading spent is told three ways: the tokens read (prompt and reply, the budget's
unit), the reply tokens among them (`output_tokens_at`: what the model generated, pass@t's
tokens sampled) and the model requests among them (`calls_at`), counted from the attempts
as the library records them: each reply (a rejected reply asked again is a second), each
critique the LLM critic wrote (a critique whose source names `llm`; a draft critiqued
again unchanged reuses its critique with no call), and each critique asked again (in plain
text after an unreadable structured reply, or after an empty one). On every budget run
committed before this count, it equals the requests the run's reply cache counted
(`asked`: calls and hits) at the largest budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from self_refine.nodes.ranking import best_attempt, best_candidate, voted_attempt, voted_candidate

__all__ = ["Reading", "answer_at", "calls_at", "output_tokens_at", "tokens_of"]


@dataclass(frozen=True)
class Reading:
    """The answer at a budget (None: nothing was read whole), and the tokens read."""

    answer: dict[str, Any] | None
    tokens: int
    attempts: int


def tokens_of(usage: dict[str, Any] | None) -> int:
    """Prompt and reply tokens of a usage record."""
    usage = usage or {}
    total = usage.get("total_tokens")
    if total:
        return int(total)
    return int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))


def _units(attempt: dict[str, Any]) -> list[tuple[int, dict[str, Any] | None]]:
    """The step's replies in order with their tokens: (tokens, candidate), None for the pick."""
    if "candidates" not in attempt:
        return [(tokens_of(attempt.get("usage")), None)]
    others = list(attempt["candidates"])
    rest = tokens_of(attempt.get("usage")) - sum(tokens_of(c.get("usage")) for c in others)
    units: list[tuple[int, int, dict[str, Any] | None]] = [
        (int(c["index"]), tokens_of(c.get("usage")), c) for c in others
    ]
    if "candidate" in attempt:
        units.append((int(attempt["candidate"]), max(rest, 0), None))
    return [(tokens, candidate) for _, tokens, candidate in sorted(units, key=lambda u: u[0])]


def _part(attempt: dict[str, Any], read: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The attempt a step of candidates read in part would have recorded (None: no reply)."""
    if None in read:  # the step's pick was read: it is the pick of any part holding it
        return attempt
    chosen = best_candidate([c for c in read if c is not None])  # type: ignore[misc]
    if chosen is None:
        return None
    return {
        "iteration": attempt["iteration"],
        "draft": chosen["draft"],
        "critique": chosen["critique"],
        "usage": chosen["usage"],
        "candidate": chosen["index"],
    }


def answer_at(attempts: Sequence[dict[str, Any]], budget: int, select: str = "best") -> Reading:
    """The answer the run would have given had it stopped at `budget` tokens (`select`: the
    run's setting, "best" or "vote")."""
    whole: list[dict[str, Any]] = []
    spent = 0
    for attempt in attempts:
        read: list[dict[str, Any] | None] = []
        for tokens, candidate in _units(attempt):
            if spent + tokens > budget:
                break
            spent += tokens
            read.append(candidate)
        else:
            whole.append(attempt)
            continue
        part = _part(attempt, read) if read else None
        if part is not None:
            whole.append(part)
        if any("node" in a for a in attempts):
            nodes = read_nodes(attempts, budget)
            return Reading(_best_of_tree(attempts, nodes, select), spent, len(whole))
        break
    if any("node" in a for a in attempts):
        return Reading(_best_of_tree(attempts, None, select), spent, len(whole))
    chain: list[Any] = whole
    voted = voted_attempt(chain) if select == "vote" else None
    return Reading(voted or best_attempt(chain), spent, len(whole))


def output_tokens_at(attempts: Sequence[dict[str, Any]], budget: int) -> int:
    """The reply tokens among the replies read within `budget` (prompt and reply) tokens:
    what the model generated for the answer at that budget (pass@t's tokens sampled)."""
    spent = generated = 0
    for attempt in attempts:
        for tokens, candidate in _units(attempt):
            if spent + tokens > budget:
                return generated
            spent += tokens
            generated += _output_of(attempt, candidate)
    return generated


def _output_of(attempt: dict[str, Any], candidate: dict[str, Any] | None) -> int:
    """A unit's reply tokens: a candidate's own; the step's pick, what the others leave."""
    if candidate is not None:
        return int((candidate.get("usage") or {}).get("output_tokens", 0))
    others = sum(
        int((c.get("usage") or {}).get("output_tokens", 0)) for c in attempt.get("candidates", [])
    )
    return max(int((attempt.get("usage") or {}).get("output_tokens", 0)) - others, 0)


def calls_at(attempts: Sequence[dict[str, Any]], budget: int | None = None) -> int:
    """The model requests among the replies read within `budget` (prompt and reply) tokens
    (None: all of them), each reply's critique and any reply or critique asked again."""
    spent = calls = 0
    previous: str | None = None
    for attempt in attempts:
        for tokens, candidate in _units(attempt):
            if budget is not None and spent + tokens > budget:
                return calls
            spent += tokens
            calls += _calls_of(attempt, candidate, previous)
        previous = str(attempt.get("draft", ""))
    return calls


def _calls_of(
    attempt: dict[str, Any], candidate: dict[str, Any] | None, previous: str | None
) -> int:
    """A unit's requests: its reply, its critique when the LLM critic wrote one, and every
    reply or critique asked again (the problems say so)."""
    drafted = candidate if candidate is not None else attempt
    critique = drafted.get("critique") or {}
    critiqued = "llm" in str(critique.get("source") or "").split("+")
    if candidate is None and "candidates" not in attempt:  # a step of one reply
        critiqued = critiqued and str(attempt.get("draft", "")) != previous
    problems = [str(p) for p in drafted.get("problems") or []]
    again = sum("asked again" in p or p.endswith(" twice") for p in problems)
    return 1 + int(critiqued) + again


def read_nodes(attempts: Sequence[dict[str, Any]], budget: int) -> set[int]:
    """The nodes of a run that samples or searches read within `budget` tokens."""
    read: set[int] = set()
    spent = 0
    for attempt in attempts:
        for tokens, candidate in _units(attempt):
            if spent + tokens > budget:
                return read
            spent += tokens
            node = (candidate or attempt).get("node")
            if node is not None:
                read.add(int(node))
    return read


def _best_of_tree(
    attempts: Sequence[dict[str, Any]], nodes: set[int] | None, select: str = "best"
) -> dict[str, Any] | None:
    """A run that samples or searches answers with the best of all its drafts (the library's
    `best_candidate` over every node, as its finalize does; with `select="vote"`, its
    `voted_candidate`), here those read (`nodes`)."""
    drafts = []
    for attempt in attempts:
        picked = {
            "index": attempt.get("candidate", 0),
            "node": attempt.get("node"),
            "draft": attempt["draft"],
            "critique": attempt["critique"],
            "usage": attempt["usage"],
            "verified": attempt["critique"].get("verified"),
            "checked": attempt.get("checked"),
            "iteration": attempt["iteration"],
        }
        others = [{**c, "iteration": attempt["iteration"]} for c in attempt.get("candidates", [])]
        drafts += [d for d in (picked, *others) if d.get("node") is not None]
    if nodes is not None:
        drafts = [d for d in drafts if d["node"] in nodes]
    drafts.sort(key=lambda d: d["node"])  # the order they were made, as the run's own list
    pick = voted_candidate if select == "vote" else best_candidate
    chosen = pick(drafts)  # type: ignore[arg-type]
    if chosen is None:
        return None
    return {
        "iteration": chosen["iteration"],
        "draft": chosen["draft"],
        "critique": chosen["critique"],
        "usage": chosen["usage"],
    }
