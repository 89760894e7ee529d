"""What a run would have answered had it been given a smaller token budget: the anytime reading.

One run per item and strategy at the largest budget; the answer at a smaller budget b
is read from its attempts by replaying the library's own budget rules (`stopping.py`)
on them, so that it is the answer a run given b answers when the model's replies are the
same:

- the run's replies are taken in order, a step of candidates one candidate at a time in
  the order of their index (the attempt's `usage` is the whole step's, each candidate in
  `candidates` has its own, and the picked one's is the rest); each reply is its draft
  and its critique (`critique_usage`, the critique's part of `usage`);
- the first step is read whatever it costs (a run writes its first draft whatever is
  left); before each later step the run stops as `TokenBudget` stops it, and the step is
  as wide as `step_width` lets it be (its first replies by index);
- a reply's critique is read only when what is left after its draft holds a critique
  (`critique_short`, from `critique_cost` of the steps read: under a budget the library
  asks its critic only then); else the reply is read as the library records it, unjudged
  (no score, not done, the verifiers' verdict kept: `unjudged`), and the run stops after
  that step ("token_budget");
- the answer is the library's own choice among the steps read (`best_attempt`;
  `voted_attempt` for `select="vote"`); a step read in part (narrower, or unjudged
  replies) records the library's pick among its replies read (`best_candidate`), and the
  reading ends after it; a run that samples or searches answers with the pick among all
  its drafts read (`best_candidate`, or `voted_candidate`), as its finalize does.

One gap is left, for lack of a record: a refine step that asked again after a rejected
reply is read as one draft (what its two asks cost together), where a run given less
might not have asked again. Records made before replies kept `critique_usage` read as if
every critique fit.

What a reading spent is told three ways: the tokens read (prompt and reply, the budget's
unit), the reply tokens among them (`output_tokens_at`: what the model generated, pass@t's
tokens sampled) and the model requests among them (`calls_at`), counted from the replies
read as the library records them: each reply (a rejected reply asked again is a second),
each critique the LLM critic wrote (a critique whose source names `llm`: not one the
budget left could not hold; a draft critiqued again unchanged reuses its critique with no
call), and each critique asked again (in plain text after an unreadable structured reply,
or after an empty one). On every budget run committed before this count, it equals the
requests the run's reply cache counted (`asked`: calls and hits) at the largest budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from self_refine.nodes.ranking import best_attempt, best_candidate, voted_attempt, voted_candidate
from self_refine.stopping import (
    UNASKED,
    StopView,
    TokenBudget,
    critique_cost,
    critique_short,
    reply_cost,
    step_width,
)

__all__ = [
    "Reading",
    "answer_at",
    "calls_at",
    "output_tokens_at",
    "read_nodes",
    "tokens_of",
    "unjudged",
]


@dataclass(frozen=True)
class Reading:
    """The answer at a budget (None: nothing was read), the tokens spent and the steps read."""

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


def _output(usage: dict[str, Any] | None) -> int:
    return int((usage or {}).get("output_tokens", 0))


def _less(usage: dict[str, Any] | None, part: dict[str, Any] | None) -> dict[str, int]:
    usage, part = usage or {}, part or {}
    keys = ("input_tokens", "output_tokens", "total_tokens")
    return {k: max(int(usage.get(k, 0)) - int(part.get(k, 0)), 0) for k in keys}


@dataclass(frozen=True)
class _Reply:
    """One reply of a step as read: its record (the step's pick as a candidate), its usage
    and its critique's, and whether it is the pick."""

    record: dict[str, Any]
    usage: dict[str, Any]
    critique_usage: dict[str, Any]
    pick: bool


def _replies(attempt: dict[str, Any]) -> list[_Reply]:
    """The step's replies in index order; a step of one reply is that reply."""
    if "candidates" not in attempt:
        return [
            _Reply(attempt, attempt.get("usage") or {}, attempt.get("critique_usage") or {}, True)
        ]
    others = list(attempt["candidates"])
    replies = [
        _Reply(c, c.get("usage") or {}, c.get("critique_usage") or {}, False) for c in others
    ]
    if "candidate" in attempt:
        usage = attempt.get("usage") or {}
        critique = attempt.get("critique_usage") or {}
        for other in replies:
            usage, critique = _less(usage, other.usage), _less(critique, other.critique_usage)
        picked: dict[str, Any] = {
            "index": int(attempt["candidate"]),
            "draft": attempt["draft"],
            "critique": attempt["critique"],
            "usage": usage,
            "critique_usage": critique,
            "verified": attempt["critique"].get("verified"),
            "checked": attempt.get("checked"),
        }
        picked.update({k: attempt[k] for k in ("node", "parent", "problems") if k in attempt})
        replies.append(_Reply(picked, usage, critique, True))
    return sorted(replies, key=lambda r: int(r.record.get("index", 0)))


def unjudged(record: dict[str, Any], why: str) -> dict[str, Any]:
    """A reply (an attempt or a candidate) as the library records it when its critic was not
    asked: no score, not done, the verifiers' verdict kept (False when one failed it), and
    why (see `self_refine.critics.combined.unasked_critique`)."""
    verified = False if record["critique"].get("verified") is False else None
    critique = {
        "feedback": [why],
        "score": None,
        "done": False,
        "source": UNASKED,
        "verified": verified,
    }
    changed = {**record, "critique": critique}
    if "index" in record:
        changed["verified"] = verified
    return changed


@dataclass
class _Replay:
    steps: list[dict[str, Any]]
    tokens: int = 0
    output: int = 0
    calls: int = 0


def _step(
    attempt: dict[str, Any], read: list[_Reply], steps: list[dict[str, Any]]
) -> dict[str, Any]:
    """The step a run given less would have recorded, having read `read` of its replies."""
    if "candidates" not in attempt:
        return read[0].record
    records = [r.record for r in read]
    chosen = best_candidate(records)  # type: ignore[type-var]
    usage = {
        k: sum(int(r.usage.get(k, 0)) for r in read)
        for k in ("input_tokens", "output_tokens", "total_tokens")
    }
    critique = {
        k: sum(int(r.critique_usage.get(k, 0)) for r in read)
        for k in ("input_tokens", "output_tokens", "total_tokens")
    }
    if chosen is None:  # every reply read was rejected: the previous draft stays
        before = steps[-1] if steps else {"draft": "", "critique": {}}
        return {
            "iteration": attempt["iteration"],
            "draft": before["draft"],
            "critique": before["critique"],
            "usage": usage,
            "critique_usage": critique,
            "candidates": records,
        }
    step = {
        "iteration": attempt["iteration"],
        "draft": chosen["draft"],
        "critique": chosen["critique"],
        "usage": usage,
        "critique_usage": critique,
        "candidates": [r for r in records if r is not chosen],
        "candidate": chosen["index"],
        "checked": chosen.get("checked"),
    }
    step.update({k: chosen[k] for k in ("node", "parent") if k in chosen})
    return step


def _replay(attempts: Sequence[dict[str, Any]], budget: int | None) -> _Replay:
    """The steps a run given `budget` tokens (None: the run as it went) would have
    recorded, what they cost and what the model wrote for them (see the module docstring)."""
    done = _Replay([])
    for attempt in attempts:
        replies = _replies(dict(attempt))
        width = len(replies)
        if done.steps and budget is not None:
            spent = {"input_tokens": 0, "output_tokens": 0, "total_tokens": done.tokens}
            view = StopView(done.steps, int(done.steps[-1]["iteration"]), spent)  # type: ignore[arg-type]
            if TokenBudget(budget)(view):
                break
            width = step_width(width, budget, done.tokens, reply_cost(done.steps))  # type: ignore[arg-type]
        share = (budget - done.tokens) / max(width, 1) if budget is not None else 0.0
        cost = critique_cost(done.steps)
        previous = str(done.steps[-1]["draft"]) if done.steps else None
        single = "candidates" not in attempt
        read: list[_Reply] = []
        short = False
        for reply in replies[:width]:
            asked = tokens_of(reply.critique_usage)
            drafted = tokens_of(reply.usage) - asked
            why = critique_short(budget, share - drafted, drafted, cost) if asked > 0 else None
            if why is not None:
                short = True
                draft_usage = _less(reply.usage, reply.critique_usage)
                record = {**unjudged(reply.record, why), "usage": draft_usage}
                record["critique_usage"] = {k: 0 for k in draft_usage}
                reply = _Reply(record, draft_usage, record["critique_usage"], reply.pick)
            done.tokens += tokens_of(reply.usage)
            done.output += _output(reply.usage)
            done.calls += _calls_of(reply.record, single, previous)
            read.append(reply)
        whole = width == len(replies) and not short
        done.steps.append(dict(attempt) if whole else _step(dict(attempt), read, done.steps))
        if not whole:
            break
    return done


def _is_tree(attempts: Sequence[dict[str, Any]]) -> bool:
    return any("node" in a or any("node" in c for c in a.get("candidates", [])) for a in attempts)


def answer_at(attempts: Sequence[dict[str, Any]], budget: int, select: str = "best") -> Reading:
    """The answer a run given `budget` tokens would have answered (`select`: the run's
    setting, "best" or "vote"), read from the attempts of a run given more."""
    done = _replay(attempts, budget)
    if _is_tree(attempts):
        return Reading(_best_of_tree(done.steps, select), done.tokens, len(done.steps))
    voted = voted_attempt(done.steps) if select == "vote" else None  # type: ignore[arg-type]
    return Reading(voted or best_attempt(done.steps), done.tokens, len(done.steps))  # type: ignore[arg-type]


def output_tokens_at(attempts: Sequence[dict[str, Any]], budget: int) -> int:
    """The reply tokens a run given `budget` tokens would have had the model write (its
    drafts' and its critiques'): pass@t's tokens sampled."""
    return _replay(attempts, budget).output


def calls_at(attempts: Sequence[dict[str, Any]], budget: int | None = None) -> int:
    """The model requests a run given `budget` tokens (None: the run as it went) would have
    made: each reply, each critique the LLM critic wrote, any reply or critique asked again."""
    return _replay(attempts, budget).calls


def _calls_of(record: dict[str, Any], single: bool, previous: str | None) -> int:
    """A reply's requests: the reply, its critique when the LLM critic wrote one (in a step
    of one reply, not when the draft is the step's before, whose critique it reuses), and
    every reply or critique asked again (the problems say so)."""
    critique = record.get("critique") or {}
    critiqued = "llm" in str(critique.get("source") or "").split("+")
    if single:
        critiqued = critiqued and str(record.get("draft", "")) != previous
    problems = [str(p) for p in record.get("problems") or []]
    again = sum("asked again" in p or p.endswith(" twice") for p in problems)
    return 1 + int(critiqued) + again


def read_nodes(attempts: Sequence[dict[str, Any]], budget: int) -> set[int]:
    """The nodes of a run that samples or searches that a run given `budget` would have made."""
    steps = _replay(attempts, budget).steps
    drafts = [d for s in steps for d in (s, *s.get("candidates", []))]
    return {int(d["node"]) for d in drafts if d.get("node") is not None}


def _best_of_tree(steps: Sequence[dict[str, Any]], select: str = "best") -> dict[str, Any] | None:
    """A run that samples or searches answers with the best of all its drafts (the library's
    `best_candidate` over every node, as its finalize does; with `select="vote"`, its
    `voted_candidate`)."""
    drafts = []
    for attempt in steps:
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
