"""The critique node: judge the draft, record the attempt, and decide whether to stop
(`nodes/steps.py`).

Under a token budget the explaining critic is asked only when what is left after the
draft holds a critique (`requests.unasked_why`); else the verifiers judge alone, the
critique says why the critic was not asked, and the run stops ("token_budget")."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from self_refine.critics import CritiqueResult
from self_refine.drafts import ChainAttempt, add_usage, place_of, placed
from self_refine.models.calls import model_errors
from self_refine.nodes.requests import critique_request, unasked_why
from self_refine.nodes.runnable import Node
from self_refine.nodes.steps import step_record
from self_refine.settings.call import Parts
from self_refine.settings.fields import RefineContext
from self_refine.settings.plan import RunPlan
from self_refine.state import Critique, RefineState
from self_refine.stopping import critique_cost

__all__ = ["make_critique"]


def make_critique(parts: Parts) -> Node:
    """Build the node that critiques the latest draft and evaluates the stop policies."""

    def critique(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Critique the latest draft against the task."""
        plan = parts.plan(runtime.context)
        result = _repeat(state)
        if result is None:
            critic = plan.critic
            request = critique_request(state, unasked=_unasked(plan, state))
            with model_errors("critic", critic.model):
                result = critic.invoke(request, _trace(plan, state))
        return _record(plan, state, result)

    async def acritique(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Critique the latest draft against the task."""
        plan = parts.plan(runtime.context)
        result = _repeat(state)
        if result is None:
            critic = plan.critic
            request = critique_request(state, unasked=_unasked(plan, state))
            with model_errors("critic", critic.model):
                result = await critic.ainvoke(request, _trace(plan, state))
        return _record(plan, state, result)

    return Node(critique, acritique, name="critique")


def _trace(plan: RunPlan, state: RefineState) -> Any:
    return plan.trace("critique", "critic", plan.critic.model, state.get("iteration", 0))


def _unasked(plan: RunPlan, state: RefineState) -> str | None:
    """Why the draft's critic is not to be asked: the run's budget left after the draft
    cannot hold a critique (None: it can, or the run has no budget)."""
    budget = plan.settings.max_tokens_total
    if budget is None:
        return None
    left = budget - add_usage(state.get("usage"))["total_tokens"]
    drafted = add_usage(state.get("draft_usage"))["total_tokens"]
    return unasked_why(plan, left, drafted, critique_cost(state.get("attempts") or []))


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
        "critique_usage": add_usage(result.usage),
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
