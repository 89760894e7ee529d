"""What the nodes share: the factory's dependencies, and the run's effective settings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import get_runtime

from self_refine.context import RefineContext
from self_refine.errors import ConfigError
from self_refine.models.hygiene import DraftGuard, draft_limit
from self_refine.models.resolve import resolve_model
from self_refine.prompts import PromptSet, get_profile
from self_refine.prompts.render import DEFAULT_REFINE_FORM, RefineForm
from self_refine.stopping import StopPolicy

__all__ = ["Deps", "Role"]

Role = Literal["generator", "critic", "refiner"]


@dataclass(frozen=True)
class Deps:
    """Dependencies a Python caller gave the factory, and the defaults for every run.

    `models` maps each role to the factory's model for it; `defaults.model` is
    always None, so a `model` in the run's context means the run chose it.
    """

    models: dict[Role, BaseChatModel | str | None]
    defaults: RefineContext
    stop: Sequence[StopPolicy] | None = None
    prompts: PromptSet | None = None
    critics: Sequence[Any] = ()

    def settings(self) -> RefineContext:
        """The current run's settings: its context laid over the factory's defaults."""
        given = RefineContext.coerce(get_runtime().context)
        return given.over(self.defaults)

    def model(self, role: Role, ctx: RefineContext) -> BaseChatModel:
        """The model for a role: the context's role model, its model, else the factory's."""
        per_role = {
            "generator": ctx.generator_model,
            "critic": ctx.critic_model,
            "refiner": ctx.refiner_model,
        }[role]
        chosen = per_role or ctx.model or self.models.get(role)
        if chosen is None:
            raise ConfigError(
                f"no model for the {role}: pass model= to create_self_refine_graph "
                "or set 'model' in the run's context"
            )
        return resolve_model(
            chosen,
            base_url=ctx.base_url,
            timeout=ctx.timeout,
            max_retries=ctx.max_retries,
            api_key=ctx.api_key,
            max_tokens=ctx.max_tokens,
        )

    def guard(self, ctx: RefineContext, task: str, feedback: Sequence[str]) -> DraftGuard:
        """What a draft reply is checked against before it becomes the draft."""
        return DraftGuard(
            task=task,
            feedback=tuple(feedback),
            limit=draft_limit(task, ctx.max_draft_chars),
            keep_code_fences=_writes_code(self.prompt_set(ctx)),
        )

    def prompt_set(self, ctx: RefineContext) -> PromptSet:
        """The factory's prompts if given, else the context's profile."""
        return self.prompts or get_profile(ctx.profile or "general")

    def refine_form(self, ctx: RefineContext) -> RefineForm:
        """How the refine request is laid out: the run's setting, the profile's, the default."""
        return ctx.refine_form or self.prompt_set(ctx).refine_form or DEFAULT_REFINE_FORM

    def profile_name(self, ctx: RefineContext) -> str:
        """The name of the prompt set in use, for traces."""
        return self.prompts.name if self.prompts else ctx.profile or "general"


def _writes_code(prompts: PromptSet) -> bool:
    """True for profiles whose drafts are code, where a code fence is part of the answer."""
    return prompts.name.startswith("code") or "python_tests" in prompts.critics
