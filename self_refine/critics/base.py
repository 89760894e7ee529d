"""What every critic receives and returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

from self_refine.content import TaskContent
from self_refine.state import Attempt, Critique, Usage

__all__ = ["Critic", "CritiqueRequest", "CritiqueResult", "RunCritic"]


@dataclass(frozen=True)
class CritiqueRequest:
    """The draft to judge, with the task, the earlier attempts and any reference data.

    `task` is the task as given: its text, or content blocks with images (which
    only models see; verifiers get its text). `notes` are findings of automatic checks
    (verifiers) that a critic should explain and extend. `unasked`, when set, says why
    the explaining critic is not to be asked (the token budget left cannot hold its
    critique: `stopping.critique_short`): the verifiers judge alone, and the critique
    says so in their stead.
    """

    task: TaskContent
    draft: str
    iteration: int
    attempts: Sequence[Attempt] = ()
    reference: Any = None
    notes: Sequence[str] = ()
    unasked: str | None = None


class CritiqueResult(NamedTuple):
    """A critique, the tokens spent obtaining it, and what went wrong on the way.

    `checked` is the lowest score the verifiers gave the draft (None when no verifier
    judged it): candidates are ranked by it before the critic's own score.
    """

    critique: Critique
    usage: Usage
    problems: tuple[str, ...] = ()
    checked: float | None = None


@runtime_checkable
class Critic(Protocol):
    """Turns a request into a critique; sync and async."""

    name: str

    def critique(self, request: CritiqueRequest) -> CritiqueResult:
        """Judge the draft."""
        ...

    async def acritique(self, request: CritiqueRequest) -> CritiqueResult:
        """Judge the draft without blocking the event loop."""
        ...


class RunCritic(Critic, Protocol):
    """A run's whole critic (its verifiers and explaining critic, and what fronts them).

    `explainer` is the critic that explains the verifiers' findings (None: verifiers
    only); `check` refuses, before any model call, a reference it could not judge by.
    """

    explainer: Critic | None

    def check(self, reference: Any) -> None:
        """Raise ConfigError now if the reference is malformed or no critic could judge."""
        ...
