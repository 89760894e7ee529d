"""What a benchmark run may check its drafts with, and what grades its answers: kept apart.

A run's checks are built here from an item's run-time `reference` alone (what a user
asking the task would have), under one of three feedback settings:

- task (the main one): the checks the task gives: the words a constrained task lists,
  the example asserts a code task shows; for arithmetic nothing yet (no key: the LLM
  critic alone, until a key-free check is named in `sets.RUN_CHECK`);
- critic: no verifier at all, the LLM critic's score ranking and judging drafts (the
  Self-Refine paper's setting);
- key: the grading data itself (answer key, hidden tests) as the run's verifier: an upper
  bound, never what a user gets, and labelled so wherever it is shown.

The grader reads only an item's `grade`, after the run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from benchmarks.quality.sentences import sentence_problems
from benchmarks.quality.sets import GRADER, RUN_CHECK

__all__ = [
    "FEEDBACKS",
    "LABELS",
    "Grader",
    "RunChecks",
    "graded_draft",
    "picked_and_judged",
    "run_checks",
    "worked_and_right",
]

FEEDBACKS = ("task", "critic", "key")
"""The feedback settings, the main one first."""

LABELS = {
    "task": "the checks the task gives",
    "critic": "critic only (no verifier: the LLM critic's score picks)",
    "key": "answer key and hidden tests (UPPER BOUND: grading data picks the answer)",
}

_PICKS = {
    "humaneval": "the examples the docstring shows, as asserts (run in the sandbox; the LLM "
    "critic's score where it shows none)",
    "constrained": "the concepts check on the words the task lists",
    "code": "the example asserts the task shows (run in the sandbox)",
}
_VOTED = (
    "the final answer most of a run's drafts state, the draft that first stated it answering "
    "(the math profile's default; the run has no answer key; the LLM critic critiques and "
    "stops the sample, refine and search runs, and vote calls no critic)"
)
_JUDGES = {
    "humaneval": "the problem's own hidden check",
    "constrained": "the concepts check on the same words and the benchmark's sentence checker",
    "arithmetic": "the answer key",
    "code": "the examples and the hidden edge-case tests",
}

_CAVEATS = {
    "constrained": " That checks form, not meaning, so its figures are upper bounds on what a "
    "reader passes (`python -m benchmarks.quality.byhand` reads the runs from a reader's "
    "verdicts).",
}


@dataclass(frozen=True)
class RunChecks:
    """What one run may check drafts with: a verifier and the reference it reads, or none
    (then the LLM critic alone)."""

    verifier: str | None
    reference: dict[str, Any] | None


def run_checks(name: str, item: dict[str, Any], feedback: str) -> RunChecks:
    """The run's checks for `item` of set `name` under `feedback` (see `FEEDBACKS`)."""
    if feedback == "task":
        # an item whose task gives nothing to check (a HumanEval docstring without an
        # executable example) runs with the LLM critic alone
        verifier = RUN_CHECK[name] if item["reference"] else None
        return RunChecks(verifier, dict(item["reference"]) if verifier else None)
    if feedback == "critic":
        return RunChecks(None, None)
    if feedback == "key":
        return RunChecks(GRADER[name], dict(item["grade"]))
    raise ValueError(f"unknown feedback {feedback!r}; choose from {', '.join(FEEDBACKS)}")


def picked_and_judged(name: str, feedback: str) -> str:
    """One sentence: what picked the set's answers under `feedback`, and what judged them."""
    if feedback == "key":
        picks = f"the grading data itself ({_JUDGES[name]}; an upper bound)"
    elif feedback == "critic" or RUN_CHECK[name] is None:
        picks = _VOTED if name == "arithmetic" else "the LLM critic's score"
    else:
        picks = _PICKS.get(name, f"the {RUN_CHECK[name]} check on what the task gives")
    return f"{picks} picked the answer; {_JUDGES[name]} judged it.{_CAVEATS.get(name, '')}"


class Grader:
    """The set's exact checker on an item's `grade`, each draft of a task judged once.

    Beyond the library's checker (`GRADER`): on the constrained set, an answer the
    sentence checker fails (`sentences.py`: markup, no verb, a verbless list, a clause per
    word) counts wrong; on arithmetic, a worked solution whose final answer is the key
    counts right even where it mentions the feedback it followed ("we'll follow the steps
    in the feedback"), which the library's `answer` check fails as a remark about a
    solution (`worked_and_right`); on HumanEval, the draft runs after the prompt's imports
    and helpers (`graded_draft`).
    """

    def __init__(self, name: str) -> None:
        from self_refine.batch.judge import VerifierJudge

        self._name = name
        self._check = VerifierJudge([GRADER[name]])
        self._seen: dict[tuple[str, str], bool | None] = {}

    @property
    def counts_feedback_wording(self) -> bool:
        """Whether an answer that took over the feedback's wording counts wrong here: on the
        constrained set, whose answers are judged by their words and shape; elsewhere the
        key or the tests judge what an answer is, whatever it repeats."""
        return self._name == "constrained"

    def __call__(self, item: dict[str, Any], draft: str) -> bool | None:
        """True when `draft` passes the item's grading reference."""
        key = (item["task"], draft)
        if key not in self._seen:
            self._seen[key] = self._judge(item, draft)
        return self._seen[key]

    def _judge(self, item: dict[str, Any], draft: str) -> bool | None:
        if self._name == "humaneval":
            return self._check(item["task"], graded_draft(item, draft), item["grade"])
        verdict = self._check(item["task"], draft, item["grade"])
        if self._name == "constrained" and verdict is True:
            return not sentence_problems(draft, item["grade"]["concepts"])
        if self._name == "arithmetic" and verdict is False:
            return worked_and_right(draft, item["grade"]["answer"])
        return verdict


_COMPUTED = re.compile(r"\d[^\n=]*(?:[-+*/\u00d7\u00f7]|\\times|\\div|\\cdot)[^\n=]*=[^\n\d]*\d")


def worked_and_right(draft: str, key: Any) -> bool:
    """Whether the draft works the problem out (a line computes: "24 + 125 = 149") and its
    final answer is `key`: the right answer whatever remark it makes about feedback."""
    from self_refine.critics.verifiers.answer import answers_match, extract_answer

    found = extract_answer(draft)
    return bool(found and _COMPUTED.search(draft) and answers_match(found[0], key))


def graded_draft(item: dict[str, Any], draft: str) -> str:
    """The draft as the grader runs it: the prompt's imports and helpers, then its code."""
    from self_refine.critics.verifiers.python_tests import extract_code

    preamble = str((item.get("grade") or {}).get("preamble") or "")
    return f"```python\n{preamble}\n\n{extract_code(draft)}\n```"
