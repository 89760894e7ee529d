"""What the factory was given (`Loop`), and what one run's settings come to (`RunPlan`).

Every node of a run needs the same prompts, stop policies, critic and models. A
`RunPlan` holds them, worked out once per distinct settings (and model-related
environment) and kept: a plan is a read-only value, shared by every thread and
run with those settings, never tied to one.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langgraph.runtime import Runtime

from self_refine.content import TaskContent, has_images, task_text
from self_refine.context import RefineContext, context_changes, settings_of
from self_refine.critics import (
    CombinedCritic,
    Critic,
    CritiqueRequest,
    CritiqueResult,
    HumanCritic,
    LLMCritic,
    resolve_critics,
)
from self_refine.critics.typed import ResponseFormat, TypedAnswerCritic
from self_refine.errors import ConfigError
from self_refine.models.calls import trace_config
from self_refine.models.hygiene import DraftGuard, draft_limit
from self_refine.models.images import refuse_images
from self_refine.models.resolve import resolve_model
from self_refine.models.structured import StructuredDrafts
from self_refine.prompts import PromptSet, get_profile
from self_refine.prompts.render import DEFAULT_REFINE_FORM, RefineForm, instruction_phrases
from self_refine.state import RUN_CONTEXT
from self_refine.stopping import StopPolicy, policies_for

__all__ = ["Loop", "Role", "RunPlan", "critic_specs", "role_model"]

Role = Literal["generator", "critic", "refiner"]

ModelLike = BaseChatModel | Runnable[Any, Any] | str

_ENVIRONMENT = ("OPENAI_API_KEY", "OPENAI_BASE_URL")
"""What a model given as a string reads when the settings do not say: part of a plan's key."""

_PLANS_KEPT = 32


class CriticRun(Runnable[CritiqueRequest, CritiqueResult]):
    """The run's critic as a child run of the critique node, with the run's trace metadata.

    Built once per plan. The child run exists for whoever watches the run (a
    tracer, a stream of messages): when the node's run has no callback handlers,
    nothing would see it, so the critic is called directly, without configuring
    callbacks for nobody. Its signature is worked out once, not inspected at
    every call as `_call_with_config` would.
    """

    def __init__(self, critic: CombinedCritic) -> None:
        self.critic = critic
        self.name = f"{critic.name} critic"
        self.model = getattr(critic.explainer, "model", None)
        self._critique = _known_signature(critic.critique)
        self._acritique = _known_signature(critic.acritique)

    def invoke(
        self, input: CritiqueRequest, config: RunnableConfig | None = None, **_: Any
    ) -> CritiqueResult:
        """Critique the draft in a child run."""
        if not _watched(config):
            return self.critic.critique(input)
        return self._call_with_config(self._critique, input, config)

    async def ainvoke(
        self, input: CritiqueRequest, config: RunnableConfig | None = None, **_: Any
    ) -> CritiqueResult:
        """Critique the draft in a child run, without blocking the event loop."""
        if not _watched(config):
            return await self.critic.acritique(input)
        return await self._acall_with_config(self._acritique, input, config)


def _known_signature(method: Callable[[CritiqueRequest], Any]) -> Callable[..., Any]:
    """`method` as a function whose signature inspection finds at once (`__signature__`)."""

    def call(request: CritiqueRequest) -> Any:
        return method(request)

    call.__signature__ = inspect.signature(call)  # type: ignore[attr-defined]
    return call


def _watched(config: RunnableConfig | None) -> bool:
    """Whether a child run of this call would be seen: any callback handler on its run.

    Inside a graph the callbacks are the node's, which carry every handler the
    run was configured with (a LangSmith tracer when tracing is on, LangGraph's
    stream handlers); outside one (no callbacks yet), configuring decides.
    """
    callbacks = ensure_config(config).get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        return bool(callbacks.handlers or callbacks.inheritable_handlers)
    return True


@dataclass(frozen=True)
class RunPlan:
    """What one run's settings come to: prompts, stop policies, the critic, the models."""

    settings: RefineContext
    prompts: PromptSet
    form: RefineForm
    policies: tuple[StopPolicy, ...]
    critic: CriticRun
    writes_code: bool
    models: Mapping[Role, ModelLike | None] = field(repr=False)
    answer_format: ResponseFormat | None = None
    """The graph's response format: drafts are asked for as JSON of its schema."""

    @property
    def profile(self) -> str:
        """The name of the prompt set in use, for traces."""
        return self.prompts.name

    def model(self, role: Role) -> BaseChatModel:
        """The model for a role: the settings' model for it, their `model`, else the graph's.

        With a response format, the generator and the refiner are asked for JSON of
        its schema (`StructuredDrafts`).
        """
        model = role_model(role, self.settings, self.models)
        if self.answer_format is None or role == "critic":
            return model
        return cast(BaseChatModel, StructuredDrafts(model, self.answer_format.schema))

    def check_models(self, *, generates: bool = True) -> None:
        """Raise ConfigError now if a model the run calls cannot be had (a missing key, say)."""
        if generates:
            self.model("generator")
        self.model("refiner")

    def check_images(self, *, generates: bool = True) -> None:
        """Raise ConfigError now if a model the run calls cannot read a task's images."""
        roles: list[Role] = ["generator", "refiner"] if generates else ["refiner"]
        for role in roles:
            refuse_images(role, self.model(role))
        explainer = self.critic.critic.explainer
        if isinstance(explainer, LLMCritic):
            refuse_images("critic", explainer.model)

    def guard(
        self, task: TaskContent, feedback: Sequence[str] = (), previous: str | None = None
    ) -> DraftGuard:
        """What a draft reply is held against before it becomes the draft."""
        task = task_text(task)
        return DraftGuard(
            task=task,
            feedback=tuple(feedback),
            limit=draft_limit(task, self.settings.max_draft_chars),
            keep_code_fences=self.writes_code,
            previous=previous,
            instructions=instruction_phrases(self.prompts),
        )

    def trace(self, node: str, role: Role, model: Any, iteration: int) -> RunnableConfig:
        """The metadata and tags of a model call of this run."""
        return trace_config(node, role, model, iteration=iteration, profile=self.profile)


@dataclass(frozen=True)
class Loop:
    """What the factory was given: role models, critics, stop policies, prompts, settings.

    `settings` are the graph's: those of a run whose call brings no context.
    The nodes close over one `Loop` and ask it for their run's plan.
    """

    models: Mapping[Role, ModelLike | None]
    settings: RefineContext
    critics: tuple[Any, ...] = ()
    stop: tuple[StopPolicy, ...] | None = None
    prompts: PromptSet | None = None
    response_format: ResponseFormat | None = None
    _plans: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_plans", functools.lru_cache(_PLANS_KEPT)(self._plan))

    def settings_for(self, state: Mapping[str, Any], runtime: Runtime[Any]) -> RefineContext:
        """The settings of this call of a run under way (see `self_refine.context`)."""
        return self.continued_settings(runtime.context, state)

    def continued_settings(self, context: Any, values: Mapping[str, Any]) -> RefineContext:
        """A call's settings when it continues the run whose thread holds `values`.

        A `RefineContext` is the call's settings; otherwise the run's kept settings
        (else the graph's), with the fields a dict or a parent's dataclass changes.
        """
        if isinstance(context, RefineContext):
            return context
        kept = values.get(RUN_CONTEXT)
        if not kept:
            return settings_of(context, self.settings)
        return _from_kept(_frozen({**kept, **context_changes(context)}))

    def plan(self, state: Mapping[str, Any], runtime: Runtime[Any]) -> RunPlan:
        """The plan of this call's settings (kept: made once per settings)."""
        return self.plan_for(self.settings_for(state, runtime))

    def plan_for(self, settings: RefineContext) -> RunPlan:
        """The plan of these settings, with the environment models read as it is now."""
        environment = tuple(os.environ.get(name) for name in _ENVIRONMENT)
        plan: RunPlan = self._plans(settings, environment)
        return plan

    def critic_specs(self, settings: RefineContext) -> list[Any]:
        """The critics of a run of these settings (see `critic_specs`)."""
        return critic_specs(settings, self.critics, self.prompts)

    def check_start(
        self, payload: Mapping[str, Any], settings: RefineContext, *, saved: bool
    ) -> None:
        """Raise ConfigError, before anything is written or asked, when this run cannot start.

        Its critics must be able to judge drafts for the input's reference, every
        model it will call must be had (a model string of no known form, a missing
        key), and a human critic needs the run to be saved (`saved`) to resume it.
        """
        plan = self.plan_for(settings)
        plan.critic.critic.check(payload.get("reference"))
        generates = not (payload.get("draft") or "").strip()
        plan.check_models(generates=generates)
        if has_images(payload.get("task")):
            plan.check_images(generates=generates)
        if not saved and isinstance(plan.critic.critic.explainer, HumanCritic):
            raise ConfigError(
                "the human critic needs a checkpointer to resume the run with the answer: "
                "compile the graph with one (e.g. checkpointer=InMemorySaver()) or serve it "
                "with `self-refine studio`"
            )

    def _plan(self, settings: RefineContext, _environment: tuple[str | None, ...]) -> RunPlan:
        prompts = self.prompts or get_profile(settings.profile)
        critics = resolve_critics(critic_specs(settings, self.critics, prompts))
        answer_format = self.response_format
        if answer_format is not None:
            prompts = answer_format.prompts(prompts)
        explainer: Critic | None = None
        if critics.explainer == "human":
            explainer = HumanCritic()
        elif critics.explainer == "llm":
            explainer = LLMCritic(role_model("critic", settings, self.models), prompts)
        elif not isinstance(critics.explainer, str):
            explainer = critics.explainer  # a Critic object, or None
        return RunPlan(
            settings=settings,
            prompts=prompts,
            form=settings.refine_form or prompts.refine_form or DEFAULT_REFINE_FORM,
            policies=tuple(
                policies_for(
                    self.stop,
                    prompts.stop,
                    max_iterations=settings.max_iterations,
                    score_threshold=settings.score_threshold,
                    patience=settings.patience,
                    max_tokens_total=settings.max_tokens_total,
                )
            ),
            critic=CriticRun(
                TypedAnswerCritic(critics.verifiers, explainer, answer_format)
                if answer_format is not None
                else CombinedCritic(critics.verifiers, explainer)
            ),
            writes_code=prompts.name.startswith("code") or "python_tests" in prompts.critics,
            models=self.models,
            answer_format=answer_format,
        )


def critic_specs(
    settings: RefineContext, critics: Sequence[Any] = (), prompts: PromptSet | None = None
) -> list[Any]:
    """A run's critics: its settings' names, else the graph's `critics`, else the profile's."""
    if settings.critics:
        return list(settings.critics)
    if critics:
        return list(critics)
    return list((prompts or get_profile(settings.profile)).critics)


def role_model(
    role: Role, settings: RefineContext, models: Mapping[Role, ModelLike | None]
) -> BaseChatModel:
    """A role's model: the settings' model for the role, their `model`, else the graph's."""
    chosen = getattr(settings, f"{role}_model") or settings.model or models.get(role)
    if chosen is None:
        raise ConfigError(
            f"no model for the {role}: pass model= to create_self_refine_graph "
            "or set 'model' in the run's context"
        )
    return resolve_model(
        chosen,
        base_url=settings.base_url,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        api_key=settings.api_key,
        max_tokens=settings.max_tokens,
    )


def _frozen(value: Any) -> Any:
    """A kept context as a hashable value (its lists as tuples)."""
    if isinstance(value, list | tuple):
        return tuple(_frozen(item) for item in value)
    if isinstance(value, Mapping):
        return tuple((key, _frozen(item)) for key, item in value.items())
    return value


@functools.lru_cache(maxsize=_PLANS_KEPT)
def _from_kept(kept: tuple[tuple[str, Any], ...]) -> RefineContext:
    return RefineContext.from_kept(dict(kept))
