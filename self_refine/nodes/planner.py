"""The planner node: what the next step of a run that samples or searches asks.

A run that samples or searches comes here first and after each judged step (the routing
sends it: `routing.route_after_step`). The planner records the step in the search
(`search.record_step`: the drafts it judged, each an arm when a verifier failed it
saying what failed, unless rejected or a repeat; the parents counted as refined; what
each kind of reply cost) and chooses the next step's replies (`search.plan_step`: as
many as `fan_out`, the width under the token budget the step's record worked out, each a
fresh draft or a refinement of one node), into `next_replies`, unless the step named a
stop reason; its edge sends one `candidate` branch per reply, with the chain of drafts
that reply refines, or finalizes. Before the first step it makes the input's draft, when
there is one, the tree's first node, and the critique judges it. The search and the plan
are state, and the draws are seeded by the task and the step, so a resumed or forked run
plans what it planned.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from self_refine.drafts import drafts_of, step_drafts
from self_refine.nodes.runnable import Node
from self_refine.nodes.search import initial_search, plan_step, record_step
from self_refine.settings.fields import RefineContext
from self_refine.state import PlannedReply, RefineState

__all__ = ["make_planner"]


def make_planner() -> Node:
    """Build the node that plans each step of a run that samples or searches."""

    def planner(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Record the last step in the search and plan the next one."""
        search = state.get("search") or initial_search()
        attempts = state.get("attempts") or []
        if attempts:
            latest = attempts[-1]
            known = [draft["draft"] for draft in drafts_of(attempts[:-1])]
            search = record_step(search, step_drafts(latest), known)
            if state.get("stop_reason"):
                return {"search": search, "next_replies": []}
            step = latest["iteration"] + 1
        elif (state.get("draft") or "").strip():
            given: list[PlannedReply] = [{"node": 0, "parent": None}]
            return {"search": search, "next_replies": given}
        else:
            step = 0
        width = state.get("fan_out") or 1
        may_refine = runtime.context.strategy == "search"  # a sampling run writes afresh only
        replies = plan_step(search, width, may_refine=may_refine, task=state["task"], step=step)
        return {"search": search, "next_replies": replies}

    return Node(planner, name="planner")
