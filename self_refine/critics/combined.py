"""The combined critic: verifiers first; an explaining critic when they cannot settle a draft."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from self_refine.critics.base import Critic, CritiqueRequest, CritiqueResult
from self_refine.critics.verifiers import NotApplicable, VerifierCritic
from self_refine.errors import ConfigError
from self_refine.state import Critique, add_usage
from self_refine.stopping import UNASKED

__all__ = ["CombinedCritic", "check_judgeable", "merge_critiques", "unasked_critique"]


def check_judgeable(
    verifiers: Sequence[VerifierCritic], has_explainer: bool, reference: Any
) -> None:
    """Raise ConfigError if `reference` is malformed for a verifier, or nothing could judge.

    Without an explaining critic, at least one verifier must apply to the reference.
    """
    reasons = [reason for v in verifiers if (reason := v.applies(reference))]
    if verifiers and not has_explainer and len(reasons) == len(verifiers):
        raise ConfigError(
            f"no critic can judge this task: {'; '.join(reasons)}. "
            'Give that in the reference, or add "llm" to the critics'
        )


def merge_critiques(critiques: Sequence[Critique], *, verified: bool | None) -> Critique:
    """One critique from several: every item tagged with who said it, the lowest score.

    Done only when every part is done; a single critique is returned untagged.
    """
    if len(critiques) == 1:
        return critiques[0].model_copy(update={"verified": verified})
    scores = [c.score for c in critiques if c.score is not None]
    return Critique(
        feedback=[f"[{c.source}] {item}" for c in critiques for item in c.feedback],
        score=min(scores) if scores else None,
        done=all(c.done for c in critiques),
        source="+".join(dict.fromkeys(c.source for c in critiques)),
        verified=verified,
    )


def unasked_critique(judged: Sequence[Critique], why: str) -> Critique:
    """The critique of a draft whose explaining critic was not asked (`why`: the token
    budget left cannot hold its critique): the verifiers' findings, if any judged it, and
    `why`, from source `UNASKED`.

    It has no score: nothing judged the draft as the critic would, so among a run's
    attempts it ranks below every scored one (`nodes/ranking.py`); it is not done, and
    `verified` is False when a verifier failed it, else None (the verifiers that passed
    it did not settle the task, or none applied: else the critic would not have been
    needed). Among a tree's drafts it still ranks by the verifiers' verdict and their
    lowest score (`checked`), which it keeps.
    """
    failed = any(not c.done for c in judged)
    return Critique(
        feedback=[
            *(f"[{c.source}] {item}" for c in judged for item in c.feedback),
            f"[{UNASKED}] {why}" if judged else why,
        ],
        score=None,
        done=False,
        source="+".join(dict.fromkeys([*(c.source for c in judged), UNASKED])),
        verified=False if failed else None,
    )


class CombinedCritic:
    """Runs the verifiers, then the explaining critic when they cannot settle the draft.

    - every applicable verifier passes and one of them settles the task (an
      answer, tests, a schema): their critique, `verified=True`, no model call;
    - every applicable verifier passes but none settles the task (only a word
      list: the words are there, whether the text does what the task asks is
      not known): the explaining critic (if any) is asked too, and the critique
      merges both with `verified=None`; without one, or with `words_settle` (a
      profile whose tasks are to use the words), `verified=True` as above;
    - one fails: the explaining critic (if any) gets the findings as notes, and
      the critique merges both with `verified=False`;
    - no verifier applies (the reference lacks their data): the explaining
      critic alone; with none, a ConfigError saying what the reference needs.

    A request that says the explaining critic is not to be asked (`unasked`: the token
    budget left cannot hold its critique) gets, where it would have been asked, the
    verifiers' findings and that reason (`unasked_critique`), at no cost.
    """

    def __init__(
        self,
        verifiers: Sequence[VerifierCritic],
        explainer: Critic | None,
        *,
        words_settle: bool = False,
    ) -> None:
        if not verifiers and explainer is None:
            raise ConfigError('no critic configured: add "llm" or a verifier to the critics')
        self.verifiers = list(verifiers)
        self.explainer = explainer
        self.words_settle = words_settle
        names = [v.name for v in self.verifiers] + ([explainer.name] if explainer else [])
        self.name = "+".join(names)

    def check(self, reference: Any) -> None:
        """Raise ConfigError now if the reference is malformed or no critic could judge a draft."""
        check_judgeable(self.verifiers, self.explainer is not None, reference)

    def _judged(
        self, results: list[tuple[VerifierCritic, CritiqueResult | None]]
    ) -> list[Critique]:
        """The verifiers' critiques, skipping those that do not apply to this reference."""
        judged = [r.critique for _, r in results if r is not None]
        if not judged and self.explainer is None:
            skipped = ", ".join(v.name for v, _ in results)
            raise ConfigError(
                f"no critic can judge this draft: the verifiers ({skipped}) do not apply "
                'to its reference; give the data they need, or add "llm" to the critics'
            )
        return judged

    def _request(self, request: CritiqueRequest, judged: list[Critique]) -> CritiqueRequest:
        notes = [f"{c.source}: {item}" for c in judged if not c.done for item in c.feedback]
        return dataclasses.replace(request, notes=[*request.notes, *notes])

    def _finish(
        self, judged: list[Critique], explained: CritiqueResult | str | None
    ) -> CritiqueResult:
        scores = [c.score for c in judged if c.score is not None]
        checked = min(scores) if scores else None
        if isinstance(explained, str):  # the explaining critic was not asked: why
            return CritiqueResult(unasked_critique(judged, explained), add_usage(), (), checked)
        if explained is None:
            passed = all(c.done for c in judged)
            merged = merge_critiques(judged, verified=passed)
            return CritiqueResult(merged, add_usage(), checked=checked)
        failed = any(not c.done for c in judged)
        merged = merge_critiques([*judged, explained.critique], verified=False if failed else None)
        return CritiqueResult(merged, explained.usage, explained.problems, checked)

    def _needs_explainer(self, judged: list[Critique], settled: bool) -> bool:
        if self.explainer is None:
            return False
        return not judged or not all(c.done for c in judged) or not settled

    def critique(self, request: CritiqueRequest) -> CritiqueResult:
        """Judge the draft: verifiers first, the explaining critic if they cannot settle it."""
        results: list[tuple[VerifierCritic, CritiqueResult | None]] = []
        for verifier in self.verifiers:
            try:
                results.append((verifier, verifier.critique(request)))
            except NotApplicable:
                results.append((verifier, None))
        judged = self._judged(results)
        settled = self.words_settle or _settled(results)
        explained: CritiqueResult | str | None = None
        if self._needs_explainer(judged, settled):
            assert self.explainer is not None
            explained = request.unasked or self.explainer.critique(self._request(request, judged))
        return self._finish(judged, explained)

    async def acritique(self, request: CritiqueRequest) -> CritiqueResult:
        """Async twin of critique()."""
        results: list[tuple[VerifierCritic, CritiqueResult | None]] = []
        for verifier in self.verifiers:
            try:
                results.append((verifier, await verifier.acritique(request)))
            except NotApplicable:
                results.append((verifier, None))
        judged = self._judged(results)
        settled = self.words_settle or _settled(results)
        explained: CritiqueResult | str | None = None
        if self._needs_explainer(judged, settled):
            assert self.explainer is not None
            explained = request.unasked or await self.explainer.acritique(
                self._request(request, judged)
            )
        return self._finish(judged, explained)


def _settled(results: list[tuple[VerifierCritic, CritiqueResult | None]]) -> bool:
    """Whether a verifier that judged the draft settles the task (not only a word list)."""
    return any(verifier.settles for verifier, result in results if result is not None)
