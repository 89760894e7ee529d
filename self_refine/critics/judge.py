"""Telling right from wrong without a model: the judge, and the judge in front of a run's critic.

`VerifierJudge` passes a draft when every verifier able to judge it passes it, and
never a draft that echoes the task (which holds every required word, so an echo
would pass a concept check). A batch measures accuracy with it, and with
`refine_only_incorrect` it stands in front of the run's critic as `FirstDraftJudge`:
a first draft it passes is the answer as it is (stop reason "verified"), recorded as
the judge's critique, and never critiqued or refined.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from self_refine.content import task_text
from self_refine.critics.base import CritiqueRequest, CritiqueResult, RunCritic
from self_refine.critics.verifiers import Verifier, judge_draft, resolve_verifier
from self_refine.models.hygiene import DraftGuard
from self_refine.state import Critique, add_usage

__all__ = ["FirstDraftJudge", "VerifierJudge", "is_echo"]


def is_echo(task: str, draft: str) -> bool:
    """True when the draft repeats the task text or the prompt's scaffolding or instructions."""
    verdict = DraftGuard(task=task, limit=1 << 62).check(draft, None)
    return verdict is not None and verdict[0] == "echo"


class VerifierJudge:
    """Passes a draft when every verifier able to judge it passes it (see judge_draft).

    A draft that echoes the task text or the prompt's scaffolding is wrong whatever
    the verifiers say. Unknown verifier names raise ConfigError here, before any
    model call.
    """

    def __init__(self, verifiers: Sequence[str | Verifier]) -> None:
        self.specs = list(verifiers)
        self.verifiers = [resolve_verifier(spec) for spec in self.specs]
        self.name = "+".join(v.name for v in self.verifiers)

    def __call__(self, task: str, draft: str, reference: Any) -> bool | None:
        """Whether the draft passes; None when no verifier applies to the reference."""
        verdict = judge_draft(task, draft, reference, self.specs)
        if verdict and is_echo(task, draft):
            return False
        return verdict

    def source(self, reference: Any) -> str:
        """The names of the verifiers that apply to this reference, joined by "+"."""
        names = [v.name for v in self.verifiers if v.applies(reference) is None]
        return "+".join(names) or self.name


class FirstDraftJudge:
    """The judge in front of a run's critic: a first draft it passes is verified as it is.

    Every other draft (a later one, or a first draft the judge fails or cannot
    judge) goes to the run's critic.
    """

    def __init__(self, judge: Sequence[str | Verifier], critic: RunCritic) -> None:
        self.judge = VerifierJudge(judge)
        self.critic = critic
        self.name = critic.name
        self.explainer = critic.explainer

    def check(self, reference: Any) -> None:
        """Raise ConfigError now if the reference is malformed or no critic could judge."""
        for verifier in self.judge.verifiers:
            verifier.applies(reference)
        self.critic.check(reference)

    def _verdict(self, request: CritiqueRequest) -> CritiqueResult | None:
        """The judge's critique of a first draft it passes; None for any other draft."""
        if request.iteration != 0 or request.attempts:
            return None
        if self.judge(task_text(request.task), request.draft, request.reference) is not True:
            return None
        source = self.judge.source(request.reference)
        critique = Critique(feedback=[], score=1.0, done=True, source=source, verified=True)
        return CritiqueResult(critique, add_usage(), checked=1.0)

    def critique(self, request: CritiqueRequest) -> CritiqueResult:
        """Pass a first draft the judge accepts; judge every other draft with the run's critic."""
        return self._verdict(request) or self.critic.critique(request)

    async def acritique(self, request: CritiqueRequest) -> CritiqueResult:
        """Async twin of critique(): the judge's verifiers run off the event loop."""
        verdict = await asyncio.to_thread(self._verdict, request)
        return verdict or await self.critic.acritique(request)
