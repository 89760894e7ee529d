"""The begin node: a run starts here.

It keeps the settings the run began with in the thread (for its resumes and
continuations, which may bring no context) and the JSON schema of a typed answer,
and on a thread whose last run
finished it clears that run's attempts and outputs. Everything a run's start
can be refused for was checked before LangGraph wrote the input
(`graphs/checked.py`, `settings.call.check`).
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from self_refine.nodes.runnable import Node
from self_refine.nodes.steps import first_width
from self_refine.settings.call import Parts
from self_refine.settings.fields import RefineContext
from self_refine.state import ANSWER_SCHEMA, RUN_CONTEXT, RefineState, start_over, starts_over

__all__ = ["make_begin"]


def make_begin(parts: Parts) -> Node:
    """Build the node that starts a run."""

    def begin(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Keep the run's settings; clear an earlier run's results from the thread.

        `fan_out` tells the routing how many replies the first draft step samples.
        """
        plan = parts.plan(runtime.context)
        schema = plan.answer_format.schema if plan.answer_format is not None else None
        cleared = start_over() if starts_over(state) else {}
        kept = plan.settings.kept()
        return {**cleared, RUN_CONTEXT: kept, ANSWER_SCHEMA: schema, "fan_out": first_width(plan)}

    return Node(begin, name="begin")
