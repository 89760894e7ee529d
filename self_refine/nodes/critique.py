"""The critique node: judge the draft, record the attempt, and decide whether to stop
(`nodes/steps.py`)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from self_refine.critics import CritiqueResult
from self_refine.drafts import ChainAttempt, add_usage, place_of, placed
from self_refine.models.calls import model_errors
from self_refine.nodes.requests import critique_request
from self_refine.nodes.runnable import Node
from self_refine.nodes.steps import step_record
from self_refine.settings.call import Parts
from self_refine.settings.fields import RefineContext
from self_refine.settings.plan import RunPlan
from self_refine.state import Critique, RefineState

__all__ = ["make_critique"]


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


def _repeat(state: RefineState) -> CritiqueResult | None:
    """The same draft gets the same critique, without another model call."""
    attempts = state.get("attempts") or []
    if attempts and attempts[-1]["draft"] == state.get("draft", ""):
        previous = Critique.model_validate(attempts[-1]["critique"])
        return CritiqueResult(previous, add_usage())
    return None


def _record(plan: RunPlan, state: RefineState, result: CritiqueResult) -> dict[str, Any]:
    chained: ChainAttempt = {
        "iteration": state.get("iteration", 0),
        "draft": state.get("draft", ""),
        "critique": result.critique.model_dump(),
        "usage": add_usage(state.get("draft_usage"), result.usage),
    }
    problems = [*(state.get("draft_problems") or []), *result.problems]
    if problems:
        chained["problems"] = problems
    if state.get("draft_rejected"):
        chained["rejected"] = list(state["draft_rejected"])
    planned = state.get("next_replies") or []
    if not planned:
        return step_record(plan, state, chained, result.usage)
    # the planner made the input's draft the first node of the run's tree
    attempt = placed(chained, place_of(planned[0]))
    attempt["checked"] = result.checked
    return step_record(plan, state, attempt, result.usage)
