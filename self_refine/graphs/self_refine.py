"""The factory: build the Self-Refine state graph."""

from __future__ import annotations

import dataclasses
import difflib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph

from self_refine.context import RefineContext
from self_refine.critics import critic_names, resolve_critics
from self_refine.errors import ConfigError
from self_refine.graphs.checked import CheckedStateGraph
from self_refine.models.resolve import check_model
from self_refine.nodes import (
    Deps,
    Role,
    make_critique,
    make_finalize,
    make_generate,
    make_refine,
    route_after_critique,
    route_start,
)
from self_refine.prompts import PromptSet, get_profile
from self_refine.state import RefineInput, RefineOutput, RefineState
from self_refine.stopping import DEFAULT_MAX_ITERATIONS, StopPolicy

__all__ = ["GRAPH_NAME", "Roles", "create_self_refine_graph", "group_options", "recursion_limit"]

ModelLike = BaseChatModel | str

GRAPH_NAME = "self_refine"
"""The name to compile the graph with: its trace in LangSmith carries this name."""


def recursion_limit(max_iterations: int) -> int:
    """Graph steps a run of `max_iterations` refine steps needs, with a small margin.

    generate + critique, then refine + critique per iteration, then finalize.
    """
    return 2 * max_iterations + 5


@dataclass(frozen=True)
class Roles:
    """A model per role, where a role should not use the graph's main model.

    Each may be a LangChain chat model or a model string; None means the main model.
    """

    generator: ModelLike | None = None
    critic: ModelLike | None = None
    refiner: ModelLike | None = None


_ROLE_KEYWORDS = {
    "generator_model": "generator",
    "critic_model": "critic",
    "refiner_model": "refiner",
}
_SETTING_KEYWORDS = frozenset(
    {
        "max_iterations",
        "score_threshold",
        "patience",
        "history_window",
        "refine_form",
        "select",
        "profile",
        "max_tokens_total",
        "max_tokens",
        "max_draft_chars",
        "max_retries",
        "timeout",
        "base_url",
        "api_key",
    }
)


def group_options(options: dict[str, Any]) -> dict[str, Any]:
    """Fold flat keywords (`critic_model=`, `max_iterations=`, ...) into `roles` and `settings`.

    The one-call helpers (`refine`, `refine_batch`) accept the flat form; the
    factory takes the grouped one. Unknown keywords raise ConfigError with the
    closest valid name.
    """
    grouped = dict(options)
    role_models = {_ROLE_KEYWORDS[k]: grouped.pop(k) for k in list(grouped) if k in _ROLE_KEYWORDS}
    flat = {k: grouped.pop(k) for k in list(grouped) if k in _SETTING_KEYWORDS}
    unknown = set(grouped) - _FACTORY_KEYWORDS
    if unknown:
        name = sorted(unknown)[0]
        valid = sorted(_FACTORY_KEYWORDS | _SETTING_KEYWORDS | set(_ROLE_KEYWORDS))
        close = difflib.get_close_matches(name, valid, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown option {name!r}{hint}; valid options: {', '.join(valid)}")
    if role_models:
        base = grouped.get("roles") or Roles()
        grouped["roles"] = dataclasses.replace(base, **role_models)
    if flat:
        base_settings = grouped.get("settings") or RefineContext()
        grouped["settings"] = dataclasses.replace(base_settings, **flat)
    return grouped


_FACTORY_KEYWORDS = frozenset({"roles", "critics", "stop", "prompts", "settings"})


def create_self_refine_graph(
    model: ModelLike | None,
    *,
    roles: Roles | None = None,
    critics: str | Sequence[Any] = (),
    stop: StopPolicy | Sequence[StopPolicy] | None = None,
    prompts: PromptSet | None = None,
    settings: RefineContext | None = None,
    **deprecated: Any,
) -> StateGraph[RefineState, RefineContext, RefineInput, RefineOutput]:
    """Build the (uncompiled) generate -> critique -> refine loop.

    `model` serves every role unless `roles` names another model for one; each
    may be a LangChain chat model or a model string ("offline", "gpt-4o-mini",
    "openai:gpt-4o-mini"). `settings` (a `RefineContext`: max_iterations,
    profile, score_threshold, base_url, ...) are the defaults of every run; a
    run's own context overrides them field by field. `critics` lists who
    critiques: verifier names ("answer", "python_tests", "concepts",
    "json_schema") or (task, draft, reference) callables, which run first, and
    one of "llm", "human" or a Critic object, which explains their findings
    when one fails ("human" works alone; a string is read as "name,name";
    default: the profile's critics). `stop` replaces the profile's policies
    (critic done, draft unchanged, ...); `verified` is always checked first and
    the iteration cap always applies. `settings.base_url`, `api_key`,
    `max_retries` and `timeout` apply to models given as strings (configure a
    model instance yourself); the key is never stored. Compile the result with
    the checkpointer of your choice, and name it:
    `.compile(checkpointer=..., name=GRAPH_NAME)`.

    The flat keywords of version 0.1 (`critic_model=`, `max_iterations=`, ...)
    still work and warn: pass `roles=Roles(critic=...)` and
    `settings=RefineContext(max_iterations=...)` instead.
    """
    if deprecated:
        grouped = group_options({**deprecated, "roles": roles, "settings": settings})
        warnings.warn(
            f"create_self_refine_graph({', '.join(sorted(deprecated))}=...) is deprecated: "
            "pass roles=Roles(...) for role models and settings=RefineContext(...) for "
            "run settings",
            DeprecationWarning,
            stacklevel=2,
        )
        roles, settings = grouped.get("roles"), grouped.get("settings")
    roles = roles or Roles()
    defaults = dataclasses.replace(settings or RefineContext(), model=None)
    defaults.max_iterations = defaults.max_iterations or DEFAULT_MAX_ITERATIONS
    defaults.select = defaults.select or "best"
    defaults.profile = defaults.profile or "general"
    if prompts is None:
        get_profile(defaults.profile)  # unknown profiles fail here, before any model call
    role_models: dict[Role, ModelLike | None] = {
        "generator": roles.generator or model,
        "critic": roles.critic or model,
        "refiner": roles.refiner or model,
    }
    for spec in role_models.values():
        check_model(spec, base_url=defaults.base_url)  # strings of no known form fail here
    if isinstance(critics, str):
        critics = critic_names(critics)
    if critics:
        resolve_critics(critics)  # unknown names, bad combinations fail here
    if stop is not None and callable(stop):
        stop = [stop]
    deps = Deps(
        models=role_models,
        defaults=defaults,
        stop=stop,
        prompts=prompts,
        critics=tuple(critics),
    )

    builder = CheckedStateGraph(
        RefineState,
        context_schema=RefineContext,
        input_schema=RefineInput,
        output_schema=RefineOutput,
    )
    builder.add_node("generate", make_generate(deps))
    builder.add_node("critique", make_critique(deps))
    builder.add_node("refine", make_refine(deps))
    builder.add_node("finalize", make_finalize(deps))
    builder.add_conditional_edges(START, route_start, ["generate", "critique"])
    builder.add_edge("generate", "critique")
    builder.add_conditional_edges("critique", route_after_critique, ["refine", "finalize"])
    builder.add_edge("refine", "critique")
    builder.add_edge("finalize", END)
    return builder
