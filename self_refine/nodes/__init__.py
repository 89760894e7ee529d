"""The graph's nodes and routing functions, and what they share.

Each node asks the factory's `Parts` for its run's `RunPlan` (`self_refine.settings.plan`).

- `ranking.py`: which draft is kept (a run's answer, a step's candidate);
- `runnable.py`: `Node`, a node's sync and async `(state, runtime)` bodies; `Route`, a
  routing function as its edge's path;
- `begin.py`, `generate.py`, `critique.py`, `refine.py`, `finalize.py`: the nodes;
  `requests.py`: what a draft step and a critique ask; `draft.py`: what a draft step
  writes, and asking again after a rejected reply; `steps.py`: what a judged step
  writes (its attempt, the stop reason, the next step's width);
  `candidates.py`: a draft step of several replies at once (`candidate` branches)
  and the `pick` node that keeps the best; `first_verified.py`: such a step ending
  at its first verified reply;
- `planner.py`: the node that plans each step of a run that samples or searches,
  with the search of `search.py`;
- `routing.py`: the pure routing functions (where a run's settings decide its path).
"""

from self_refine.nodes.begin import make_begin
from self_refine.nodes.candidates import make_candidate, make_pick
from self_refine.nodes.critique import make_critique
from self_refine.nodes.finalize import make_finalize
from self_refine.nodes.generate import make_generate
from self_refine.nodes.planner import make_planner
from self_refine.nodes.ranking import best_attempt, best_candidate, chosen_attempt
from self_refine.nodes.refine import make_refine
from self_refine.nodes.routing import (
    candidate_sends,
    route_after_generate,
    route_after_planner,
    route_after_refine,
    route_after_step,
    route_start,
)
from self_refine.nodes.runnable import Route

__all__ = [
    "Route",
    "best_attempt",
    "best_candidate",
    "candidate_sends",
    "chosen_attempt",
    "make_begin",
    "make_candidate",
    "make_critique",
    "make_finalize",
    "make_generate",
    "make_pick",
    "make_planner",
    "make_refine",
    "route_after_generate",
    "route_after_planner",
    "route_after_refine",
    "route_after_step",
    "route_start",
]
