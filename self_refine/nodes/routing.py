"""Pure routing functions: they read the state and never call a model or raise.

A draft step that samples several replies (`fan_out` > 1, the run's `candidates`)
is routed as one `Send` per reply to the `candidate` node (see `nodes/candidates.py`).
"""

from __future__ import annotations

from typing import Literal

from langgraph.types import Send

from self_refine.content import by_reference
from self_refine.nodes.search import chain_of
from self_refine.state import Branch, CandidateInput, RefineState

__all__ = [
    "candidate_sends",
    "route_after_critique",
    "route_after_generate",
    "route_after_refine",
    "route_start",
]


def candidate_sends(state: RefineState) -> list[Send]:
    """One `candidate` branch per reply of the next draft step, each sent what it reads.

    A run that samples or searches sends each branch of its `plan` the chain of drafts
    it refines (none for a fresh draft).
    """
    if state.get("plan"):
        return [_planned(state, index, branch) for index, branch in enumerate(state["plan"])]
    sends = []
    for index in range(state.get("fan_out") or 1):
        branch: CandidateInput = {
            "task": by_reference(state["task"]),  # inline images: stored once, in `task`
            "reference": state.get("reference"),
            "draft": state.get("draft", ""),
            "critique": state.get("critique") or {},
            "attempts": state.get("attempts") or [],
            "iteration": state.get("iteration", 0),
            "candidate": index,
        }
        sends.append(Send("candidate", branch))
    return sends


def _planned(state: RefineState, index: int, branch: Branch) -> Send:
    chain = chain_of(branch["parent"], state.get("attempts") or [])
    refined = chain[-1] if chain else None
    sent: CandidateInput = {
        "task": by_reference(state["task"]),
        "reference": state.get("reference"),
        "draft": refined["draft"] if refined else "",
        "critique": refined["critique"] if refined else {},
        "attempts": chain,
        "iteration": state.get("iteration", 0),
        "candidate": index,
        "node": branch["node"],
        "parent": branch["parent"],
        "refined": branch.get("refined", 0),
    }
    return Send("candidate", sent)


def _fans_out(state: RefineState) -> bool:
    return bool(state.get("plan")) or (state.get("fan_out") or 1) > 1


def route_start(state: RefineState) -> Literal["generate", "critique"] | list[Send]:
    """Start at the critique when the input brings a draft, else write the first draft:
    one reply, or several at once."""
    if (state.get("draft") or "").strip():
        return "critique"
    return candidate_sends(state) if _fans_out(state) else "generate"


def route_after_generate(state: RefineState) -> Literal["generate", "critique"]:
    """Ask the generator again after a rejected reply; else critique the draft."""
    return "generate" if state.get("ask_again") else "critique"


def route_after_refine(state: RefineState) -> Literal["refine", "critique"]:
    """Ask the refiner again after a rejected reply; else critique the draft."""
    return "refine" if state.get("ask_again") else "critique"


def route_after_critique(state: RefineState) -> Literal["refine", "finalize"] | list[Send]:
    """Finalize once the critique (or pick) step has named a stop reason; else refine:
    one reply, or several at once."""
    if state.get("stop_reason"):
        return "finalize"
    return candidate_sends(state) if _fans_out(state) else "refine"
