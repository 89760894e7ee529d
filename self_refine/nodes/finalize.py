"""The finalize node: pick the answer from the attempts."""

from __future__ import annotations

from typing import Any

from self_refine.nodes.deps import Deps
from self_refine.nodes.runnable import NodeRunnable
from self_refine.state import Attempt, RefineState

__all__ = ["make_finalize", "pick_best"]


def pick_best(attempts: list[Attempt]) -> Attempt | None:
    """The highest-scoring attempt, ties to the latest; the last when none has a score."""
    scored = [a for a in attempts if a["critique"].get("score") is not None]
    if not scored:
        return attempts[-1] if attempts else None
    return max(scored, key=lambda a: (a["critique"]["score"], a["iteration"]))


def make_finalize(deps: Deps) -> NodeRunnable:
    """Build the node that chooses the answer ("best" or "last")."""

    def finalize(state: RefineState) -> dict[str, Any]:
        """Choose the answer among the attempts."""
        attempts = state.get("attempts") or []
        last = attempts[-1] if attempts else None
        best = pick_best(attempts)
        chosen = last if deps.settings().select == "last" else best
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

    return NodeRunnable(finalize, name="finalize")
