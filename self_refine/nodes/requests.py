"""What a draft step and a critique ask: the requests the nodes and the candidate branches
build the same way (`generate`, `refine`, `critique`, `candidate`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from self_refine.critics import CritiqueRequest
from self_refine.models.calls import asking_again
from self_refine.models.hygiene import feedback_of
from self_refine.nodes.draft import DraftRequest, rejected_reply
from self_refine.prompts import generate_messages, refine_messages
from self_refine.prompts.forms import RefineForm
from self_refine.settings.plan import RunPlan
from self_refine.stopping import critique_short

__all__ = ["critique_request", "generate_request", "refine_request", "unasked_why"]


def generate_request(plan: RunPlan, state: Mapping[str, Any]) -> DraftRequest:
    """The request for a first draft (asked again after a rejected reply)."""
    model = plan.model("generator")
    config = plan.trace("generate", "generator", model, 0)
    messages = generate_messages(plan.prompts, state["task"])
    rejected = rejected_reply(state)
    if rejected is not None:
        model, messages = asking_again(model, messages, rejected, config)
    guard = plan.guard(state["task"], sent=messages)
    return DraftRequest(model, messages, config, guard, "generator", 0)


def refine_request(
    plan: RunPlan, state: Mapping[str, Any], form: RefineForm | None = None
) -> DraftRequest:
    """The request for the next draft, from the critique and the earlier attempts.

    Laid out in `form`, else the run's; a step that asks again after a reply that was
    its draft unchanged asks in the fresh form (the task and the feedback, no draft to
    copy), at a new draw.
    """
    attempts = state.get("attempts") or []
    rejected = rejected_reply(state)
    iteration = state.get("iteration", 0) + (0 if rejected else 1)
    copied = rejected is not None and rejected["reason"] == "unchanged"
    model = plan.model("refiner")
    config = plan.trace("refine", "refiner", model, iteration)
    messages = refine_messages(
        plan.prompts,
        state["task"],
        attempts,
        state.get("critique"),
        plan.settings.history_window,
        "fresh" if copied else form or plan.form,
    )
    if rejected is not None:
        model, messages = asking_again(model, messages, rejected, config)
    previous = attempts[-1]["draft"] if attempts else None
    guard = plan.guard(state["task"], feedback_of(attempts, _items(state)), previous, messages)
    return DraftRequest(model, messages, config, guard, "refiner", iteration)


def _items(state: Mapping[str, Any]) -> list[str]:
    """The feedback in the critique channel (a person may have edited it)."""
    critique = state.get("critique") or {}
    return [str(item) for item in critique.get("feedback") or []]


def critique_request(
    state: Mapping[str, Any],
    draft: str | None = None,
    iteration: int | None = None,
    *,
    unasked: str | None = None,
) -> CritiqueRequest:
    """What the critic is asked to judge: the state's draft, or `draft` of step `iteration`
    (`unasked`: why its explaining critic is not to be asked, see `unasked_why`)."""
    return CritiqueRequest(
        task=state["task"],
        draft=state.get("draft", "") if draft is None else draft,
        iteration=state.get("iteration", 0) if iteration is None else iteration,
        attempts=state.get("attempts") or [],
        reference=state.get("reference"),
        unasked=unasked,
    )


def unasked_why(plan: RunPlan, left: float, draft_tokens: int, cost: float | None) -> str | None:
    """Why a draft's critic is not to be asked: the run's token budget, `left` tokens of it
    after the draft (which cost `draft_tokens`), cannot hold a critique expected to cost
    `cost` (`stopping.critique_short`). None when it fits, with no budget, and when asking
    costs no tokens (verifiers, a person)."""
    if not plan.critic_spends:
        return None
    return critique_short(plan.settings.max_tokens_total, left, draft_tokens, cost)
