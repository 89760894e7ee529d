"""The built-in verifiers by name, and turning names or callables into verifier critics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from self_refine.critics.none import NO_CRITIC
from self_refine.critics.verifiers.answer import ANSWER
from self_refine.critics.verifiers.base import (
    BuiltinVerifier,
    NotApplicable,
    Verifier,
    VerifierCritic,
)
from self_refine.critics.verifiers.concepts import CONCEPTS
from self_refine.critics.verifiers.json_schema import JSON_SCHEMA
from self_refine.critics.verifiers.program import PROGRAM
from self_refine.critics.verifiers.python_tests import PYTHON_TESTS
from self_refine.errors import ConfigError

__all__ = ["EXPLAINER_NAMES", "VERIFIERS", "judge_draft", "resolve_verifier"]

VERIFIERS: dict[str, BuiltinVerifier] = {
    v.name: v for v in (ANSWER, PYTHON_TESTS, CONCEPTS, JSON_SCHEMA, PROGRAM)
}
"""The built-in verifiers, by the name used in `critics=[...]` and `--critics`."""

EXPLAINER_NAMES = ("llm", "human")
"""Critic names that are not verifiers: the critics that explain and extend findings."""


def _known() -> str:
    return ", ".join(repr(n) for n in (*EXPLAINER_NAMES, *VERIFIERS, NO_CRITIC))


def resolve_verifier(spec: str | Verifier) -> VerifierCritic:
    """A verifier critic for a built-in name or any (task, draft, reference) callable."""
    if isinstance(spec, str):
        if spec not in VERIFIERS:
            raise ConfigError(f"unknown critic {spec!r}; known: {_known()}")
        return VerifierCritic(spec, VERIFIERS[spec])
    if not callable(spec):
        raise ConfigError(
            f"a critic must be a name ({_known()}), a Critic or a verifier callable, "
            f"got {type(spec).__name__}"
        )
    name = getattr(spec, "name", None) or getattr(spec, "__name__", None) or type(spec).__name__
    return VerifierCritic("verifier" if name == "<lambda>" else str(name), spec)


def judge_draft(
    task: str, draft: str, reference: Any, verifiers: Sequence[str | Verifier]
) -> bool | None:
    """Whether the draft passes every verifier that can judge it; None when none can.

    `verifiers` may include "llm" or "human", which are skipped: only
    programmatic checks count. Used to report correctness (e.g. of the first
    and the final draft) without asking any model.
    """
    verdicts = []
    for spec in verifiers:
        if isinstance(spec, str) and spec in EXPLAINER_NAMES:
            continue
        try:
            verdicts.append(resolve_verifier(spec).verify(task, draft, reference).done)
        except NotApplicable:
            continue
    return all(verdicts) if verdicts else None
