"""What one run's settings come to (`RunPlan`): prompts, select, critic, stop policies, models.

The nodes of a run need the same prompts, stop policies, critic and models:
`call.Parts.plan` gives the `RunPlan` of a run's settings, made once per distinct
settings (and model environment) and kept, shared by every thread and run with those
settings, never tied to one. It keeps no state of a run; what it learns is how each of
its models takes structured output (`RoleModels.ask`), shared by its runs on purpose,
so that a batch tries a way a server refuses once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from self_refine.content import TaskContent, task_text
from self_refine.critics.base import CritiqueRequest, CritiqueResult, RunCritic
from self_refine.critics.human import HumanCritic
from self_refine.critics.typed import ResponseFormat
from self_refine.errors import ConfigError
from self_refine.models.calls import trace_config
from self_refine.models.hygiene import DraftGuard, draft_limit
from self_refine.models.resolve import resolve_model
from self_refine.models.roles import ModelLike, RoleModel
from self_refine.models.structured import StructuredAsk, StructuredDrafts
from self_refine.prompts import PromptSet, get_profile
from self_refine.prompts.forms import SEARCH_REFINE_FORM, RefineForm
from self_refine.prompts.phrases import instruction_phrases
from self_refine.settings.fields import RefineContext, Select
from self_refine.stopping import StopPolicy

__all__ = [
    "CriticCall",
    "Role",
    "RoleModels",
    "RunPlan",
    "reply_cap",
]

Role = Literal["generator", "critic", "refiner"]


class CriticCall(Protocol):
    """The run's critic as the nodes call it: a child run of the node that asks it
    (`nodes/critic_run.CriticRun`, which the factory gives `Parts` as `critic_call`)."""

    critic: RunCritic
    model: Any

    def invoke(
        self, input: CritiqueRequest, config: RunnableConfig | None = None, **kwargs: Any
    ) -> CritiqueResult: ...

    async def ainvoke(
        self, input: CritiqueRequest, config: RunnableConfig | None = None, **kwargs: Any
    ) -> CritiqueResult: ...


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

    def ready(self) -> None:
        """Resolve every role's model now (the door does, off the event loop: a local
        model's file checks and loading block). A role whose model cannot be had is left
        for the node that asks for it, which says why."""
        for role in ("generator", "critic", "refiner"):
            try:
                self.get(role)
            except ConfigError:
                continue

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
    critic: CriticCall
    writes_code: bool
    models: RoleModels = field(repr=False)
    answer_format: ResponseFormat | None = None
    """The graph's response format: drafts are asked for as JSON of its schema."""
    critiques: bool = True
    """False when the run critiques nothing (`critics="none"`: `NoCritic`)."""
    select: Select = "best"
    """Which draft answers: the select the settings name, else `call.default_select`."""

    @property
    def critic_spends(self) -> bool:
        """Whether asking the run's critic may cost tokens: it has an explaining critic other
        than a person (verifiers and a person's critique cost none)."""
        explainer = self.critic.critic.explainer
        return explainer is not None and not isinstance(explainer, HumanCritic)

    @property
    def search_form(self) -> RefineForm:
        """The form of a search's refinements: the one the run or the profile chose, else
        `SEARCH_REFINE_FORM`."""
        return self.settings.refine_form or self.prompts.refine_form or SEARCH_REFINE_FORM

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
