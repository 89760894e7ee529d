"""The human critic: a person writes the critique, asked through LangGraph's `interrupt()`."""

from __future__ import annotations

from typing import Any

from langgraph.types import interrupt
from pydantic import ValidationError

from self_refine.critics.base import CritiqueRequest, CritiqueResult
from self_refine.state import Critique, add_usage

__all__ = [
    "ANSWER_SCHEMA",
    "HUMAN_CRITIQUE_KIND",
    "HumanCritic",
    "critique_from_answer",
    "human_question",
]

HUMAN_CRITIQUE_KIND = "self_refine.human_critique"
"""The `kind` of every interrupt value the human critic raises."""

_ANSWER_KEYS = frozenset({"feedback", "score", "done"})
_HOW_TO_ANSWER = (
    'Resume with {"feedback": ["what to change", ...], "score": 0..1 or null, "done": '
    "true|false}, or with a plain string as one feedback item."
)

ANSWER_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "description": "One feedback item."},
        {
            "type": "object",
            "properties": {
                "feedback": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Actionable items, each naming one problem and its fix.",
                },
                "score": {
                    "type": ["number", "null"],
                    "description": "Quality of the draft from 0 (unusable) to 1 (needs no change).",
                },
                "done": {
                    "type": "boolean",
                    "description": "True when the draft needs no further change.",
                },
            },
            "additionalProperties": False,
        },
    ]
}
"""JSON Schema of a valid answer, sent with the interrupt so clients can render a form."""


class HumanCritic:
    """Asks a person for the critique by pausing the run with `interrupt()`.

    The interrupt's value shows the task, the current draft and the earlier
    attempts. An answer that cannot be read is not lost or fatal: the person
    is asked again, with the reason. The run needs a checkpointer (LangGraph
    Server and the command line have one).
    """

    name = "human"

    def critique(self, request: CritiqueRequest) -> CritiqueResult:
        """Pause the run until a person answers, and turn the answer into a critique."""
        question = human_question(request)
        while True:
            answer = interrupt(question, response_schema=ANSWER_SCHEMA)
            try:
                return CritiqueResult(critique_from_answer(answer), add_usage())
            except ValueError as error:
                question = {**question, "error": f"{error}. {_HOW_TO_ANSWER}"}

    async def acritique(self, request: CritiqueRequest) -> CritiqueResult:
        """Async twin of critique(); interrupt() does not block the event loop."""
        return self.critique(request)


def human_question(request: CritiqueRequest) -> dict[str, Any]:
    """The interrupt value a person sees: what to judge, what came before, how to answer."""
    question: dict[str, Any] = {
        "kind": HUMAN_CRITIQUE_KIND,
        "question": "Critique the draft: what should change before it is good enough?",
        "task": request.task,
        "draft": request.draft,
        "iteration": request.iteration,
        "attempts": [
            {"iteration": a["iteration"], "draft": a["draft"], "critique": a["critique"]}
            for a in request.attempts
        ],
        "how_to_answer": _HOW_TO_ANSWER,
    }
    if request.reference is not None:
        question["reference"] = request.reference
    return question


def critique_from_answer(answer: Any) -> Critique:
    """Read a person's answer: a string (one item), a list of items, or a dict.

    `done` without a score means a score of 1 (needs no change). Raise
    ValueError, saying what was wrong, for an answer with nothing in it or of
    a shape that cannot be read.
    """
    if isinstance(answer, Critique):
        answer = answer.model_dump(include=set(_ANSWER_KEYS))
    if isinstance(answer, str) or (
        isinstance(answer, list) and all(isinstance(item, str) for item in answer)
    ):
        answer = {"feedback": answer}
    if not isinstance(answer, dict):
        raise ValueError(f"cannot read an answer of type {type(answer).__name__}")
    unknown = sorted(set(answer) - _ANSWER_KEYS)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(map(repr, unknown))} in the answer")
    score = answer.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        raise ValueError(f"score must be a number from 0 to 1, got {score!r}")
    if not isinstance(answer.get("done", False), bool):
        raise ValueError(f"done must be true or false, got {answer['done']!r}")
    try:
        critique = Critique(**answer, source="human")
    except ValidationError as error:
        raise ValueError(f"cannot read the answer: {error.errors()[0]['msg']}") from None
    if not critique.feedback and not critique.done and critique.score is None:
        raise ValueError("the answer is empty: give at least one feedback item, or done: true")
    if critique.done and critique.score is None:
        # "Needs no further change" is the top of the score's own scale, so the
        # accepted draft is not passed over for an earlier, scored one.
        critique.score = 1.0
    return critique
