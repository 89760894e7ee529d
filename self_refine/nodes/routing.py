"""Pure routing functions: they read the state and never call a model."""

from __future__ import annotations

from typing import Literal

from self_refine.state import RefineState, validate_input

__all__ = ["route_after_critique", "route_start"]


def route_start(state: RefineState) -> Literal["generate", "critique"]:
    """Start at the critique when the input brings a draft, else generate one."""
    validate_input(state)
    return "critique" if (state.get("draft") or "").strip() else "generate"


def route_after_critique(state: RefineState) -> Literal["refine", "finalize"]:
    """Finalize once the critique step has named a stop reason."""
    return "finalize" if state.get("stop_reason") else "refine"
