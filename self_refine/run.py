"""One call, no LangGraph: refine() and arefine()."""

from __future__ import annotations

import uuid
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Durability

from self_refine.content import TaskContent
from self_refine.errors import ConfigError
from self_refine.graphs.checked import CheckedCompiledGraph
from self_refine.graphs.self_refine import GRAPH_NAME, create_self_refine_graph, group_options
from self_refine.settings.fields import RefineContext
from self_refine.state import RefineInput, RefineOutput

__all__ = ["arefine", "refine"]


def _prepare(
    task: TaskContent,
    model: BaseChatModel | str,
    draft: str | None,
    reference: Any,
    context: RefineContext | None,
    checkpointer: BaseCheckpointSaver[Any] | None,
    thread_id: str | None,
    options: dict[str, Any],
) -> tuple[CheckedCompiledGraph, RefineInput, RunnableConfig]:
    if thread_id is not None and checkpointer is None:
        raise ConfigError(
            f"thread_id={thread_id!r} needs a checkpointer to keep the thread: pass "
            "checkpointer= (e.g. InMemorySaver() or SqliteSaver), or leave thread_id out"
        )
    payload: RefineInput = {"task": task}
    if draft is not None:
        payload["draft"] = draft
    if reference is not None:
        payload["reference"] = reference
    options = group_options(options)
    graph = create_self_refine_graph(model, **options).compile(
        checkpointer=checkpointer, name=GRAPH_NAME
    )
    config: RunnableConfig = {"tags": ["self-refine"]}
    if checkpointer is not None:
        config["configurable"] = {"thread_id": thread_id or str(uuid.uuid4())}
    return graph, payload, config


def _durability(checkpointer: BaseCheckpointSaver[Any] | None) -> Durability | None:
    """Save each step before the next starts, so a crash loses at most the step in flight."""
    return "sync" if checkpointer is not None else None


def refine(
    task: TaskContent,
    *,
    model: BaseChatModel | str,
    draft: str | None = None,
    reference: Any = None,
    context: RefineContext | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    thread_id: str | None = None,
    **options: Any,
) -> RefineOutput:
    """Refine a response to `task` and return the answer with every attempt.

    `task` is its text, or message content: a list of text and image blocks, e.g.
    `[{"type": "text", "text": "..."}, {"type": "image", "url": "https://..."}]`,
    which reaches every model request as given (models that read text only are
    refused before the first call).

    `options` are `create_self_refine_graph`'s keyword arguments (`roles`,
    `settings`, `critics`, `stop`, `prompts`, `response_format`: then the output's
    `structured_response` is the answer as a validated instance), or for short the fields of
    `Roles` and `RefineContext` as flat keywords (`critic_model=`,
    `max_iterations=`, `score_threshold=`, ...).
    """
    graph, payload, config = _prepare(
        task, model, draft, reference, context, checkpointer, thread_id, options
    )
    output = graph.invoke(payload, config, context=context, durability=_durability(checkpointer))
    return _typed(graph, output)


async def arefine(
    task: TaskContent,
    *,
    model: BaseChatModel | str,
    draft: str | None = None,
    reference: Any = None,
    context: RefineContext | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    thread_id: str | None = None,
    **options: Any,
) -> RefineOutput:
    """Async twin of refine()."""
    graph, payload, config = _prepare(
        task, model, draft, reference, context, checkpointer, thread_id, options
    )
    output = await graph.ainvoke(
        payload, config, context=context, durability=_durability(checkpointer)
    )
    return _typed(graph, output)


def _typed(graph: Any, output: Any) -> RefineOutput:
    """The output, its `structured_response` as the validated instance (a pydantic object)."""
    answer_format = graph.builder.parts.response_format
    if answer_format is not None and output.get("structured_response") is not None:
        output["structured_response"] = answer_format.instance(output["structured_response"])
    return cast(RefineOutput, output)
