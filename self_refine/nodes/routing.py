"""Pure routing functions: they read the state and never call a model or raise.

Whether a run plans its steps (`settings.call.plans_steps`, of the settings the run
began with, which `begin` keeps in the state) is read here and nowhere else among the
nodes: a run that samples or searches goes to the `planner` node
after `begin` and after each judged step, and the planner's edge sends the replies
it planned (or finalizes); a run that refines goes on to `refine`, or to one `candidate`
branch per reply when a step samples several (`fan_out` > 1, see
`nodes/candidates.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Required, cast

from langgraph.types import Send
from typing_extensions import TypedDict

from self_refine.content import TaskContent, by_reference
from self_refine.drafts import Attempt, chain_of
from self_refine.prompts.forms import RefineForm
from self_refine.settings.call import plans_steps
from self_refine.state import RUN_CONTEXT, PlannedReply, RefineState, add_usage
from self_refine.stopping import critique_cost

__all__ = [
    "CandidateInput",
    "candidate_sends",
    "route_after_generate",
    "route_after_planner",
    "route_after_refine",
    "route_after_step",
    "route_start",
]


class CandidateInput(TypedDict, total=False):
    """What one candidate branch is sent (`Send`): the state its draft step reads.

    `candidate` is the branch's index among the step's replies and `width` how many
    the step has; `draw` says which draw of the model asks (0: the model as it samples,
    `models.calls.candidate_model`) and `form` the refine form of its request (absent:
    the run's). In a run that samples or searches, `node` and `parent` say which draft
    it writes and which it refines, and `planned_because` why the search planned it;
    `attempts` is then the chain of drafts it refines (none for a fresh draft). `spent`
    is what the run had spent before the step and `critique_cost` what a critique is
    expected to cost (`stopping.critique_cost` of all the run's attempts; None before
    any): under a token budget they say whether the branch's critic may be asked.
    """

    task: Required[TaskContent]
    reference: Any
    draft: str
    critique: dict[str, Any]
    attempts: list[Attempt]
    iteration: int
    candidate: Required[int]
    width: int
    draw: int
    form: RefineForm
    node: int
    parent: int | None
    planned_because: str
    spent: int
    critique_cost: float | None


def _spending(state: RefineState) -> dict[str, Any]:
    """What a branch reads to know whether its critique fits the budget left (see
    `CandidateInput`)."""
    attempts = state.get("attempts") or []
    spent = add_usage(state.get("usage"))["total_tokens"]
    return {"spent": spent, "critique_cost": critique_cost(attempts)}


def _planned(state: RefineState) -> bool:
    """Whether the run's steps are planned (it samples or searches) or refine one draft."""
    return plans_steps(cast(Mapping[str, Any], state.get(RUN_CONTEXT) or {}))


def candidate_sends(state: RefineState) -> list[Send]:
    """One `candidate` branch per reply of the next draft step of a run that refines:
    candidate 0 as the model samples, in the run's form; each other one a draw of its
    own, in the fresh form (the task and the feedback, no draft), which a small model
    cannot answer by copying the draft (sampled again, an edit request mostly brings
    the same copy back)."""
    width = state.get("fan_out") or 1
    spending = _spending(state)
    sends = []
    for index in range(width):
        branch: CandidateInput = {
            "task": by_reference(state["task"]),  # inline images: stored once, in `task`
            "reference": state.get("reference"),
            "draft": state.get("draft", ""),
            "critique": state.get("critique") or {},
            "attempts": state.get("attempts") or [],
            "iteration": state.get("iteration", 0),
            "candidate": index,
            "width": width,
            "draw": index,
            "spent": spending["spent"],
            "critique_cost": spending["critique_cost"],
        }
        if index:
            branch["form"] = "fresh"
        sends.append(Send("candidate", branch))
    return sends


def _planned_send(
    state: RefineState, index: int, width: int, reply: PlannedReply, spending: dict[str, Any]
) -> Send:
    """A planned reply's branch: the chain of drafts it refines (its ancestors and itself,
    asked in the run's search form) or none (a fresh draft), drawn as its node's own draw."""
    chain = chain_of(reply["parent"], state.get("attempts") or [])
    refined = chain[-1] if chain else None
    sent: CandidateInput = {
        "task": by_reference(state["task"]),
        "reference": state.get("reference"),
        "draft": refined["draft"] if refined else "",
        "critique": refined["critique"] if refined else {},
        "attempts": chain,
        "iteration": state.get("iteration", 0),
        "candidate": index,
        "width": width,
        "draw": reply["node"],
        "node": reply["node"],
        "parent": reply["parent"],
        "spent": spending["spent"],
        "critique_cost": spending["critique_cost"],
    }
    if "planned_because" in reply:
        sent["planned_because"] = reply["planned_because"]
    return Send("candidate", sent)


def route_start(state: RefineState) -> Literal["generate", "critique", "planner"] | list[Send]:
    """A run that samples or searches starts at the planner. Another starts at the critique
    when the input brings a draft, else writes the first draft: one reply, or several."""
    if _planned(state):
        return "planner"
    if (state.get("draft") or "").strip():
        return "critique"
    return candidate_sends(state) if (state.get("fan_out") or 1) > 1 else "generate"


def route_after_generate(state: RefineState) -> Literal["generate", "critique"]:
    """Ask the generator again after a rejected reply; else critique the draft."""
    return "generate" if state.get("ask_again") else "critique"


def route_after_refine(state: RefineState) -> Literal["refine", "critique"]:
    """Ask the refiner again after a rejected reply; else critique the draft."""
    return "refine" if state.get("ask_again") else "critique"


def route_after_step(state: RefineState) -> Literal["refine", "finalize", "planner"] | list[Send]:
    """After a judged step (`critique`, `pick`): to the planner in a run that samples or
    searches; else finalize once the step named a stop reason, or refine: one reply,
    or several at once."""
    if _planned(state):
        return "planner"
    if state.get("stop_reason"):
        return "finalize"
    return candidate_sends(state) if (state.get("fan_out") or 1) > 1 else "refine"


def route_after_planner(state: RefineState) -> Literal["critique", "finalize"] | list[Send]:
    """Finalize once the last step named a stop reason; else send the planned replies,
    each to a `candidate` branch, or the input's draft, which the planner made the
    tree's first node, to the critique."""
    if state.get("stop_reason"):
        return "finalize"
    if not state.get("attempts") and (state.get("draft") or "").strip():
        return "critique"
    replies = state.get("next_replies") or []
    spending = _spending(state)
    return [
        _planned_send(state, index, len(replies), r, spending) for index, r in enumerate(replies)
    ]
