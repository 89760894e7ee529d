"""What the factory was given (`Parts`), and what one run's settings come to (`RunPlan`).

The door (`graphs/checked.py`) works a call's settings out once (`Parts.settings_for`)
and streams the run with them, so every node reads them as `runtime.context`. The
nodes of a run need the same prompts, stop policies, critic and models: `Parts.plan`
gives the `RunPlan` of a run's settings, made once per distinct settings (and model
environment) and kept, a read-only value shared by every thread and run with those
settings, never tied to one.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from self_refine.content import TaskContent, has_images, task_text
from self_refine.context import (
    DEFAULT_STRATEGY,
    KEPT_BEFORE,
    NO_CRITIC,
    SEARCH_REFINE_FORM,
    RefineContext,
    Select,
    StrategyRow,
    call_settings,
    context_changes,
    default_select,
    default_strategy,
)
from self_refine.critics import CombinedCritic, Critic, HumanCritic, LLMCritic, resolve_critics
from self_refine.critics.base import RunCritic
from self_refine.critics.judge import FirstDraftJudge
from self_refine.critics.none import NoCritic
from self_refine.critics.typed import ResponseFormat, TypedAnswerCritic
from self_refine.errors import ConfigError
from self_refine.models.calls import trace_config
from self_refine.models.hygiene import DraftGuard, draft_limit
from self_refine.models.images import refuse_images
from self_refine.models.resolve import resolve_model
from self_refine.models.roles import ModelLike, RoleModel
from self_refine.models.structured import StructuredAsk, StructuredDrafts
from self_refine.nodes.critic_run import CriticRun
from self_refine.prompts import PROFILES, PromptSet, generate_messages, get_profile
from self_refine.prompts.phrases import instruction_phrases
from self_refine.prompts.render import DEFAULT_REFINE_FORM, RefineForm
from self_refine.stopping import StopPolicy, policies_for

__all__ = ["Parts", "Role", "RoleModels", "RunPlan", "critic_specs", "reply_cap"]

Role = Literal["generator", "critic", "refiner"]

_ENVIRONMENT = ("OPENAI_API_KEY", "OPENAI_BASE_URL")
"""What a model given as a string reads when the settings do not say: part of a plan's key."""

_PLANS_KEPT = 32


class RoleModels:
    """A run's model for each role, resolved once, and how each model is asked for JSON."""

    def __init__(
        self,
        settings: RefineContext,
        roles: Mapping[Role, ModelLike | None],
        prompts: PromptSet | None = None,
    ) -> None:
        self.settings = settings
        self.roles = roles
        self.prompts = prompts or get_profile(settings.profile)
        self._resolved: dict[Role, RoleModel] = {}
        self._asks: list[StructuredAsk] = []

    def get(self, role: Role) -> RoleModel:
        """The role's model: the settings' model for it, their `model`, else the graph's.

        ConfigError when it cannot be had (no model, a model string missing its key).
        """
        model = self._resolved.get(role)
        if model is None:
            cap = reply_cap(role, self.settings, self.prompts)
            model = self._resolved[role] = _resolve(role, self.settings, self.roles, cap)
        return model

    def ask(self, model: Any) -> StructuredAsk:
        """How `model` is asked for structured output: one per model of the run, shared by
        its critiques and its typed drafts, so that a way it refuses is tried once."""
        for ask in self._asks:
            if ask.model is model:
                return ask
        ask = StructuredAsk(model)
        self._asks.append(ask)
        return ask


@dataclass(frozen=True)
class RunPlan:
    """What one run's settings come to: prompts, stop policies, the critic, the models."""

    settings: RefineContext
    prompts: PromptSet
    form: RefineForm
    """The form of the refine requests of a run that refines one draft."""
    policies: tuple[StopPolicy, ...]
    critic: CriticRun
    writes_code: bool
    models: RoleModels = field(repr=False)
    answer_format: ResponseFormat | None = None
    """The graph's response format: drafts are asked for as JSON of its schema."""
    critiques: bool = True
    """False when the run critiques nothing (`critics="none"`: `NoCritic`)."""

    @property
    def search_form(self) -> RefineForm:
        """The form of a search's refinements: the one the run or the profile chose, else
        `SEARCH_REFINE_FORM`."""
        return self.settings.refine_form or self.prompts.refine_form or SEARCH_REFINE_FORM

    @property
    def select(self) -> Select:
        """Which draft answers: the select the settings name, else `default_select` (a vote
        when the drafts end with a final answer and are not typed as JSON)."""
        final = self.prompts.final_answer and self.answer_format is None
        return self.settings.select or default_select(final)

    @property
    def profile(self) -> str:
        """The name of the prompt set in use, for traces."""
        return self.prompts.name

    def reply_cap(self, role: Role) -> int:
        """Most tokens one reply of `role` may have in this run (see `reply_cap`)."""
        return reply_cap(role, self.settings, self.prompts)

    def model(self, role: Role) -> RoleModel:
        """The model a role is asked through: with a response format, drafts as JSON of it."""
        model = self.models.get(role)
        if self.answer_format is None or role == "critic":
            return model
        drafts = StructuredDrafts(self.models.ask(model), self.answer_format.schema)
        return cast(RoleModel, drafts)

    def check_start(self, payload: Mapping[str, Any], *, saved: bool) -> None:
        """Raise ConfigError, before anything is written or asked, when this run cannot start.

        The settings must suit the run (`check_settings`), its critics must be able to
        judge drafts for the input's reference, and every model it will call must be
        had (a model string of no known form, a missing key) and, for a task with
        images, read them.
        """
        self.check_settings(saved=saved)
        self.critic.critic.check(payload.get("reference"))
        generates = not (payload.get("draft") or "").strip()  # else the input brings it
        self.check_models(generates=generates, images=has_images(payload.get("task")))
        if generates:
            self._check_room(payload["task"])

    def _check_room(self, task: TaskContent) -> None:
        """Refuse now a task whose first request would not fit the local model's context."""
        from self_refine.models.local import LocalChatModel

        generator = self.models.get("generator")
        if isinstance(generator, LocalChatModel):
            generator.check_room(generate_messages(self.prompts, task))

    def check_models(self, *, generates: bool = True, images: bool = False) -> None:
        """Raise ConfigError when a model the run calls cannot be had (a model string of no
        known form, a missing key) or, for a task with `images`, cannot read them."""
        roles: list[Role] = ["generator", "refiner"] if generates else ["refiner"]
        models = {role: self.model(role) for role in roles}
        explainer = self.critic.critic.explainer
        if isinstance(explainer, LLMCritic):
            models["critic"] = explainer.model
        if images:
            for role, model in models.items():
                refuse_images(role, model)

    def check_settings(self, *, saved: bool) -> None:
        """Raise ConfigError when these settings cannot run in this graph, new run or not.

        A run with no critic must sample and vote (`RefineContext.check_without_critic`:
        the graph's `critics=["none"]` meets the call's settings here); a vote needs
        drafts that state a final answer (`check_vote`). A human critic
        answers one draft at a time and needs the run saved (`saved`) to be resumed with
        the answer.
        """
        if not self.critiques:
            self.settings.check_without_critic(self.select)
        self.check_vote()
        if not isinstance(self.critic.critic.explainer, HumanCritic):
            return
        if self.settings.candidates > 1:
            raise ConfigError(
                "the human critic answers one draft at a time; "
                f"candidates={self.settings.candidates} would ask about every candidate at "
                "once: use candidates=1 with it"
            )
        if not saved:
            raise ConfigError(
                "the human critic needs a checkpointer to resume the run with the answer: "
                "compile the graph with one (e.g. checkpointer=InMemorySaver()) or serve it "
                "with `self-refine studio`"
            )

    def check_vote(self) -> None:
        """Raise ConfigError for `select="vote"` when the run's prompts (the graph's own, else
        the profile's) ask for drafts that state no final answer: there is nothing to count."""
        if self.settings.select != "vote" or self.prompts.final_answer:
            return
        voting = ", ".join(f'"{p.name}"' for p in PROFILES.values() if p.final_answer)
        raise ConfigError(
            f'select="vote" counts final answers, and the drafts of profile '
            f"{self.prompts.name!r} state none: use a profile whose drafts end with one "
            f'({voting}), or select "best"'
        )

    def guard(
        self,
        task: TaskContent,
        feedback: Sequence[str] = (),
        previous: str | None = None,
        sent: Sequence[BaseMessage] = (),
    ) -> DraftGuard:
        """What a draft reply to the request `sent` is held against before it becomes the
        draft."""
        task = task_text(task)
        return DraftGuard(
            task=task,
            feedback=tuple(feedback),
            limit=draft_limit(task, self.settings.max_draft_chars),
            keep_code_fences=self.writes_code,
            previous=previous,
            instructions=instruction_phrases(self.prompts),
            sent=tuple(sent),
        )

    def trace(self, node: str, role: Role, model: Any, iteration: int) -> RunnableConfig:
        """The metadata and tags of a model call of this run."""
        return trace_config(node, role, model, iteration=iteration, profile=self.profile)


@dataclass(frozen=True)
class Parts:
    """What the factory was given: role models, critics, judge, stop policies, prompts,
    response format, and the graph's settings (those of a run whose call brings no context).

    The nodes close over one `Parts` and ask it for their run's plan.
    """

    roles: Mapping[Role, ModelLike | None]
    settings: RefineContext
    critics: tuple[Any, ...] = ()
    judge: tuple[Any, ...] = ()
    stop: tuple[StopPolicy, ...] | None = None
    prompts: PromptSet | None = None
    response_format: ResponseFormat | None = None
    _plans: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_plans", functools.lru_cache(_PLANS_KEPT)(self._plan))

    def settings_for(
        self,
        given: Any,
        kept: Mapping[str, Any] | None = None,
        run: Mapping[str, Any] | None = None,
    ) -> RefineContext:
        """A call's settings: `given` (the call's context) over the settings the run began
        with (`kept`, what its thread keeps), else over the graph's (see `self_refine.context`).

        A strategy of "auto" becomes the run's own: the one the run kept (`kept` empty:
        a run kept before its settings were, which refined; its select and critics too
        unless the call names them), else the one the checks of its input `run` (its task
        and reference) call for (`strategy_for`; the "answer" row of `DEFAULT_STRATEGY`
        also sets select "vote" and critics "none");
        with neither (a batch's settings, shared by runs of many references) it stays
        "auto" for each run's door to work out.
        """
        if isinstance(given, RefineContext):
            settings = given
        elif not kept:
            settings = call_settings(given, self.settings)
        else:
            settings = RefineContext.from_kept({**kept, **context_changes(given)})
        if settings.strategy != "auto":
            return settings
        if kept is not None:
            kept = {**KEPT_BEFORE, **kept}
            return dataclasses.replace(
                settings,
                strategy=kept["strategy"],
                select=settings.select or kept.get("select"),
                critics=settings.critics or kept.get("critics"),
            )
        if run is None:
            return settings
        row = self.strategy_for(settings, run.get("reference"))
        strategy = DEFAULT_STRATEGY[row][0]
        if row == "answer":
            return dataclasses.replace(
                settings, strategy=strategy, select="vote", critics=(NO_CRITIC,)
            )
        return dataclasses.replace(settings, strategy=strategy)

    def strategy_for(self, settings: RefineContext, reference: Any) -> StrategyRow:
        """The row of `DEFAULT_STRATEGY` (the strategy "auto" comes to, and why) for a run of
        `settings` on `reference`: by whether a verifier of its critics can judge drafts for
        that reference, whether the offline stand-in writes its drafts, and whether it votes."""
        prompts = self.prompts or get_profile(settings.profile)
        verifiers = resolve_critics(critic_specs(settings, self.critics, prompts)).verifiers
        writers = (
            getattr(settings, f"{role}_model") or settings.model or self.roles.get(role)
            for role in ("generator", "refiner")
        )
        return default_strategy(
            vote=settings.select == "vote",
            offline=any(_is_offline(writer) for writer in writers),
            verifier=any(verifier.applies(reference) is None for verifier in verifiers),
            # A typed answer's drafts are JSON, checked by its schema: no number to vote on.
            answer=prompts.final_answer
            and self.response_format is None
            and settings.select is None
            and (settings.critics or self.critics or (NO_CRITIC,)) == (NO_CRITIC,)
            and settings.score_threshold is None
            and settings.patience is None,
        )

    def critic_specs(self, settings: RefineContext) -> list[Any]:
        """The critics of a run of these settings (see `critic_specs`)."""
        return critic_specs(settings, self.critics, self.prompts)

    def plan(self, settings: RefineContext) -> RunPlan:
        """The plan of a run's settings, with the environment models read as it is now."""
        if not isinstance(settings, RefineContext):
            raise ConfigError(
                "the run has no settings: run the graph through its compiled form "
                f"(create_self_refine_graph(...).compile()), got context {settings!r}"
            )
        environment = tuple(os.environ.get(name) for name in _ENVIRONMENT)
        plan: RunPlan = self._plans(settings, environment)
        return plan

    def _plan(self, settings: RefineContext, _environment: tuple[str | None, ...]) -> RunPlan:
        prompts = self.prompts or get_profile(settings.profile)
        critics = resolve_critics(critic_specs(settings, self.critics, prompts))
        answer_format = self.response_format
        if answer_format is not None:
            prompts = answer_format.prompts(prompts)
        models = RoleModels(settings, self.roles, prompts)
        explainer: Critic | None = None
        if critics.explainer == "human":
            explainer = HumanCritic()
        elif critics.explainer == "llm":
            model = models.get("critic")
            explainer = LLMCritic(model, prompts, models.ask(model))
        elif not isinstance(critics.explainer, str):
            explainer = critics.explainer  # a Critic object, or None
        critic: RunCritic
        if not critics.critiques:  # critics "none": a vote's samples, judged by nothing
            critic = NoCritic()
        elif answer_format is not None:
            critic = TypedAnswerCritic(critics.verifiers, explainer, answer_format)
        else:
            critic = CombinedCritic(critics.verifiers, explainer)
        judge = self.judge if settings.judge is None else settings.judge
        if judge:
            critic = FirstDraftJudge(judge, critic)
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
            critic=CriticRun(critic),
            critiques=critics.critiques,
            writes_code=prompts.name.startswith("code") or "python_tests" in prompts.critics,
            models=models,
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


def reply_cap(role: Role, settings: RefineContext, prompts: PromptSet) -> int:
    """Most tokens a reply of `role` may have: the settings' `max_tokens`, else the profile's
    cap for the role (its critiques, or its drafts)."""
    if settings.max_tokens is not None:
        return settings.max_tokens
    return prompts.critique_tokens if role == "critic" else prompts.draft_tokens


def _resolve(
    role: Role, settings: RefineContext, roles: Mapping[Role, ModelLike | None], cap: int
) -> RoleModel:
    """A role's model: the settings' model for the role, their `model`, else the graph's."""
    chosen = getattr(settings, f"{role}_model") or settings.model or roles.get(role)
    if chosen is None:
        raise ConfigError(
            f"no model for the {role}: pass model= to create_self_refine_graph "
            "or set 'model' in the run's context"
        )
    model = resolve_model(
        chosen,
        base_url=settings.base_url,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        api_key=settings.api_key,
        max_tokens=cap,
        temperature=settings.temperature,
        seed=settings.seed,
    )
    return cast(RoleModel, model)


def _is_offline(model: Any) -> bool:
    """Whether `model` (a model string or object) is the offline stand-in."""
    if isinstance(model, str):
        return model.partition(":")[0].strip() == "offline"
    from self_refine.models.offline import OfflineModel

    return isinstance(model, OfflineModel)
