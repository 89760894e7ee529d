"""How a batch tells right from wrong: verifiers as a judge, and references checked up front."""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Sequence
from typing import Any, Protocol

from self_refine.batch.items import BatchItem
from self_refine.content import task_text
from self_refine.critics import (
    VERIFIERS,
    Verifier,
    VerifierCritic,
    resolve_critics,
    resolve_verifier,
)
from self_refine.critics.judge import VerifierJudge, is_echo
from self_refine.critics.verifiers.base import BuiltinVerifier
from self_refine.errors import ConfigError

__all__ = [
    "ItemVerdicts",
    "DEFAULT_VERIFIERS",
    "REFERENCE_KEYS",
    "Judge",
    "ReferenceCheck",
    "VerifierJudge",
    "is_echo",
]


class Judge(Protocol):
    """Tells whether a draft is correct, without asking any model."""

    def __call__(self, task: str, draft: str, reference: Any) -> bool | None:
        """Whether the draft is correct; None when nothing can judge it."""
        ...

    def source(self, reference: Any) -> str:
        """Who judges drafts for this reference (a critique's `source`)."""
        ...


DEFAULT_VERIFIERS: tuple[str, ...] = tuple(name for name in VERIFIERS if name != "program")
"""Every built-in verifier that reads a reference: each judges the items whose reference
holds its data. Not `program`, which checks a draft against itself, never an item's answer."""

REFERENCE_KEYS = ("answer", "concepts", "tests", "schema")
"""The reference keys the built-in verifiers read (answer, concepts, python_tests, json_schema)."""


class ReferenceCheck:
    """Checks an item's reference against the run's critics (its profile's) and the judges.

    Calling it raises ConfigError when a verifier finds the reference malformed,
    when the run's critics are verifiers only and none of them applies, or when
    a reference is given that none of the run's verifiers can use (those among
    its critics, else, with an LLM critic alone, the judging ones): a math item
    whose reference has no "answer" is refined and judged by nothing that
    reads it. Custom (callable) verifiers take references of any shape.
    """

    def __init__(self, judge_verifiers: Sequence[str | Verifier], critics: Sequence[Any]) -> None:
        self.judges = [resolve_verifier(spec) for spec in judge_verifiers]
        self.critics = resolve_critics(critics)

    def __call__(self, reference: Any) -> None:
        for verifier in self.judges:
            verifier.applies(reference)
        self.critics.check(reference)
        if reference is not None:
            if self.critics.verifiers:
                _check_fit(reference, self.critics.verifiers, "the run's verifiers")
            else:
                _check_fit(reference, self.judges, "the verifiers that judge the batch")


def _check_fit(reference: Any, verifiers: Sequence[VerifierCritic], whose: str) -> None:
    """Raise ConfigError when none of the built-in `verifiers` can use `reference`."""
    if not verifiers or not all(isinstance(v.verify, BuiltinVerifier) for v in verifiers):
        return
    reasons = [reason for v in verifiers if (reason := v.applies(reference))]
    if len(reasons) < len(verifiers):
        return
    names = ", ".join(v.name for v in verifiers)
    raise ConfigError(
        f"it holds nothing {whose} ({names}) read: {'; '.join(reasons)}{_did_you_mean(reference)}"
    )


def _did_you_mean(reference: Any) -> str:
    if not isinstance(reference, dict):
        return f" (the reference is {type(reference).__name__}, not a JSON object)"
    hints = [
        f'"{close[0]}" for "{key}"'
        for key in reference
        if key not in REFERENCE_KEYS
        and (close := difflib.get_close_matches(str(key), REFERENCE_KEYS, n=1))
    ]
    return f" (did you mean {', '.join(hints)}?)" if hints else ""


class ItemVerdicts:
    """One item's verdicts, each draft judged once, off the event loop.

    The caller's word on the item's own draft (`item.correct`) wins over the judge.
    """

    def __init__(self, item: BatchItem, judge: Judge | None) -> None:
        self.item = item
        self.judge = judge
        self.known: dict[str, bool | None] = {}
        if item.draft is not None and item.correct is not None:
            self.known[item.draft] = item.correct

    async def of(self, drafts: Sequence[str]) -> dict[str, bool | None]:
        """Verdicts for drafts (None where nothing can judge)."""
        todo = [d for d in dict.fromkeys(drafts) if d not in self.known]
        if todo and self.judge is not None:
            self.known.update(await asyncio.to_thread(self._judge, todo))
        return {d: self.known.get(d) for d in drafts}

    def _judge(self, drafts: list[str]) -> dict[str, bool | None]:
        assert self.judge is not None
        task = task_text(self.item.task)
        return {d: self.judge(task, d, self.item.reference) for d in drafts}
