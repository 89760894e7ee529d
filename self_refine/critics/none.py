"""The critic of a run that critiques nothing (`critics="none"`): self-consistency's samples.

A vote over fresh samples (Wang et al., 2023) needs no critique: the final answer most
samples state is the answer. `NoCritic` stands where the run's critic stands, so the
graph, the planner, the stop policies and the records stay as they are, but it calls
no model and says nothing: each draft's critique is empty (`source` "none", no score,
not done, judged by no verifier), and the run's tokens go to samples alone.
"""

from __future__ import annotations

from typing import Any

from self_refine.critics.base import Critic, CritiqueRequest, CritiqueResult
from self_refine.state import Critique, add_usage

__all__ = ["NO_CRITIC", "NoCritic"]

NO_CRITIC = "none"
"""The critic list that critiques nothing (`critics="none"`): a vote over samples alone."""


class NoCritic:
    """Judges nothing and calls no model: every draft gets the same empty critique."""

    name = NO_CRITIC
    explainer: Critic | None = None

    def check(self, reference: Any) -> None:
        """Nothing to check: no critic reads the reference."""

    def critique(self, request: CritiqueRequest) -> CritiqueResult:
        """The empty critique, at no cost."""
        return CritiqueResult(Critique(source=NO_CRITIC), add_usage())

    async def acritique(self, request: CritiqueRequest) -> CritiqueResult:
        """Async twin of critique()."""
        return self.critique(request)
