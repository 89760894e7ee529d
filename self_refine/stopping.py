"""Stop policies: evaluated after each critique; the first that matches names the stop reason."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from self_refine.drafts import Attempt, Usage, in_tree
from self_refine.errors import ConfigError

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
    "UNASKED",
    "critique_cost",
    "critique_short",
    "policies_for",
    "first_stop",
    "reply_cost",
    "step_width",
    "unasked",
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
    """Stop when the refine step returned the draft it was given.

    A step of a run that samples or searches (its drafts are nodes of a tree: `in_tree`)
    was given no one draft: its best being a draft the run had is no end, since
    another branch may do better.
    """

    def __call__(self, view: StopView) -> str | None:
        if len(view.attempts) < 2 or in_tree(view.attempts[-1]):
            return None
        same = view.attempts[-1]["draft"].strip() == view.attempts[-2]["draft"].strip()
        return "unchanged" if same else None


def reply_cost(attempts: Sequence[Attempt]) -> float | None:
    """What one reply of the next step is expected to cost, in tokens: the mean cost of a
    reply of the steps after the first so far (a refine step's reply with its critique,
    each candidate of a step), else of the first step's; None before any step.

    The first step (a first draft, or a given draft's critique) reads the task alone; a
    later step's request carries drafts and feedback, so it costs what later steps cost.
    """
    later = [a for a in attempts if a["iteration"] > 0] or list(attempts)
    replies = sum(1 + len(a.get("candidates", [])) for a in later)
    if not replies:
        return None
    return sum(int(a["usage"].get("total_tokens", 0)) for a in later) / replies


def step_width(wanted: int, budget: int | None, spent: int, cost: float | None) -> int:
    """How many of `wanted` replies the next step may ask for within a token `budget`
    (None: all of them), `spent` tokens spent so far and `cost` the expected cost of a
    reply (`reply_cost`): as many as what is left holds, 0 when not even one fits.

    A run that has written nothing yet (`cost` None) asks for one reply, its cost
    unknown: so a run overshoots its budget by one reply at most.
    """
    if budget is None:
        return wanted
    if cost is None:
        return 1
    return max(0, min(wanted, int((budget - spent) // max(cost, 1.0))))


UNASKED = "budget"
"""The source of the critique a draft gets in place of the critic's when the token budget
left cannot hold a critique (`critique_short`): the critic was not asked."""


def unasked(critique: Mapping[str, Any]) -> bool:
    """Whether a recorded critique stands for a critic that was not asked (`UNASKED` among
    its sources), the token budget left being too short for it."""
    return UNASKED in str(critique.get("source") or "").split("+")


def _critiques(attempts: Sequence[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    for attempt in attempts:
        yield attempt
        yield from attempt.get("candidates") or []


def _critique_tokens(attempt: Mapping[str, Any]) -> list[int]:
    """What each reply of a step paid for its critique: the kept one (the step's
    `critique_usage` less the others'), then the others."""
    others = [_tokens(c.get("critique_usage")) for c in attempt.get("candidates") or []]
    return [_tokens(attempt.get("critique_usage")) - sum(others), *others]


def _tokens(usage: Mapping[str, Any] | None) -> int:
    return int((usage or {}).get("total_tokens", 0))


def critique_cost(attempts: Sequence[Mapping[str, Any]]) -> float | None:
    """What the next critique is expected to cost, in tokens (prompt and reply): the mean of
    the run's critiques so far that cost tokens (each reply's `critique_usage`: the
    critic's calls; a critique the verifiers settled alone costs none and says nothing of
    what the critic costs); None before any."""
    costs = [tokens for a in attempts for tokens in _critique_tokens(a) if tokens > 0]
    return sum(costs) / len(costs) if costs else None


def critique_short(
    budget: int | None, left: float, draft_tokens: int, cost: float | None
) -> str | None:
    """Why a draft's critic is not to be asked, when `left` tokens of a `budget` (what is
    left after the draft was written) cannot hold a critique; None when one fits, or
    with no budget.

    A critique is expected to cost `cost` (`critique_cost`, the run's critiques so far);
    before any, what the draft cost (`draft_tokens`, its request and reply): a critique
    reads the task and the draft, as the draft's request read the task and its reply
    wrote the draft. A draft that cost nothing (one the input gave) with no critique
    before it is critiqued: nothing says what a critique would cost.
    """
    if budget is None:
        return None
    expected = cost if cost is not None else float(draft_tokens)
    if left >= expected:
        return None
    return (
        f"The critic was not asked: the token budget left, {max(int(left), 0)} tokens, "
        f"cannot hold a critique of about {round(expected)} tokens."
    )


@dataclass(frozen=True)
class TokenBudget:
    """Stop when the run has used `max_tokens_total` tokens or more, when what is left
    would not pay for one reply of the next step (`step_width`), or when a reply of the
    latest step went unjudged because what was left could not hold its critique
    (`critique_short`)."""

    max_tokens_total: int

    def __post_init__(self) -> None:
        if self.max_tokens_total < 1:
            raise ConfigError(f"max_tokens_total must be >= 1, got {self.max_tokens_total}")

    def __call__(self, view: StopView) -> str | None:
        spent = view.usage["total_tokens"]
        if spent >= self.max_tokens_total:
            return "token_budget"
        latest = view.attempts[-1:]
        if any(unasked(reply["critique"]) for reply in _critiques(latest)):
            return "token_budget"
        cost = reply_cost(view.attempts)
        return "token_budget" if step_width(1, self.max_tokens_total, spent, cost) == 0 else None


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
