"""What the candidate tests share: a task whose words the concepts verifier checks, run."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from self_refine import RefineContext, RefineOutput, create_self_refine_graph, refine

TASK = "Write about a day out using the words: dog, frisbee, park."
REFERENCE = {"concepts": ["dog", "frisbee", "park"]}
RIGHT = "A dog catches a frisbee in the park."


def refined(model: Any, **options: Any) -> RefineOutput:
    """`refine()` of the task, judged by the concepts verifier alone, in the refine loop
    unless `options` name another strategy (the verifier would make it sample)."""
    options.setdefault("strategy", "refine")
    return refine(TASK, model=model, reference=REFERENCE, critics=["concepts"], **options)


def concepts_graph(model: Any, saver: InMemorySaver | None = None, **settings: Any) -> Any:
    """The graph with the concepts verifier, compiled with a checkpointer: the refine loop
    unless `settings` name another strategy (the verifier would make it sample)."""
    context = RefineContext(critics=("concepts",), **{"strategy": "refine", **settings})
    builder = create_self_refine_graph(model, settings=context)
    return builder.compile(checkpointer=saver or InMemorySaver())


def thread(name: str = "t") -> Any:
    """The config of one thread."""
    return {"configurable": {"thread_id": name}}
