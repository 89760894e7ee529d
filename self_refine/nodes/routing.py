"""Pure routing functions: they read the state and never call a model."""

from __future__ import annotations

from typing import Literal

from self_refine.errors import ConfigError
from self_refine.state import RefineState, validate_input

__all__ = ["route_after_critique", "route_start"]


def route_start(state: RefineState) -> Literal["generate", "critique"]:
    """Start at the critique when the input brings a draft, else generate one.

    New input on a thread whose run finished starts a new refinement (the
    first node clears the old attempts); on a thread whose run is still
    unfinished it is refused, since continuing that run takes None as input.
    """
    validate_input(state)
    if state.get("attempts") and not state.get("stop_reason"):
        raise ConfigError(
            "this thread has an unfinished refinement: continue it by invoking the graph "
            "with None as the input, or give the new task a new thread id"
        )
    return "critique" if (state.get("draft") or "").strip() else "generate"


def route_after_critique(state: RefineState) -> Literal["refine", "finalize"]:
    """Finalize once the critique step has named a stop reason."""
    return "finalize" if state.get("stop_reason") else "refine"
