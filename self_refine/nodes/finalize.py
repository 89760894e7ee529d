"""The finalize node: pick the answer from the attempts."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from self_refine.context import RefineContext
from self_refine.nodes.plan import Loop
from self_refine.nodes.runnable import Node
from self_refine.state import Attempt, RefineState

__all__ = ["make_finalize", "pick_best"]


def pick_best(attempts: list[Attempt]) -> Attempt | None:
    """The highest-scoring attempt; the last when none has a score.

    Ties go to the earlier, and among those the shorter, draft: a later draft
    must score higher to be preferred, so growth never wins a tie. Empty drafts
    (no usable reply) are candidates only when nothing else is.
    """
    usable = [a for a in attempts if a["draft"].strip()] or attempts
    scored = [a for a in usable if a["critique"].get("score") is not None]
    if not scored:
        return usable[-1] if usable else None
    return max(scored, key=lambda a: (a["critique"]["score"], -a["iteration"], -len(a["draft"])))


def make_finalize(loop: Loop) -> Node:
    """Build the node that chooses the answer ("best" or "last")."""

    def finalize(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Choose the answer among the attempts."""
        attempts = state.get("attempts") or []
        last = attempts[-1] if attempts else None
        best = pick_best(attempts)
        chosen = last if loop.settings_for(state, runtime).select == "last" else best
        return {
            "answer": chosen["draft"] if chosen else state.get("draft", ""),
            "best": best,
            "last": last,
            "iterations": state.get("iteration", 0),
            "score": chosen["critique"].get("score") if chosen else None,
            # The working draft is cleared, so that new input on this thread starts
            # over from its own draft (or generates one) rather than this run's.
            "draft": "",
        }

    return Node(finalize, name="finalize")
