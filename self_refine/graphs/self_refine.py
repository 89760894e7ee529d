"""The factory: build the Self-Refine state graph."""

from __future__ import annotations

import dataclasses
import difflib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.graph import END, START

from self_refine.critics import critic_names, resolve_critics, resolve_verifier
from self_refine.critics.typed import ResponseFormat
from self_refine.errors import ConfigError
from self_refine.graphs.checked import CheckedStateGraph
from self_refine.models.resolve import check_model
from self_refine.models.roles import ModelLike, as_role
from self_refine.nodes import (
    Route,
    make_begin,
    make_candidate,
    make_critique,
    make_finalize,
    make_generate,
    make_pick,
    make_planner,
    make_refine,
    route_after_generate,
    route_after_planner,
    route_after_refine,
    route_after_step,
    route_start,
)
from self_refine.nodes.critic_run import CriticRun
from self_refine.prompts import PromptSet, get_profile
from self_refine.settings.call import Parts
from self_refine.settings.deployment import Deployment
from self_refine.settings.fields import FIELD_NAMES, RefineContext
from self_refine.settings.plan import Role
from self_refine.state import RefineInput, RefineOutput, RefineState
from self_refine.stopping import StopPolicy

__all__ = ["GRAPH_NAME", "Roles", "create_self_refine_graph", "group_options"]

GRAPH_NAME = "self_refine"
"""The name to compile the graph with: its trace in LangSmith carries this name."""


@dataclass(frozen=True)
class Roles:
    """A model per role, where a role should not use the graph's main model.

    Each may be a LangChain chat model, a model string, a `Runnable` from messages to a
    message, or a compiled graph with `messages` state (an agent such as
    `create_react_agent`'s, compiled without a checkpointer); None means the main model.
    """

    generator: ModelLike | None = None
    critic: ModelLike | None = None
    refiner: ModelLike | None = None


_ROLE_KEYWORDS = {f"{role}_model": role for role in ("generator", "critic", "refiner")}
_FACTORY_KEYWORDS = frozenset(
    {"roles", "critics", "judge", "stop", "prompts", "settings", "response_format"}
)
_SETTING_KEYWORDS = frozenset(FIELD_NAMES) - {"model", "critics", "judge", *_ROLE_KEYWORDS}
"""The settings a flat keyword may give: every field of RefineContext but the models,
critics and judge (factory arguments, which may hold objects)."""


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
        grouped["settings"] = dataclasses.replace(
            grouped.get("settings") or RefineContext(), **flat
        )
    return grouped


def _models_from_settings(
    model: ModelLike | None, roles: Roles, settings: RefineContext
) -> tuple[ModelLike | None, Roles, RefineContext]:
    """Move model strings given in the factory's `settings` to `model` and `roles`, warning.

    Models are factory arguments (`model`, `roles`); a run's context may still
    name others for that run.
    """
    given = {name: getattr(settings, name) for name in ("model", *_ROLE_KEYWORDS)}
    given = {name: value for name, value in given.items() if value is not None}
    if not given:
        return model, roles, settings
    warnings.warn(
        f"create_self_refine_graph(settings=RefineContext({', '.join(sorted(given))}=...)) "
        "is deprecated: pass the model as model= and role models as roles=Roles(...)",
        DeprecationWarning,
        stacklevel=3,
    )
    if "model" in given:
        if model is not None and model != given["model"]:
            raise ConfigError(
                "two models given: model= and settings.model; pass the model once, as model="
            )
        model = given.pop("model")
    for name, value in given.items():
        role = _ROLE_KEYWORDS[name]
        if getattr(roles, role) is None:
            roles = dataclasses.replace(roles, **{role: value})
    cleared: dict[str, Any] = dict.fromkeys(("model", *_ROLE_KEYWORDS))
    return model, roles, dataclasses.replace(settings, **cleared)


def create_self_refine_graph(
    model: ModelLike | None,
    *,
    roles: Roles | None = None,
    critics: str | Sequence[Any] = (),
    judge: str | Sequence[Any] = (),
    stop: StopPolicy | Sequence[StopPolicy] | None = None,
    prompts: PromptSet | None = None,
    settings: RefineContext | None = None,
    response_format: Any = None,
    deployment: Deployment | None = None,
    **deprecated: Any,
) -> CheckedStateGraph:
    """Build the (uncompiled) generate -> critique -> refine loop.

    `model` serves every role unless `roles` names another model for one; each
    may be a LangChain chat model or a model string ("offline", "local",
    "gpt-4o-mini", "openai:gpt-4o-mini"). `settings` (a `RefineContext`:
    max_iterations, profile, score_threshold, base_url, ...) are the settings of
    every run whose call brings no context; a call's `context=` is that call's
    settings (a dict's fields are laid over these). `critics` lists who
    critiques: verifier names ("answer", "python_tests", "concepts",
    "json_schema", "program") or (task, draft, reference) callables, which run first, and
    one of "llm", "human" or a Critic object, which explains their findings
    when one fails ("human" works alone; a string is read as "name,name";
    default: the profile's critics). `judge` (verifier names or callables) stands in
    front of them for the first draft: a first draft it passes is the answer as it is
    (stop reason "verified"), never critiqued or refined (a run's `judge` setting
    names others, or `[]` for none). `stop` replaces the profile's policies
    (critic done, draft unchanged, ...); `verified` is always checked first and
    the iteration cap always applies. `settings.base_url`, `api_key`,
    `max_retries`, `timeout` and `max_tokens` apply to models given as strings
    (configure a model instance yourself); the key is never stored. Compile the
    result with the checkpointer of your choice, and name it:
    `.compile(checkpointer=..., name=GRAPH_NAME)`.

    `response_format` (a pydantic model class, a TypedDict or a JSON schema) makes
    the answer typed: drafts are asked for as JSON of it (json_schema, else
    json_object, else plain text, as the model takes), a draft that does not
    validate gets the validation errors as its critique, and the output holds
    `structured_response` (the answer's JSON value) beside `answer`.

    `deployment` (a `Deployment`, for a graph served to clients) limits what a run's
    context may choose: only the models and base URLs it lists, no `api_key`; the
    deployment's keys never go to an address a client names.

    The flat keywords of version 0.1 (`critic_model=`, `max_iterations=`, ...)
    and model strings in `settings` still work and warn: pass `roles=Roles(critic=...)`
    and `settings=RefineContext(max_iterations=...)` instead.
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
    model, roles, settings = _models_from_settings(
        model, roles or Roles(), settings or RefineContext()
    )
    if prompts is None:
        get_profile(settings.profile)  # unknown profiles fail here, before any model call
    role_models: dict[Role, ModelLike | None] = {
        "generator": roles.generator or model,
        "critic": roles.critic or model,
        "refiner": roles.refiner or model,
    }
    for spec in role_models.values():
        check_model(spec, base_url=settings.base_url)  # strings of no known form fail here
    # A runnable is wrapped once, so every run calls (and every critic notes) one object.
    role_models = {role: as_role(spec) for role, spec in role_models.items()}
    answer_format = None
    if response_format is not None:
        answer_format = (
            response_format
            if isinstance(response_format, ResponseFormat)
            else ResponseFormat(response_format)  # a bad schema fails here
        )
    if isinstance(critics, str):
        critics = critic_names(critics)
    if critics:
        resolve_critics(critics)  # unknown names, bad combinations fail here
    if isinstance(judge, str):
        judge = critic_names(judge)
    for spec in judge:
        resolve_verifier(spec)  # unknown names fail here
    if stop is not None and callable(stop):
        stop = [stop]
    parts = Parts(
        roles=role_models,
        settings=settings,
        critic_call=CriticRun,
        critics=tuple(critics),
        judge=tuple(judge),
        stop=tuple(stop) if stop is not None else None,
        prompts=prompts,
        response_format=answer_format,
        deployment=deployment,
    )
    builder = CheckedStateGraph(
        parts,
        RefineState,
        context_schema=RefineContext,
        input_schema=RefineInput,
        output_schema=RefineOutput,
    )
    builder.add_node("begin", make_begin(parts))
    builder.add_node("generate", make_generate(parts))
    builder.add_node("critique", make_critique(parts))
    builder.add_node("refine", make_refine(parts))
    builder.add_node("candidate", make_candidate(parts))
    builder.add_node("pick", make_pick(parts))
    builder.add_node("planner", make_planner())
    builder.add_node("finalize", make_finalize(parts))
    builder.add_edge(START, "begin")
    first = ["generate", "critique", "candidate", "planner"]
    builder.add_conditional_edges("begin", Route(route_start), first)
    builder.add_conditional_edges("generate", Route(route_after_generate), ["generate", "critique"])
    after_step = ["refine", "finalize", "candidate", "planner"]
    builder.add_conditional_edges("critique", Route(route_after_step), after_step)
    builder.add_conditional_edges("refine", Route(route_after_refine), ["refine", "critique"])
    builder.add_edge("candidate", "pick")
    builder.add_conditional_edges("pick", Route(route_after_step), after_step)
    planned = ["candidate", "critique", "finalize"]
    builder.add_conditional_edges("planner", Route(route_after_planner), planned)
    builder.add_edge("finalize", END)
    return builder
