"""How each strategy of the budget benchmark is asked of the library: the one mapping.

A strategy is a `RefineContext` (the library's settings, given to `arefine_batch`) with
the run's token budget as `max_tokens_total`:

- sample: fresh first drafts, no refinement, the run's verifier picking one;
- refine: one reply per step, the verifier's findings explained by the model's critic;
- refine+checks: one reply per step, fed the verifier's findings as they are (a failing
  example's assert and what the function returned), no critic explaining them: self-repair
  with execution feedback, every token of the budget on drafts (where the feedback setting
  gives no verifier, the LLM critic alone, as refine);
- refine+candidates: as refine, `candidates` replies per step (the first draft's too);
- search: the library's search over the tree of attempts, on the verifier's findings
  alone (no explaining critic: its tokens would come out of the budget).
- vote: self-consistency (Wang et al., 2023), the baseline where no checker exists:
  fresh drafts, `select="vote"`, and no critic (`critics="none"`: every token of the
  budget buys samples); the run's verifier, where the feedback setting gives one, still
  judges (the vote counts the drafts it passed, and a passed draft ends the run). Only for
  sets whose profile's drafts end with a final answer (arithmetic: "math"); elsewhere
  `strategy_settings` says it is skipped.

The run's verifier is what the feedback setting allows (`feedback.run_checks`); where it
allows none (critic only, or arithmetic, whose run has no key), every strategy but vote has
the LLM critic alone: its score picks sample's draft and ranks the search's (vote has no
critic at all).

Where `RefineContext` has a `strategy` setting, each strategy is that setting (the
library's sample spends the budget by itself). Where it has none, sample is one step of
`candidates` fresh drafts (`max_iterations=0`), as many as fill the budget at the size of
the item's first draft and a quarter more (sampled drafts may be shorter than the greedy
one), at most the library's limit; and search cannot be asked for: `strategy_settings` says so.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

__all__ = [
    "STRATEGIES",
    "Unavailable",
    "has_strategy_setting",
    "strategy_settings",
]

STRATEGIES = ("sample", "refine", "refine+checks", "refine+candidates", "search", "vote")
"""Every strategy the benchmark compares, in the order its tables show them."""

_SAMPLE_MARGIN = 1.25
"""Fresh drafts asked beyond the budget's count at the first draft's size (interim sample)."""


class Unavailable(Exception):
    """This library cannot run the strategy (the message says why)."""


def has_strategy_setting() -> bool:
    """True when the library's settings choose a strategy (`RefineContext.strategy`)."""
    from self_refine.settings.fields import RefineContext

    return "strategy" in {f.name for f in dataclasses.fields(RefineContext)}


def strategy_settings(
    strategy: str,
    *,
    verifier: str | None,
    profile: str,
    budget: int,
    first_tokens: int,
    candidates: int,
) -> dict[str, Any]:
    """The `RefineContext` fields that run `strategy` on one item within `budget` tokens.

    `verifier` is the run's verifier (None: the LLM critic alone, for vote no critic);
    `first_tokens` is what the item's first draft cost (prompt and reply); `candidates` the
    replies per step of refine+candidates (and of search). Raises `Unavailable` for a
    strategy this library cannot run, or this profile cannot take (a vote where drafts
    state no final answer).
    """
    from self_refine.settings.fields import CANDIDATES_LIMIT, MAX_ITERATIONS_LIMIT

    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    # The budget, not the step count, ends a run: as many steps as the library allows.
    common: dict[str, Any] = {
        "profile": profile,
        "max_tokens_total": budget,
        "max_iterations": MAX_ITERATIONS_LIMIT,
    }
    checked = (verifier,) if verifier else ("llm",)
    refining = {**common, "critics": (verifier, "llm") if verifier else ("llm",)}
    if strategy == "vote":
        return {**common, **_vote(profile, verifier)}
    if has_strategy_setting():
        if strategy == "sample":
            return {**common, "strategy": "sample", "critics": checked}
        if strategy == "refine":
            return {**refining, "strategy": "refine"}
        if strategy == "refine+checks":
            return {**common, "critics": checked, "strategy": "refine"}
        if strategy == "refine+candidates":
            return {**refining, "strategy": "refine", "candidates": candidates}
        # The search runs on the verifier's exact findings alone: an explaining critic's
        # tokens come out of the budget its replies spend.
        search = {**refining, "critics": checked}
        return {**search, "strategy": "search", "candidates": candidates}
    if strategy == "search":
        raise Unavailable(
            "search is skipped: this library's RefineContext has no `strategy` setting "
            "(the search strategy has not landed on this branch)"
        )
    if strategy == "sample":
        drafts = math.ceil(_SAMPLE_MARGIN * budget / max(first_tokens, 1))
        drafts = max(2, min(CANDIDATES_LIMIT, drafts))
        return {**common, "critics": checked, "candidates": drafts, "max_iterations": 0}
    if strategy == "refine":
        return refining
    if strategy == "refine+checks":
        return {**common, "critics": checked}
    return {**refining, "candidates": candidates}


def _vote(profile: str, verifier: str | None) -> dict[str, Any]:
    """The settings of a vote over fresh samples with no critic; `Unavailable` where the
    library or the profile cannot vote."""
    from self_refine.critics.none import NO_CRITIC
    from self_refine.prompts import get_profile

    if not has_strategy_setting():
        raise Unavailable("vote is skipped: this library's RefineContext has no `strategy` setting")
    if not get_profile(profile).final_answer:
        raise Unavailable(
            f"vote is skipped: it counts final answers, and the drafts of profile {profile!r} "
            "state none"
        )
    critics = (verifier,) if verifier else (NO_CRITIC,)
    return {"strategy": "sample", "select": "vote", "critics": critics}
