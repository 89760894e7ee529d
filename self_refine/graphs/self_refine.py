"""The factory: build the Self-Refine state graph."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph

from self_refine.context import RefineContext
from self_refine.critics import critic_names, resolve_critics
from self_refine.models.resolve import check_model
from self_refine.nodes import (
    Deps,
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

__all__ = ["GRAPH_NAME", "create_self_refine_graph", "recursion_limit"]

ModelLike = BaseChatModel | str

GRAPH_NAME = "self_refine"
"""The name to compile the graph with: its trace in LangSmith carries this name."""


def recursion_limit(max_iterations: int) -> int:
    """Graph steps a run of `max_iterations` refine steps needs, with a small margin.

    generate + critique, then refine + critique per iteration, then finalize.
    """
    return 2 * max_iterations + 5


def create_self_refine_graph(
    model: ModelLike | None,
    *,
    generator_model: ModelLike | None = None,
    critic_model: ModelLike | None = None,
    refiner_model: ModelLike | None = None,
    critics: str | Sequence[Any] = (),
    stop: StopPolicy | Sequence[StopPolicy] | None = None,
    prompts: PromptSet | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    score_threshold: float | None = None,
    patience: int | None = None,
    history_window: int | None = None,
    select: Literal["best", "last"] = "best",
    profile: str = "general",
    max_tokens_total: int | None = None,
    max_retries: int | None = None,
    timeout: float | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
) -> StateGraph[RefineState, RefineContext, RefineInput, RefineOutput]:
    """Build the (uncompiled) generate -> critique -> refine loop.

    `model` serves every role unless a role has its own model; each may be a
    LangChain chat model or a model string ("offline", "gpt-4o-mini",
    "openai:gpt-4o-mini"). The keyword settings are defaults that a run's
    `RefineContext` may override. `critics` lists who critiques: verifier names
    ("answer", "python_tests", "concepts", "json_schema") or (task, draft,
    reference) callables, which run first, and one of "llm", "human" or a
    Critic object, which explains their findings when one fails ("human" works
    alone; a string is read as "name,name"; default: the profile's critics).
    `stop` replaces the profile's policies (critic done, draft unchanged,
    ...); `verified` is always checked first and the iteration cap always
    applies. `base_url` (an OpenAI-compatible server), `api_key`, `max_retries`
    and `timeout` apply to models given as strings (configure a model instance
    yourself); the key is never stored. Compile the result
    with the checkpointer of your choice, and name it:
    `.compile(checkpointer=..., name=GRAPH_NAME)`.
    """
    defaults = RefineContext(
        max_iterations=max_iterations,
        score_threshold=score_threshold,
        patience=patience,
        history_window=history_window,
        select=select,
        profile=profile,
        max_tokens_total=max_tokens_total,
        max_retries=max_retries,
        timeout=timeout,
        base_url=base_url,
        api_key=api_key,
    )
    if prompts is None:
        get_profile(profile)  # unknown profiles fail here, before any model call
    roles = {
        "generator": generator_model or model,
        "critic": critic_model or model,
        "refiner": refiner_model or model,
    }
    for spec in roles.values():
        check_model(spec, base_url=base_url)  # strings of no known form fail here
    if isinstance(critics, str):
        critics = critic_names(critics)
    if critics:
        resolve_critics(critics)  # unknown names, bad combinations fail here
    if stop is not None and callable(stop):
        stop = [stop]
    deps = Deps(models=roles, defaults=defaults, stop=stop, prompts=prompts, critics=tuple(critics))  # type: ignore[arg-type]

    builder = StateGraph(
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
