"""Stop policies: evaluated after each critique; the first that matches names the stop reason."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from self_refine.errors import ConfigError
from self_refine.state import Attempt, Usage

__all__ = [
    "CriticDone",
    "MaxIterations",
    "NoImprovement",
    "ScoreThreshold",
    "StopPolicy",
    "StopView",
    "TokenBudget",
    "Unchanged",
    "Verified",
    "DEFAULT_POLICIES",
    "policies_for",
    "first_stop",
]


@dataclass(frozen=True)
class StopView:
    """What a policy sees: every attempt so far (the newest critiqued), and the totals."""

    attempts: Sequence[Attempt]
    iteration: int
    usage: Usage


StopPolicy = Callable[[StopView], "str | None"]
"""A callable returning a stop reason, or None to go on."""


def _scores(view: StopView) -> list[float]:
    return [a["critique"]["score"] for a in view.attempts if a["critique"].get("score") is not None]


@dataclass(frozen=True)
class MaxIterations:
    """Stop after `n` refine steps (0: after the first draft's critique); always in force."""

    n: int

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ConfigError(f"max_iterations must be >= 0, got {self.n}")

    def __call__(self, view: StopView) -> str | None:
        return "max_iterations" if view.iteration >= self.n else None


@dataclass(frozen=True)
class Verified:
    """Stop when every verifier passed and so no LLM critique was asked for; always first."""

    def __call__(self, view: StopView) -> str | None:
        critique = view.attempts[-1]["critique"] if view.attempts else {}
        return "verified" if critique.get("verified") is True and critique.get("done") else None


@dataclass(frozen=True)
class CriticDone:
    """Stop when the critic says the draft needs no change, and its score agrees.

    A `done` that comes with a score below `min_score` is contradictory (a small
    model's "done: true, score: 0.5") and does not stop the run; a person's `done`
    stands whatever the score. A failing
    verifier always makes the merged critique not done, so a critic's `done`
    never overrides it.
    """

    min_score: float = 0.8

    def __call__(self, view: StopView) -> str | None:
        if not view.attempts:
            return None
        critique = view.attempts[-1]["critique"]
        score = critique.get("score")
        person = critique.get("source") == "human"  # a person's decision stands as given
        agreed = person or score is None or score >= self.min_score
        return "critic_done" if critique.get("done") and agreed else None


@dataclass(frozen=True)
class ScoreThreshold:
    """Stop when the latest score is at or above `threshold`."""

    threshold: float

    def __post_init__(self) -> None:
        if not 0 <= self.threshold <= 1:
            raise ConfigError(f"score_threshold must be between 0 and 1, got {self.threshold}")

    def __call__(self, view: StopView) -> str | None:
        score = view.attempts[-1]["critique"].get("score") if view.attempts else None
        return "score_threshold" if score is not None and score >= self.threshold else None


@dataclass(frozen=True)
class NoImprovement:
    """Stop when the best score has not improved over the last `patience` rounds."""

    patience: int

    def __post_init__(self) -> None:
        if self.patience < 1:
            raise ConfigError(f"patience must be >= 1, got {self.patience}")

    def __call__(self, view: StopView) -> str | None:
        scores = _scores(view)
        if len(scores) <= self.patience:
            return None
        before, recent = scores[: -self.patience], scores[-self.patience :]
        return "no_improvement" if max(recent) <= max(before) else None


@dataclass(frozen=True)
class Unchanged:
    """Stop when the refine step returned the draft it was given."""

    def __call__(self, view: StopView) -> str | None:
        if len(view.attempts) < 2:
            return None
        same = view.attempts[-1]["draft"].strip() == view.attempts[-2]["draft"].strip()
        return "unchanged" if same else None


@dataclass(frozen=True)
class TokenBudget:
    """Stop when the run has used `max_tokens_total` tokens or more."""

    max_tokens_total: int

    def __post_init__(self) -> None:
        if self.max_tokens_total < 1:
            raise ConfigError(f"max_tokens_total must be >= 1, got {self.max_tokens_total}")

    def __call__(self, view: StopView) -> str | None:
        return "token_budget" if view.usage["total_tokens"] >= self.max_tokens_total else None


DEFAULT_POLICIES: tuple[StopPolicy, ...] = (CriticDone(), Unchanged())
"""The policies in force when neither the factory nor the profile names others."""


def policies_for(
    stop: Sequence[StopPolicy] | None,
    defaults: Sequence[StopPolicy] = DEFAULT_POLICIES,
    *,
    max_iterations: int,
    score_threshold: float | None = None,
    patience: int | None = None,
    max_tokens_total: int | None = None,
) -> list[StopPolicy]:
    """The policies in force for a run, in order: `verified` first, the iteration cap last.

    `stop` (the factory's) replaces `defaults` (the profile's: critic done,
    draft unchanged, ...); `score_threshold`, `patience` and `max_tokens_total`
    add their policies when set.
    """
    policies: list[StopPolicy] = [Verified(), *(stop if stop is not None else defaults)]
    if score_threshold is not None:
        policies.append(ScoreThreshold(score_threshold))
    if patience is not None:
        policies.append(NoImprovement(patience))
    if max_tokens_total is not None:
        policies.append(TokenBudget(max_tokens_total))
    policies.append(MaxIterations(max_iterations))
    return policies


def first_stop(policies: Iterable[StopPolicy], view: StopView) -> str | None:
    """Return the reason of the first policy that matches, or None."""
    for policy in policies:
        reason = policy(view)
        if reason:
            return reason
    return None
