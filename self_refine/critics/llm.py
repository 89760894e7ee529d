"""The LLM critic: structured output, with a plain-text fallback that never loses a reply."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel, Field

from self_refine.critics.base import CritiqueRequest, CritiqueResult
from self_refine.critics.parse import parse_critique_text
from self_refine.models import message_text, message_usage
from self_refine.prompts import PromptSet, feedback_messages
from self_refine.state import Critique, add_usage

__all__ = ["LLMCritic"]

log = logging.getLogger(__name__)

# Models (by id) that failed structured output once; they get plain-text prompts after.
_PLAIN_ONLY: set[int] = set()


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
    offline stand-in, which is not a language model.
    """

    def __init__(
        self, model: BaseChatModel, prompts: PromptSet, *, notes: Sequence[str] = ()
    ) -> None:
        self.name = "offline" if model._llm_type == "self-refine-offline" else "llm"
        self.model = model
        self.prompts = prompts
        self.notes = tuple(notes)

    def _messages(self, request: CritiqueRequest) -> list[BaseMessage]:
        notes = [*self.notes, *request.notes]
        return feedback_messages(self.prompts, request.task, request.draft, notes)

    def _structured(self) -> Any:
        return self.model.with_structured_output(CritiqueReply, include_raw=True)

    def critique(self, request: CritiqueRequest) -> CritiqueResult:
        """Judge the draft, falling back to plain text when structured output fails."""
        messages = self._messages(request)
        if id(self.model) not in _PLAIN_ONLY:
            try:
                return self._from_structured(self._structured().invoke(messages))
            except Exception as error:  # noqa: BLE001 - any failure means: try plain text
                self._note_unsupported(error)
        return self._from_text(self.model.invoke(messages))

    async def acritique(self, request: CritiqueRequest) -> CritiqueResult:
        """Async twin of critique()."""
        messages = self._messages(request)
        if id(self.model) not in _PLAIN_ONLY:
            try:
                return self._from_structured(await self._structured().ainvoke(messages))
            except Exception as error:  # noqa: BLE001 - any failure means: try plain text
                self._note_unsupported(error)
        return self._from_text(await self.model.ainvoke(messages))

    def _note_unsupported(self, error: Exception) -> None:
        """Re-raise transport errors; remember models that refuse structured output."""
        if _is_transport_error(error):
            raise error
        if _is_unsupported(error):
            log.info("structured output unsupported (%s); using plain-text critiques", error)
            _PLAIN_ONLY.add(id(self.model))
        else:
            log.info("structured critique unreadable (%s); asking again in plain text", error)

    def _from_structured(self, result: dict[str, Any]) -> CritiqueResult:
        raw = result.get("raw")
        usage = message_usage(raw)
        parsed = result.get("parsed")
        if isinstance(parsed, CritiqueReply):
            critique = Critique(**parsed.model_dump(), source=self.name)
        elif raw is not None:
            critique = parse_critique_text(message_text(raw), source=self.name)
        else:
            critique = Critique(feedback=["The critic returned nothing."], source=self.name)
        return CritiqueResult(critique, add_usage(usage))

    def _from_text(self, message: BaseMessage) -> CritiqueResult:
        critique = parse_critique_text(message_text(message), source=self.name)
        return CritiqueResult(critique, message_usage(message))


def _is_unsupported(error: Exception) -> bool:
    """True when the server or model refuses structured output itself."""
    status = getattr(error, "status_code", None)
    return isinstance(error, NotImplementedError) or status in (400, 404, 415, 422)


def _is_transport_error(error: Exception) -> bool:
    """True for failures that a plain-text call would hit too (network, auth, rate limits)."""
    name = type(error).__name__
    return name in {
        "APIConnectionError",
        "APITimeoutError",
        "AuthenticationError",
        "RateLimitError",
        "InternalServerError",
        "PermissionDeniedError",
    }
