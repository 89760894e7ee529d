"""How a refine request may be laid out: the forms `render.py` builds, and which is used."""

from __future__ import annotations

from typing import Literal

__all__ = ["DEFAULT_REFINE_FORM", "REFINE_FORMS", "SEARCH_REFINE_FORM", "RefineForm"]

RefineForm = Literal["conversation", "single", "fresh"]
REFINE_FORMS: tuple[RefineForm, ...] = ("conversation", "single", "fresh")
"""How a refine request may be laid out (`render.refine_messages` builds each)."""

DEFAULT_REFINE_FORM: RefineForm = "conversation"
"""The form used unless a profile or the run's settings choose another (see DESIGN.md)."""

SEARCH_REFINE_FORM: RefineForm = "fresh"
"""The form of a search's refinements unless a profile or the run's settings choose one:
the findings without a draft to copy (measured: docs/guides/quality.md, "A search's
refinements, by form")."""
