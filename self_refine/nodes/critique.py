"""The critique node: judge the draft, record the attempt, and decide whether to stop."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from self_refine.context import RefineContext
from self_refine.critics import CritiqueRequest, CritiqueResult
from self_refine.models.calls import model_errors
from self_refine.nodes.plan import Loop, RunPlan
from self_refine.nodes.runnable import Node
from self_refine.state import Attempt, Critique, RefineState, add_usage
from self_refine.stopping import StopView, first_stop

__all__ = ["make_critique"]


def make_critique(loop: Loop) -> Node:
    """Build the node that critiques the latest draft and evaluates the stop policies."""

    def critique(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Critique the latest draft against the task."""
        plan = loop.plan(state, runtime)
        result = _repeat(state)
        if result is None:
            critic = plan.critic
            with model_errors("critic", critic.model):
                result = critic.invoke(_request(state), _trace(plan, state))
        return _record(plan, state, result)

    async def acritique(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Critique the latest draft against the task."""
        plan = loop.plan(state, runtime)
        result = _repeat(state)
        if result is None:
            critic = plan.critic
            with model_errors("critic", critic.model):
                result = await critic.ainvoke(_request(state), _trace(plan, state))
        return _record(plan, state, result)

    return Node(critique, acritique, name="critique")


def _trace(plan: RunPlan, state: RefineState) -> Any:
    return plan.trace("critique", "critic", plan.critic.model, state.get("iteration", 0))


def _request(state: RefineState) -> CritiqueRequest:
    return CritiqueRequest(
        task=state["task"],
        draft=state.get("draft", ""),
        iteration=state.get("iteration", 0),
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
    usage = add_usage(state.get("usage"), result.usage)
    view = StopView([*(state.get("attempts") or []), attempt], attempt["iteration"], usage)
    return {
        "attempts": [attempt],
        "critique": attempt["critique"],
        "usage": usage,
        "stop_reason": first_stop(plan.policies, view),
    }
