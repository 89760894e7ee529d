"""The critique node: judge the draft, record the attempt, and decide whether to stop."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.runtime import Runtime

from self_refine.context import RefineContext
from self_refine.critics import CritiqueRequest, CritiqueResult
from self_refine.models.calls import model_errors
from self_refine.nodes.parts import Parts, RunPlan
from self_refine.nodes.runnable import Node
from self_refine.nodes.search import (
    drafts_made,
    drafts_of,
    initial_search,
    plan_step,
    record_step,
    step_width,
)
from self_refine.state import Attempt, Candidate, Critique, RefineState, Usage, add_usage
from self_refine.stopping import StopView, first_stop

__all__ = ["critique_request", "make_critique", "step_writes"]


def make_critique(parts: Parts) -> Node:
    """Build the node that critiques the latest draft and evaluates the stop policies."""

    def critique(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Critique the latest draft against the task."""
        plan = parts.plan(runtime.context)
        result = _repeat(state)
        if result is None:
            critic = plan.critic
            with model_errors("critic", critic.model):
                result = critic.invoke(critique_request(state), _trace(plan, state))
        return _record(plan, state, result)

    async def acritique(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Critique the latest draft against the task."""
        plan = parts.plan(runtime.context)
        result = _repeat(state)
        if result is None:
            critic = plan.critic
            with model_errors("critic", critic.model):
                result = await critic.ainvoke(critique_request(state), _trace(plan, state))
        return _record(plan, state, result)

    return Node(critique, acritique, name="critique")


def _trace(plan: RunPlan, state: RefineState) -> Any:
    return plan.trace("critique", "critic", plan.critic.model, state.get("iteration", 0))


def critique_request(
    state: Mapping[str, Any], draft: str | None = None, iteration: int | None = None
) -> CritiqueRequest:
    """What the critic is asked to judge: the state's draft, or `draft` of step `iteration`."""
    return CritiqueRequest(
        task=state["task"],
        draft=state.get("draft", "") if draft is None else draft,
        iteration=state.get("iteration", 0) if iteration is None else iteration,
        attempts=state.get("attempts") or [],
        reference=state.get("reference"),
    )


def _repeat(state: RefineState) -> CritiqueResult | None:
    """The same draft gets the same critique, without another model call."""
    attempts = state.get("attempts") or []
    if attempts and attempts[-1]["draft"] == state.get("draft", ""):
        previous = Critique.model_validate(attempts[-1]["critique"])
        return CritiqueResult(previous, add_usage())
    return None


def _record(plan: RunPlan, state: RefineState, result: CritiqueResult) -> dict[str, Any]:
    attempt: Attempt = {
        "iteration": state.get("iteration", 0),
        "draft": state.get("draft", ""),
        "critique": result.critique.model_dump(),
        "usage": add_usage(state.get("draft_usage"), result.usage),
    }
    problems = [*(state.get("draft_problems") or []), *result.problems]
    if problems:
        attempt["problems"] = problems
    if state.get("draft_rejected"):
        attempt["rejected"] = list(state["draft_rejected"])
    if plan.settings.strategy == "refine":
        return step_writes(plan, state, attempt, result.usage)
    # A run that samples or searches from a given draft: that draft is its first node.
    attempt["node"], attempt["parent"], attempt["checked"] = 0, None, result.checked
    return step_writes(plan, state, attempt, result.usage, drafts_of([attempt]))


def step_writes(
    plan: RunPlan,
    state: Mapping[str, Any],
    attempt: Attempt,
    spent: Usage,
    replies: Sequence[Candidate] = (),
) -> dict[str, Any]:
    """The writes that record a critiqued attempt, name the stop reason (None: go on) and
    say what the next step asks for.

    `spent` is what the step's calls cost beyond what the state's usage already counts;
    `replies` are the step's judged replies (a run that samples or searches learns from
    them and plans its next step: `nodes/search.py`). The next step asks for as many
    replies as the token budget holds (`step_width`).
    """
    usage = add_usage(state.get("usage"), spent)
    earlier: list[Attempt] = list(state.get("attempts") or [])
    view = StopView([*earlier, attempt], attempt["iteration"], usage)
    stop = first_stop(plan.policies, view)
    settings = plan.settings
    width = step_width(
        settings.candidates,
        settings.max_tokens_total,
        usage["total_tokens"],
        drafts_made([*earlier, attempt]),
    )
    writes: dict[str, Any] = {
        "attempts": [attempt],
        "critique": attempt["critique"],
        "usage": usage,
        "stop_reason": stop,
        "fan_out": width,
    }
    if settings.strategy == "refine":
        return writes
    known = [draft["draft"] for draft in drafts_of(earlier)]
    search = record_step(state.get("search") or initial_search(), replies, known)
    step = attempt["iteration"] + 1
    following = (
        []
        if stop
        else plan_step(search, width, strategy=settings.strategy, task=state["task"], step=step)
    )
    return {**writes, "search": search, "plan": following, "fan_out": len(following)}
