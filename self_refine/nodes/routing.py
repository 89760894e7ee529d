"""Pure routing functions: they read the state and never call a model or raise."""

from __future__ import annotations

from typing import Literal

from self_refine.state import RefineState

__all__ = [
    "route_after_critique",
    "route_after_generate",
    "route_after_refine",
    "route_start",
]


def route_start(state: RefineState) -> Literal["generate", "critique"]:
    """Start at the critique when the input brings a draft, else generate one."""
    return "critique" if (state.get("draft") or "").strip() else "generate"


def route_after_generate(state: RefineState) -> Literal["generate", "critique"]:
    """Ask the generator again after a rejected reply; else critique the draft."""
    return "generate" if state.get("ask_again") else "critique"


def route_after_refine(state: RefineState) -> Literal["refine", "critique"]:
    """Ask the refiner again after a rejected reply; else critique the draft."""
    return "refine" if state.get("ask_again") else "critique"


def route_after_critique(state: RefineState) -> Literal["refine", "finalize"]:
    """Finalize once the critique step has named a stop reason."""
    return "finalize" if state.get("stop_reason") else "refine"
