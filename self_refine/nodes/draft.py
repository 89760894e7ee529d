"""What a draft step writes: a reply taken as the draft, or a rejected one and what next.

The generate and refine nodes ask their model once per step. A rejected reply
(see `models/hygiene.py`) is recorded with its reason in `draft_rejected` and the
node asks once more, as a step of its own (`ask_again`), which Studio shows:
asked what was wrong with the reply, resampled when it repeated the draft. If
that reply is rejected too, the previous draft is kept (the first draft stays
empty) and the critique records both replies in its attempt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from self_refine.models.calls import DraftReply
from self_refine.models.hygiene import DraftGuard
from self_refine.state import RefineState, RejectedReply, add_usage, changed_only

__all__ = ["ASKS_PER_DRAFT", "DraftRequest", "draft_update", "rejected_reply"]

ASKS_PER_DRAFT = 2
"""How many replies a draft step may ask for: the first, and one more after a rejection."""

FLAGS = frozenset({"draft_problems", "draft_rejected", "ask_again", "stop_reason"})
"""A draft step's bookkeeping, written only when it changes (most steps leave it as it was)."""


class DraftRequest(NamedTuple):
    """One request for a draft: whom to ask, what to send, and what the reply is held to."""

    model: Any
    messages: list[BaseMessage]
    config: RunnableConfig
    guard: DraftGuard
    role: str
    iteration: int


def rejected_reply(state: Mapping[str, Any]) -> RejectedReply | None:
    """The rejected reply this step asks again after, or None for a first ask."""
    rejected = state.get("draft_rejected") or []
    return rejected[-1] if state.get("ask_again") and rejected else None


def draft_update(
    state: RefineState,
    reply: DraftReply,
    *,
    role: str,
    kept: str,
    budget: int | None = None,
) -> dict[str, Any]:
    """The step's writes: the draft (`kept` when the reply was rejected), and its bookkeeping.

    Usage, problems and rejected replies add up over the asks of one draft. A rejected
    reply is asked again once; with a token `budget` (a refiner's: a first draft is asked
    again whatever is left, as without one the run has no answer), only when what is left
    holds another reply as long (asked again, the model reads the same request and the
    rejected reply besides, so it costs at least as much). The flags among the writes
    (`FLAGS`) are left out where they would not change.
    """
    again = bool(state.get("ask_again"))
    problems = list(state.get("draft_problems") or []) if again else []
    rejected = list(state.get("draft_rejected") or []) if again else []
    asks = len(rejected) + 1
    usage = add_usage(state.get("usage"), reply.usage)
    room = budget is None or usage["total_tokens"] + reply.usage["total_tokens"] <= budget
    ask_again = reply.rejected is not None and asks < ASKS_PER_DRAFT and room
    if reply.problem:
        if ask_again:
            problems.append(f"{reply.problem}; asked again")
        else:
            keep = (
                "the previous draft was kept" if role == "refiner" else "the first draft is empty"
            )
            short = "" if room or asks >= ASKS_PER_DRAFT else " (no budget left to ask again)"
            problems.append(f"{reply.problem}; {keep}{short}")
    if reply.rejected is not None:
        rejected.append(reply.rejected)
    writes = {
        "draft": reply.text or kept,
        "draft_usage": add_usage(state.get("draft_usage") if again else None, reply.usage),
        "draft_problems": problems,
        "draft_rejected": rejected,
        "ask_again": ask_again,
        "usage": usage,
        "stop_reason": None,
    }
    return changed_only(state, writes, FLAGS)
