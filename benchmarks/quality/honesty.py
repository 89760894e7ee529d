"""What keeps an answer from counting, beyond its checker: gamed forms and feedback wording.

The checkers of the constrained set already fail word lists, fragments strung together
with commas, list items, more sentences than the task asks for, instructions about the
text and remarks about it (`self_refine.critics.verifiers.shape`), and the grader's
sentence checker markup, sentences with no verb, verbless lists and a clause per word
(`sentences.py`); `answer_forms` names which of these a final answer is, for the report.
An answer that carries a run of six words of the feedback it was given (and that
neither the task nor the draft the feedback was about holds) repeats the critic instead
of answering: `rejudge` counts such drafts wrong in a record, step by step, as the
runner picked them, on the constrained set (on the others, where a key or tests judge
what the answer is, it marks them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchmarks.quality.sentences import FORMS as SENTENCE_FORMS
from benchmarks.quality.sentences import sentence_problems
from self_refine.critics.verifiers.concepts import missing_concepts
from self_refine.critics.verifiers.shape import (
    definitions,
    edit_instruction,
    equated_words,
    list_items,
    remarks_about_text,
    strung_fragments,
    too_many_sentences,
    word_list,
)
from self_refine.nodes.ranking import best_attempt
from self_refine.prompts.phrases import normalized

__all__ = ["FORMS", "answer_forms", "feedback_wording", "rejudge"]

FORMS = (
    "word list",
    "fragments",
    "definitions",
    "equated words",
    "list items",
    "too many sentences",
    "instruction",
    "remarks",
    *SENTENCE_FORMS,
    "feedback wording",
)
"""The forms of a final answer that count it wrong whatever words it uses."""

_RUN = 6


def _runs(text: str) -> set[tuple[str, ...]]:
    words = normalized(text).split()
    return {tuple(words[i : i + _RUN]) for i in range(len(words) - _RUN + 1)}


def feedback_wording(draft: str, feedback: Iterable[tuple[str, str]], task: str) -> bool:
    """True when the draft holds six words in a row of a feedback item it was given.

    `feedback` pairs each item with the draft it was about: a run that draft (or the
    task) already held is the critic quoting it, not wording the answer took over.
    """
    mine = _runs(draft)
    if not mine:
        return False
    known = _runs(task)
    for item, about in feedback:
        taken = (_runs(item) & mine) - known - _runs(about)
        if taken:
            return True
    return False


def _matches(concept: str, text: str) -> bool:
    return not missing_concepts(text, [concept])


def answer_forms(task: str, answer: str, reference: Any, feedback: bool = False) -> list[str]:
    """Which of `FORMS` the answer is (only sets with required words have all but the last)."""
    forms = []
    concepts = (reference or {}).get("concepts") if isinstance(reference, dict) else None
    if concepts and answer.strip():
        checks = {
            "word list": word_list(answer, concepts, _matches),
            "fragments": strung_fragments(answer, concepts, _matches),
            "definitions": definitions(answer, concepts, _matches),
            "equated words": equated_words(answer, concepts, _matches),
            "list items": list_items(answer),
            "too many sentences": too_many_sentences(task, answer),
            "instruction": edit_instruction(answer, concepts),
            "remarks": remarks_about_text(answer),
        }
        forms = [name for name, found in checks.items() if found]
        forms += sentence_problems(answer, concepts)
    return [*forms, *(["feedback wording"] if feedback else [])]


def rejudge(record: dict[str, Any], count_wording: bool = True) -> dict[str, Any]:
    """The record with every draft that took over feedback wording counted wrong (with
    `count_wording` False, marked only: on a set whose key or tests judge the answer).

    Each attempt is held against the feedback of the attempts before it; accuracy
    after k steps is the draft the run would have answered then (the best-scoring
    attempt, as `select="best"` picks), and the final answer's verdict follows.
    """
    attempts = [dict(a) for a in record.get("attempts") or []]
    given: list[tuple[str, str]] = []
    task = str(record.get("task", ""))
    for attempt in attempts:
        worded = feedback_wording(str(attempt.get("draft", "")), given, task)
        attempt["feedback_wording"] = worded
        if worded and count_wording:
            attempt["correct"] = False
        feedback = (attempt.get("critique") or {}).get("feedback") or []
        given += [(str(item), str(attempt.get("draft", ""))) for item in feedback]
    if not attempts:
        return record
    steps = range(max(int(a.get("iteration", 0)) for a in attempts) + 1)
    picks = [best_attempt([a for a in attempts if a["iteration"] <= k]) for k in steps]  # type: ignore[misc]
    answer = str(record.get("answer", ""))
    final = next((a for a in reversed(attempts) if a.get("draft") == answer), None)
    worded = bool(final and final["feedback_wording"]) and count_wording
    return {
        **record,
        "attempts": attempts,
        "correct_at": [bool(p and p.get("correct")) for p in picks],
        "correct_final": bool(record.get("correct_final")) and not worded,
        "feedback_wording_final": worded,
    }
