"""What the nodes share: the factory's dependencies, and the run's effective settings.

Every step of a run reads the same settings and needs the same critic and stop
policies, so they are worked out once per run's context and kept (`_RunCache`):
a context that changes, in a field or in place, or an environment whose model
variables change, is worked out again.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import get_runtime

from self_refine.context import RefineContext
from self_refine.errors import ConfigError
from self_refine.models.hygiene import DraftGuard, draft_limit
from self_refine.models.resolve import resolve_model
from self_refine.prompts import PromptSet, get_profile
from self_refine.prompts.render import DEFAULT_REFINE_FORM, RefineForm
from self_refine.state import RUN_CONTEXT
from self_refine.stopping import StopPolicy, policies_for

__all__ = ["Deps", "Role", "RunPlan"]

Role = Literal["generator", "critic", "refiner"]

_FIELDS = tuple(f.name for f in dataclasses.fields(RefineContext))
_ENVIRONMENT = ("OPENAI_API_KEY", "OPENAI_BASE_URL")
_PLANS_MAX = 16


def _frozen(value: Any) -> Any:
    """A value to compare a context by later: lists copied, so changes in place show."""
    if isinstance(value, list | tuple):
        return tuple(_frozen(item) for item in value)
    if isinstance(value, dict):
        return tuple((key, _frozen(item)) for key, item in value.items())
    return value


def _fingerprint(context: Any) -> Any:
    """What a run's context says (as `RefineContext.coerce` reads it), as a comparable value.

    It changes whenever the context does, in a field or in place.
    """
    if isinstance(context, dict):
        return ("dict", _frozen(context))
    if context is not None and dataclasses.is_dataclass(context):
        return tuple(_frozen(getattr(context, name, None)) for name in _FIELDS)
    return None  # no context, or one that coerce reads as empty


@dataclass(frozen=True)
class RunPlan:
    """What a run's settings come to: its critic, stop policies and prompts.

    `critic` is built lazily (a critic model that cannot be had fails on first use).
    """

    prompts: PromptSet
    profile: str
    policies: tuple[StopPolicy, ...]
    writes_code: bool


class _RunCache:
    """The settings and plan of the contexts seen last; safe to share between threads."""

    def __init__(self) -> None:
        self.settings: dict[Any, RefineContext] = {}
        self.plans: dict[tuple[int, Any], tuple[RefineContext, RunPlan, dict[str, Any]]] = {}
        self.lock = threading.Lock()


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
    _cache: _RunCache = field(default_factory=_RunCache, compare=False, repr=False)

    def settings(self, state: Mapping[str, Any]) -> RefineContext:
        """The current run's settings, field by field: this call's context, else the
        context the run was started with (kept in `state`), else the factory's defaults.
        """
        given = get_runtime().context
        kept = state.get(RUN_CONTEXT)
        fingerprint = (_fingerprint(given), _frozen(kept) if kept else None)
        try:
            return self._cache.settings[fingerprint]
        except (KeyError, TypeError):  # new settings, or a value that cannot be a key
            pass
        ctx = RefineContext.coerce(given)
        if kept:
            ctx = ctx.over_kept(kept)
        merged = ctx.over(self.defaults)
        with self._cache.lock:
            if len(self._cache.settings) >= _PLANS_MAX:
                self._cache.settings.pop(next(iter(self._cache.settings)))
            try:
                self._cache.settings[fingerprint] = merged
            except TypeError:
                pass
        return merged

    def plan(self, ctx: RefineContext) -> RunPlan:
        """The critic-independent parts of a run's plan for these settings, kept per settings."""
        return self._entry(ctx)[1]

    def memo(self, ctx: RefineContext) -> dict[str, Any]:
        """A place to keep what is built once per settings (the critic), beside the plan."""
        return self._entry(ctx)[2]

    def _entry(self, ctx: RefineContext) -> tuple[RefineContext, RunPlan, dict[str, Any]]:
        key = (id(ctx), tuple(os.environ.get(name) for name in _ENVIRONMENT))
        entry = self._cache.plans.get(key)
        if entry is not None and entry[0] is ctx:
            return entry
        prompts = self.prompt_set(ctx)
        plan = RunPlan(
            prompts=prompts,
            profile=self.profile_name(ctx),
            policies=tuple(policies_for(self.stop, ctx, prompts.stop)),
            writes_code=_writes_code(prompts),
        )
        entry = (ctx, plan, {})
        with self._cache.lock:
            if len(self._cache.plans) >= _PLANS_MAX:
                self._cache.plans.pop(next(iter(self._cache.plans)))
            self._cache.plans[key] = entry
        return entry

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
            keep_code_fences=self.plan(ctx).writes_code,
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
