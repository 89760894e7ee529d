"""What a verifier is, and the critic that wraps one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from self_refine.content import task_text
from self_refine.critics.base import CritiqueRequest, CritiqueResult
from self_refine.errors import SelfRefineError
from self_refine.state import Critique, add_usage

__all__ = ["BuiltinVerifier", "NotApplicable", "Verifier", "VerifierCritic", "reference_field"]

Verifier = Callable[[str, str, Any], Critique]
"""(task, draft, reference) -> Critique whose `done` is True when the draft passes."""


class NotApplicable(Exception):
    """The reference lacks what a verifier needs, so it cannot judge this draft."""


def reference_field(reference: Any, key: str, example: str) -> Any:
    """`reference[key]`, or NotApplicable saying how to provide it."""
    if isinstance(reference, dict) and reference.get(key) not in (None, "", [], {}):
        return reference[key]
    raise NotApplicable(f'needs reference["{key}"], e.g. {{"{key}": {example}}}')


@dataclass(frozen=True)
class BuiltinVerifier:
    """A verifier that reads its data from the reference first, so it can be checked early.

    `prepare(reference)` returns what `judge` needs, raising NotApplicable when
    the reference lacks it and ConfigError when it is malformed. `settles` says
    whether a pass settles the task: True for an answer, tests or a schema; False
    for a word list, which cannot tell whether the text does what the task asks.
    """

    name: str
    summary: str
    prepare: Callable[[Any], Any]
    judge: Callable[[str, str, Any], Critique]
    settles: bool = True

    def __call__(self, task: str, draft: str, reference: Any) -> Critique:
        """Judge the draft against the reference."""
        return self.judge(task, draft, self.prepare(reference))


@dataclass(frozen=True)
class VerifierCritic:
    """A verifier in the shape of a critic; its critiques name it as their source.

    A critique without a score gets 1.0 when it passes and 0.0 when it fails, so
    that the answer picked as "best" is never a draft a verifier rejected.
    """

    name: str
    verify: Verifier

    @property
    def settles(self) -> bool:
        """Whether a pass settles the task; a plain callable is trusted to."""
        return not isinstance(self.verify, BuiltinVerifier) or self.verify.settles

    def applies(self, reference: Any) -> str | None:
        """None when this verifier can judge drafts for `reference`, else why it cannot.

        Only built-in verifiers know in advance; a plain callable is assumed to apply.
        """
        if isinstance(self.verify, BuiltinVerifier):
            try:
                self.verify.prepare(reference)
            except NotApplicable as reason:
                return f"{self.name} {reason}"
        return None

    def critique(self, request: CritiqueRequest) -> CritiqueResult:
        """Run the verifier; NotApplicable propagates to the caller."""
        try:
            result = self.verify(task_text(request.task), request.draft, request.reference)
        except (NotApplicable, SelfRefineError):
            raise
        except Exception as error:
            raise SelfRefineError(
                f"verifier {self.name!r} failed: {type(error).__name__}: {error}; "
                "fix the verifier (a draft it rejects should give a Critique with done=False)"
            ) from error
        if not isinstance(result, Critique):
            raise SelfRefineError(
                f"verifier {self.name!r} returned {type(result).__name__}; "
                "a verifier must return a Critique"
            )
        score = result.score if result.score is not None else float(result.done)
        update = {"source": self.name, "verified": result.done, "score": score}
        critique = result.model_copy(update=update)
        return CritiqueResult(critique, add_usage())

    async def acritique(self, request: CritiqueRequest) -> CritiqueResult:
        """Run the verifier in a worker thread (it may start a sandboxed process)."""
        return await asyncio.to_thread(self.critique, request)
