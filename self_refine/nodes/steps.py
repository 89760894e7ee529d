"""What a judged step writes: its attempt, the run's usage, the stop reason and how wide
the next step may be.

`critique` (a step of one reply) and `pick` (a step of candidates) record their step
here; what the next step asks is the routing's and, in a run that samples or searches,
the `planner` node's (`nodes/planner.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from self_refine.settings.plan import RunPlan
from self_refine.state import Attempt, Usage, add_usage, changed_only
from self_refine.stopping import StopView, first_stop, reply_cost, step_width

__all__ = ["first_width", "step_record"]

FLAGS = frozenset({"stop_reason", "fan_out"})
"""What a judged step writes only when it changes: most steps go on at the same width."""


def step_record(
    plan: RunPlan, state: Mapping[str, Any], attempt: Attempt, spent: Usage
) -> dict[str, Any]:
    """The writes that record a judged `attempt` and name the stop reason (None: go on).

    `spent` is what the step's calls cost beyond what the state's usage already counts.
    `fan_out` is how many replies the next step may ask for: the run's `candidates`,
    as many as the token budget left holds (`stopping.step_width`, the rule the
    `token_budget` policy stops by when not one reply fits). Those two are written
    only when they change (`FLAGS`).
    """
    usage = add_usage(state.get("usage"), spent)
    attempts: list[Attempt] = [*(state.get("attempts") or []), attempt]
    settings = plan.settings
    budget = settings.max_tokens_total
    # What a reply costs is read from every attempt; only a token budget needs it.
    cost = reply_cost(attempts) if budget is not None else None
    width = step_width(settings.candidates, budget, usage["total_tokens"], cost)
    writes = {
        "attempts": [attempt],
        "critique": attempt["critique"],
        "usage": usage,
        "stop_reason": first_stop(plan.policies, StopView(attempts, attempt["iteration"], usage)),
        "fan_out": width,
    }
    return changed_only(state, writes, FLAGS)


def first_width(plan: RunPlan) -> int:
    """How many replies a run's first draft step asks for: one under a token budget (what
    a reply costs is not known yet), else the run's `candidates`."""
    settings = plan.settings
    return step_width(settings.candidates, settings.max_tokens_total, 0, None)
