"""The begin node: a run starts here.

It keeps the settings the run began with in the thread (for its resumes and
continuations, which may bring no context), and on a thread whose last run
finished it clears that run's attempts and outputs. Everything a run's start
can be refused for was checked before LangGraph wrote the input
(`graphs/checked.py`, `Loop.check_start`).
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from self_refine.context import RefineContext, settings_of
from self_refine.nodes.plan import Loop
from self_refine.nodes.runnable import Node
from self_refine.state import RUN_CONTEXT, RefineState, start_over, starts_over

__all__ = ["make_begin"]


def make_begin(loop: Loop) -> Node:
    """Build the node that starts a run."""

    def begin(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Keep the run's settings; clear an earlier run's results from the thread.

        `fan_out` tells the routing how many replies the first draft step samples.
        """
        given = runtime.context
        settings = settings_of(given, loop.settings)
        kept = settings.kept() if given is not None else {}
        cleared = start_over() if starts_over(state) else {}
        return {**cleared, RUN_CONTEXT: kept, "fan_out": settings.candidates}

    return Node(begin, name="begin")
