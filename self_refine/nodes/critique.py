"""The critique node: judge the draft, record the attempt, and decide whether to stop."""

from __future__ import annotations

from typing import Any

from self_refine.context import RefineContext
from self_refine.critics import Critic, CritiqueRequest, CritiqueResult, LLMCritic
from self_refine.errors import ConfigError
from self_refine.nodes.deps import Deps
from self_refine.nodes.runnable import NodeRunnable
from self_refine.state import Attempt, Critique, RefineState, add_usage
from self_refine.stopping import StopView, first_stop, policies_for

__all__ = ["make_critique"]


def make_critique(deps: Deps) -> NodeRunnable:
    """Build the node that critiques the latest draft and evaluates the stop policies."""

    def critique(state: RefineState) -> dict[str, Any]:
        """Critique the latest draft against the task."""
        ctx = deps.settings()
        result = _repeat(state) or _critic(deps, ctx).critique(_request(state))
        return _record(deps, ctx, state, result)

    async def acritique(state: RefineState) -> dict[str, Any]:
        """Critique the latest draft against the task."""
        ctx = deps.settings()
        result = _repeat(state) or await _critic(deps, ctx).acritique(_request(state))
        return _record(deps, ctx, state, result)

    return NodeRunnable(critique, acritique, name="critique")


def _critic(deps: Deps, ctx: RefineContext) -> Critic:
    """The critic for this run: the context's `critics` names, else the factory's, else "llm"."""
    names = ctx.critics or [c for c in deps.critics if isinstance(c, str)] or ["llm"]
    unknown = [name for name in names if name != "llm"]
    if unknown:
        raise ConfigError(f"unknown critic(s) {', '.join(map(repr, unknown))}; known: 'llm'")
    return LLMCritic(deps.model("critic", ctx), deps.prompt_set(ctx))


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


def _record(
    deps: Deps, ctx: RefineContext, state: RefineState, result: CritiqueResult
) -> dict[str, Any]:
    attempt: Attempt = {
        "iteration": state.get("iteration", 0),
        "draft": state.get("draft", ""),
        "critique": result.critique.model_dump(),
        "usage": add_usage(state.get("draft_usage"), result.usage),
    }
    usage = add_usage(state.get("usage"), result.usage)
    view = StopView([*(state.get("attempts") or []), attempt], attempt["iteration"], usage)
    return {
        "critique": attempt["critique"],
        "attempts": [attempt],
        "iteration": attempt["iteration"],
        "usage": usage,
        "stop_reason": first_stop(policies_for(deps.stop, ctx), view),
    }
