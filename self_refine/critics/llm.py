"""The LLM critic: structured output, with a plain-text fallback that never loses a reply."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel, Field

from self_refine.critics.base import CritiqueRequest, CritiqueResult
from self_refine.critics.parse import is_broken_json, read_critique, score_problem
from self_refine.models.calls import ainvoke_in_slot, is_transport_error, refusal_of
from self_refine.models.resolve import message_text, message_usage
from self_refine.prompts import PromptSet, feedback_messages
from self_refine.state import Critique, Usage, add_usage

__all__ = ["LLMCritic"]

log = logging.getLogger(__name__)

_EMPTY = "the critic returned an empty reply"


class _UnreadableCritique(ValueError):
    """A structured-output reply cut off mid-JSON: nothing usable in it."""


@dataclass
class _ModelNote:
    """What the critic learned about one model: its structured-output runnable, and
    whether it refused structured output (then it gets plain-text prompts)."""

    model: BaseChatModel
    structured: Any = None
    plain_only: bool = False


# By model id, with the model kept alive so its id stays its own; a few dozen at most.
# Building a structured-output runnable costs about a millisecond (ChatOpenAI converts
# the schema), so it is built once per model.
_NOTES: dict[int, _ModelNote] = {}
_NOTES_MAX = 32
_NOTES_LOCK = threading.Lock()


def _note(model: BaseChatModel) -> _ModelNote:
    note = _NOTES.get(id(model))
    if note is not None and note.model is model:
        return note
    with _NOTES_LOCK:
        if len(_NOTES) >= _NOTES_MAX:
            _NOTES.pop(next(iter(_NOTES)))
        note = _NOTES[id(model)] = _ModelNote(model)
    return note


class CritiqueReply(BaseModel):
    """The JSON shape the critic model is asked for."""

    feedback: list[str] = Field(
        description="Actionable items, each naming one concrete problem and how to fix it."
    )
    score: float = Field(description="Quality from 0 (unusable) to 1 (needs no change).")
    done: bool = Field(description="True when the draft needs no further change.")


class LLMCritic:
    """Asks a chat model for a critique of the draft.

    Its critiques say `source="llm"`, or `"offline"` when the model is the
    offline stand-in, which is not a language model. Findings to explain and
    extend (a verifier's) come in the request's `notes`.
    """

    def __init__(self, model: BaseChatModel, prompts: PromptSet) -> None:
        self.name = "offline" if model._llm_type == "self-refine-offline" else "llm"
        self.model = model
        self.prompts = prompts

    def _messages(self, request: CritiqueRequest) -> list[BaseMessage]:
        return feedback_messages(self.prompts, request.task, request.draft, request.notes)

    def _structured(self) -> Any:
        note = _note(self.model)
        if note.structured is None:
            note.structured = self.model.with_structured_output(CritiqueReply, include_raw=True)
        return note.structured

    def critique(self, request: CritiqueRequest) -> CritiqueResult:
        """Judge the draft, falling back to plain text when structured output fails.

        An empty reply is asked again once; what went wrong is recorded.
        """
        messages = self._messages(request)
        empty: list[BaseMessage] = []
        problems: list[str] = []
        if not _note(self.model).plain_only:
            try:
                structured = self._structured().invoke(messages)
                result = self._from_structured(structured)
            except Exception as error:  # noqa: BLE001 - any failure means: try plain text
                problems += self._note_unsupported(error)
            else:
                if result is not None:
                    return result
                empty.append(structured["raw"])
        reply = self.model.invoke(messages)
        if not empty and _is_empty(reply):
            empty.append(reply)
            reply = self.model.invoke(messages)
        return self._from_text(reply, empty, problems)

    async def acritique(self, request: CritiqueRequest) -> CritiqueResult:
        """Async twin of critique()."""
        messages = self._messages(request)
        empty: list[BaseMessage] = []
        problems: list[str] = []
        if not _note(self.model).plain_only:
            try:
                structured = await ainvoke_in_slot(self._structured(), messages)
                result = self._from_structured(structured)
            except Exception as error:  # noqa: BLE001 - any failure means: try plain text
                problems += self._note_unsupported(error)
            else:
                if result is not None:
                    return result
                empty.append(structured["raw"])
        reply = await ainvoke_in_slot(self.model, messages)
        if not empty and _is_empty(reply):
            empty.append(reply)
            reply = await ainvoke_in_slot(self.model, messages)
        return self._from_text(reply, empty, problems)

    def _note_unsupported(self, error: Exception) -> list[str]:
        """Re-raise transport errors; remember models that refuse structured output.

        Returns the problem to record when the reply was there but unreadable.
        """
        if _is_transport_error(error):
            raise error
        if _is_unsupported(error):
            log.info("structured output unsupported (%s); using plain-text critiques", error)
            _note(self.model).plain_only = True
            return []
        log.info("structured critique unreadable (%s); asking again in plain text", error)
        return [
            f"the critic's structured reply was unreadable ({type(error).__name__}); "
            "asked again in plain text"
        ]

    def _from_structured(self, result: dict[str, Any]) -> CritiqueResult | None:
        """The critique in a structured reply; None when the reply is empty (ask again)."""
        raw = result.get("raw")
        usage = message_usage(raw)
        parsed = result.get("parsed")
        text = message_text(raw) if raw is not None else ""
        if isinstance(parsed, CritiqueReply):
            critique = Critique(**parsed.model_dump(), source=self.name)
            problems = score_problem(parsed.score, critique)
            return CritiqueResult(critique, add_usage(usage), tuple(problems))
        refusal = refusal_of(raw)
        if refusal:
            return _refused(refusal, self.name, usage)
        if raw is None or _is_empty(raw):
            return None
        if is_broken_json(text):
            raise _UnreadableCritique(f"cut-off JSON: {text[:80]!r}")
        critique, problems = read_critique(text, source=self.name)
        return CritiqueResult(critique, add_usage(usage), tuple(problems))

    def _from_text(
        self, reply: BaseMessage, empty: list[BaseMessage], earlier: list[str]
    ) -> CritiqueResult:
        usage = add_usage(*(message_usage(r) for r in [*empty, reply]))
        refusal = refusal_of(reply)
        if refusal:
            return _refused(refusal, self.name, usage, earlier)
        critique, problems = read_critique(message_text(reply), source=self.name)
        if empty and problems[:1] == [_EMPTY]:
            problems = [f"{_EMPTY} twice"]
        elif empty:
            problems.insert(0, f"{_EMPTY}; asked again")
        return CritiqueResult(critique, usage, (*earlier, *problems))


def _is_empty(reply: Any) -> bool:
    return isinstance(reply, BaseMessage) and not message_text(reply) and not refusal_of(reply)


def _refused(
    refusal: str, source: str, usage: Usage, earlier: Sequence[str] = ()
) -> CritiqueResult:
    """A refusal is no verdict: no feedback, no score, not done, and the problem recorded."""
    flat = " ".join(refusal.split())[:160]
    problem = f"the critic refused: {flat!r}"
    return CritiqueResult(Critique(source=source), usage, (*earlier, problem))


def _is_unsupported(error: Exception) -> bool:
    """True when the server or model refuses structured output itself."""
    status = getattr(error, "status_code", None)
    return isinstance(error, NotImplementedError) or status in (400, 404, 415, 422)


def _is_transport_error(error: Exception) -> bool:
    """True for failures that a plain-text call would hit too (network, auth, rate limits)."""
    return is_transport_error(error) and not _is_unsupported(error)
