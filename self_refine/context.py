"""Deprecated: a run's settings live in `self_refine.settings` (`RefineContext` also at the
top level, `from self_refine import RefineContext`). The old names still work here, each
with a DeprecationWarning, for one release."""

from __future__ import annotations

import warnings
from typing import Any

from self_refine.prompts import forms
from self_refine.settings import call, fields, plan

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    """The old name from its new home, with a DeprecationWarning that names that home."""
    for home in (fields, call, plan, forms):
        if name in home.__all__:
            warnings.warn(
                f"self_refine.context.{name} moved: import it from {home.__name__}",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(home, name)
    raise AttributeError(f"module 'self_refine.context' has no attribute {name!r}")
