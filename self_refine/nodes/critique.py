"""The critique node: judge the draft, record the attempt, and decide whether to stop."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime

from self_refine.context import RefineContext
from self_refine.critics import CritiqueRequest, CritiqueResult
from self_refine.models.calls import model_errors
from self_refine.nodes.plan import Parts, RunPlan
from self_refine.nodes.runnable import Node
from self_refine.state import Attempt, Critique, RefineState, Usage, add_usage
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
    return step_writes(plan, state, attempt, result.usage)


def step_writes(
    plan: RunPlan, state: Mapping[str, Any], attempt: Attempt, spent: Usage
) -> dict[str, Any]:
    """The writes that record a critiqued attempt and name the stop reason (None: go on).

    `spent` is what the step's calls cost beyond what the state's usage already counts.
    """
    usage = add_usage(state.get("usage"), spent)
    view = StopView([*(state.get("attempts") or []), attempt], attempt["iteration"], usage)
    return {
        "attempts": [attempt],
        "critique": attempt["critique"],
        "usage": usage,
        "stop_reason": first_stop(plan.policies, view),
        "fan_out": plan.settings.candidates,
    }
