"""The critique node: judge the draft, record the attempt, and decide whether to stop."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig

from self_refine.context import RefineContext
from self_refine.critics import (
    CombinedCritic,
    Critic,
    CriticPlan,
    CritiqueRequest,
    CritiqueResult,
    HumanCritic,
    LLMCritic,
    resolve_critics,
)
from self_refine.models.calls import model_errors, trace_config
from self_refine.nodes.deps import Deps
from self_refine.nodes.runnable import NodeRunnable
from self_refine.state import (
    Attempt,
    Critique,
    RefineState,
    add_usage,
    fresh_view,
    start_over_update,
)
from self_refine.stopping import StopView, first_stop

__all__ = ["check_critics", "make_critique"]


def make_critique(deps: Deps) -> NodeRunnable:
    """Build the node that critiques the latest draft and evaluates the stop policies."""

    def critique(state: RefineState) -> dict[str, Any]:
        """Critique the latest draft against the task."""
        ctx = deps.settings(state)
        view = fresh_view(state)
        result = _repeat(view)
        if result is None:
            runner, config, model = _traced_critic(deps, ctx, view)
            with model_errors("critic", model):
                result = runner.invoke(_request(view), config)
        return _record(deps, ctx, state, result)

    async def acritique(state: RefineState) -> dict[str, Any]:
        """Critique the latest draft against the task."""
        ctx = deps.settings(state)
        view = fresh_view(state)
        result = _repeat(view)
        if result is None:
            runner, config, model = _traced_critic(deps, ctx, view)
            with model_errors("critic", model):
                result = await runner.ainvoke(_request(view), config)
        return _record(deps, ctx, state, result)

    return NodeRunnable(critique, acritique, name="critique")


def _plan(deps: Deps, ctx: RefineContext) -> CriticPlan:
    """The run's critics: the context's names, else the factory's, else the profile's."""
    return resolve_critics(ctx.critics or deps.critics or deps.prompt_set(ctx).critics)


class _CriticRun(Runnable[CritiqueRequest, CritiqueResult]):
    """The critic as a child run of the node, whose model calls carry the run's metadata.

    Built once per run's settings; unlike a `RunnableLambda`, it does not inspect
    the critic's signature on every call.
    """

    def __init__(self, critic: CombinedCritic) -> None:
        self.critic = critic
        self.name = f"{critic.name} critic"
        self.model = getattr(critic.explainer, "model", None)

    def _critique(self, request: CritiqueRequest) -> CritiqueResult:
        return self.critic.critique(request)

    async def _acritique(self, request: CritiqueRequest) -> CritiqueResult:
        return await self.critic.acritique(request)

    def invoke(
        self, input: CritiqueRequest, config: RunnableConfig | None = None, **_: Any
    ) -> CritiqueResult:
        """Critique the draft in a child run."""
        return self._call_with_config(self._critique, input, config)

    async def ainvoke(
        self, input: CritiqueRequest, config: RunnableConfig | None = None, **_: Any
    ) -> CritiqueResult:
        """Critique the draft in a child run, without blocking the event loop."""
        return await self._acall_with_config(self._acritique, input, config)


def _critic(deps: Deps, ctx: RefineContext) -> CombinedCritic:
    """The critic for this run: its verifiers first, then its explaining critic ("llm")."""
    plan = _plan(deps, ctx)
    explainer: Critic | None = None
    if plan.explainer == "human":
        explainer = HumanCritic()
    elif plan.explainer == "llm":
        explainer = LLMCritic(deps.model("critic", ctx), deps.prompt_set(ctx))
    elif not isinstance(plan.explainer, str):
        explainer = plan.explainer  # a Critic object, or None
    return CombinedCritic(plan.verifiers, explainer)


def check_critics(deps: Deps, ctx: RefineContext, reference: Any) -> None:
    """Raise ConfigError, before any model call, if the run's critics cannot judge its drafts.

    A critic model that cannot be had (a missing key, say) is found here too.
    """
    _critic(deps, ctx).check(reference)


def _traced_critic(
    deps: Deps, ctx: RefineContext, state: RefineState
) -> tuple[_CriticRun, RunnableConfig, Any]:
    """The run's critic (built once per settings), and the metadata and tags of its calls."""
    memo = deps.memo(ctx)
    runner = memo.get("critic")
    if runner is None:
        runner = memo["critic"] = _CriticRun(_critic(deps, ctx))
    config = trace_config(
        "critique",
        "critic",
        runner.model,
        iteration=state.get("iteration", 0),
        profile=deps.plan(ctx).profile,
    )
    return runner, config, runner.model


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
    deps: Deps, ctx: RefineContext, given: RefineState, result: CritiqueResult
) -> dict[str, Any]:
    state = fresh_view(given)
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
        **start_over_update(given, [attempt]),
        "critique": attempt["critique"],
        "iteration": attempt["iteration"],
        "usage": usage,
        "stop_reason": first_stop(deps.plan(ctx).policies, view),
    }
