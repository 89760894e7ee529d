"""Critic lists: check who critiques, once and the same way for every caller.

The factory, the run's context, the command line, the batch and the critique
node all turn a critic list into a `CriticPlan` here, so a list one of them
accepts is a list the graph can run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from self_refine.critics.base import Critic
from self_refine.critics.combined import check_judgeable
from self_refine.critics.none import NO_CRITIC
from self_refine.critics.verifiers import EXPLAINER_NAMES, VerifierCritic, resolve_verifier
from self_refine.errors import ConfigError

__all__ = ["CriticPlan", "critic_names", "resolve_critics", "unchecked_verifiers"]

Explainer = str | Critic
"""The critic that explains the verifiers' findings: "llm", "human", or a Critic object."""


@dataclass(frozen=True)
class CriticPlan:
    """A checked critic list: verifiers, which run first, and at most one explaining critic."""

    verifiers: tuple[VerifierCritic, ...]
    explainer: Explainer | None

    @property
    def critiques(self) -> bool:
        """False for the list that critiques nothing (`"none"`), True for any other."""
        return bool(self.verifiers) or self.explainer is not None

    def check(self, reference: Any) -> None:
        """Raise ConfigError if the reference is malformed or no critic could judge a draft."""
        check_judgeable(self.verifiers, self.explainer is not None, reference)


def unchecked_verifiers(specs: Sequence[Any], reference: Any) -> dict[str, str]:
    """The built-in verifiers named in `specs` that have nothing to check for `reference`,
    each with what it needs ('concepts needs reference["concepts"], e.g. ...').

    A run may name a verifier whose data the reference lacks (a profile's default
    critics, no reference given): the run goes on with the critics that can judge,
    and its caller says which verifier sits idle. `specs` holds critic and judge
    specs; explaining critics and callables are skipped.
    """
    skipped = (*EXPLAINER_NAMES, NO_CRITIC)
    names = [spec for spec in specs if isinstance(spec, str) and spec not in skipped]
    reasons = {name: resolve_verifier(name).applies(reference) for name in dict.fromkeys(names)}
    return {name: reason for name, reason in reasons.items() if reason}


def critic_names(text: str) -> list[str]:
    """The names in a comma-separated critic list such as "concepts,llm"."""
    return [name.strip() for name in text.split(",") if name.strip()]


def _is_explainer(spec: Any) -> bool:
    if isinstance(spec, str):
        return spec in EXPLAINER_NAMES
    return isinstance(spec, Critic) and not isinstance(spec, VerifierCritic)


def resolve_critics(specs: str | Sequence[Any]) -> CriticPlan:
    """Check a critic list and split it into its verifiers and its explaining critic.

    `specs` holds verifier names or (task, draft, reference) callables, and at
    most one of "llm", "human" or a Critic object; a string is read as a
    comma-separated list of names. "none" alone is the list that critiques nothing (no
    verifier, no explaining critic). Raises ConfigError for an empty list, an unknown
    name, "none" or the human critic named with others, or two explaining critics.
    """
    items = critic_names(specs) if isinstance(specs, str) else list(specs)
    if not items:
        raise ConfigError('no critic configured: add "llm" or a verifier to the critics')
    if NO_CRITIC in items:
        if len(items) > 1:
            raise ConfigError(
                'critics "none" means no critic at all: name it alone (critics ["none"], '
                "--critics none), or leave it out and keep the others"
            )
        return CriticPlan((), None)
    explainers = [spec for spec in items if _is_explainer(spec)]
    verifiers = [
        spec if isinstance(spec, VerifierCritic) else resolve_verifier(spec)
        for spec in items
        if not _is_explainer(spec)
    ]
    if any(spec == "human" for spec in explainers) and len(items) > 1:
        raise ConfigError(
            "the human critic works alone: name it by itself (critics ['human'], --critics human)"
        )
    if len(explainers) > 1:
        raise ConfigError(
            f"name one explaining critic, not {len(explainers)}: {explainers!r}; keep one of them"
        )
    return CriticPlan(tuple(verifiers), explainers[0] if explainers else None)
