"""The LLM critic: structured output, with a plain-text fallback that never loses a reply."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.utils.json import parse_json_markdown
from pydantic import BaseModel, Field

from self_refine.critics.base import CritiqueRequest, CritiqueResult
from self_refine.critics.parse import (
    is_broken_json,
    read_critique,
    salvage_cut_json,
    score_problem,
)
from self_refine.models.calls import ainvoke_in_slot, refusal_of
from self_refine.models.resolve import message_text, message_usage
from self_refine.models.structured import MODES as _MODES
from self_refine.models.structured import NOTES_LOCK as _NOTES_LOCK
from self_refine.models.structured import atrying as _atrying
from self_refine.models.structured import bare_request as _bare_request
from self_refine.models.structured import is_transport_only as _is_transport_error
from self_refine.models.structured import is_unsupported as _is_unsupported
from self_refine.models.structured import model_note as _note
from self_refine.models.structured import short_error as _short_error
from self_refine.models.structured import tried as _tried
from self_refine.models.structured import trying as _trying
from self_refine.prompts import PromptSet, feedback_messages
from self_refine.state import Critique, Usage, add_usage

__all__ = ["LLMCritic"]

log = logging.getLogger(__name__)

_EMPTY = "the critic returned an empty reply"


class _UnreadableCritique(ValueError):
    """A structured-output reply cut off mid-JSON: nothing usable in it."""


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

    def _structured(self, mode: str) -> Any:
        """The runnable that asks in `mode`, built once per model; see `_bare_request`."""
        note = _note(self.model)
        runnable = note.structured.get(mode)
        if runnable is None:
            if mode == "json_schema":
                chain = self.model.with_structured_output(CritiqueReply, include_raw=True)
            else:
                chain = self.model.with_structured_output(
                    CritiqueReply, method="json_mode", include_raw=True
                )
            runnable = note.structured[mode] = _bare_request(chain) or chain
        return runnable

    def critique(self, request: CritiqueRequest) -> CritiqueResult:
        """Judge the draft, falling back (json_schema, json_object, plain text) as the model needs.

        An empty reply is asked again once; what went wrong is recorded.
        """
        messages = self._messages(request)
        empty: list[BaseMessage] = []
        problems: list[str] = []
        note = _note(self.model)
        while (mode := note.mode) != "plain":
            try:
                with _trying(note):
                    if note.mode != mode:
                        continue  # another call found this way refused while we waited
                    structured = _as_structured(self._structured(mode).invoke(messages))
                    note.settled = True
                result = self._from_structured(structured)
            except Exception as error:  # noqa: BLE001 - any failure means: try the next way
                problems += self._note_unsupported(error, mode)
                if note.mode == mode:
                    break  # an unreadable reply: ask this once in plain text
                continue
            if result is not None:
                return result
            empty.append(structured["raw"])
            break
        with _tried(note):
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
        note = _note(self.model)
        while (mode := note.mode) != "plain":
            try:
                async with _atrying(note):
                    if note.mode != mode:
                        continue  # another call found this way refused while we waited
                    reply = await ainvoke_in_slot(self._structured(mode), messages)
                    structured = _as_structured(reply)
                    note.settled = True
                result = self._from_structured(structured)
            except Exception as error:  # noqa: BLE001 - any failure means: try the next way
                problems += self._note_unsupported(error, mode)
                if note.mode == mode:
                    break
                continue
            if result is not None:
                return result
            empty.append(structured["raw"])
            break
        with _tried(note):
            reply = await ainvoke_in_slot(self.model, messages)
            if not empty and _is_empty(reply):
                empty.append(reply)
                reply = await ainvoke_in_slot(self.model, messages)
        return self._from_text(reply, empty, problems)

    def _note_unsupported(self, error: Exception, mode: str) -> list[str]:
        """Re-raise transport errors; step a model that refuses `mode` down to the next one.

        The step is remembered for the model (for the process), so a server that
        cannot do a mode is asked that way once. Returns the problem to record
        when the reply was there but unreadable.
        """
        note = _note(self.model)
        if _is_unsupported(error):
            following = _MODES[_MODES.index(mode) + 1]
            with _NOTES_LOCK:
                if note.mode == mode:
                    note.tried.append(f"{mode} ({_short_error(error)})")
                    note.mode = following
            log.info("%s critiques unsupported (%s); using %s", mode, error, following)
            return []
        if _is_transport_error(error):
            raise error
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
            reply = parsed.model_dump()
            reply["feedback"] = list(dict.fromkeys(reply["feedback"]))  # a repeated item once
            critique = Critique(**reply, source=self.name)
            problems = score_problem(parsed.score, critique)
            return CritiqueResult(critique, add_usage(usage), tuple(problems))
        refusal = refusal_of(raw)
        if refusal:
            return _refused(refusal, self.name, usage)
        if raw is None or _is_empty(raw):
            return None
        if is_broken_json(text) and salvage_cut_json(text) is None:
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


def _as_structured(reply: Any) -> dict[str, Any]:
    """A reply as a structured-output chain's result: {"raw", "parsed", "parsing_error"}.

    The result of a whole chain passes through; a bare reply is parsed as the
    chain's parsers would (JSON, possibly fenced, into `CritiqueReply`).
    """
    if isinstance(reply, dict):
        return reply
    try:
        parsed = CritiqueReply.model_validate(parse_json_markdown(message_text(reply)))
    except Exception as error:  # noqa: BLE001 - unreadable: the caller decides what to do
        return {"raw": reply, "parsed": None, "parsing_error": error}
    return {"raw": reply, "parsed": parsed, "parsing_error": None}


def _is_empty(reply: Any) -> bool:
    return isinstance(reply, BaseMessage) and not message_text(reply) and not refusal_of(reply)


def _refused(
    refusal: str, source: str, usage: Usage, earlier: Sequence[str] = ()
) -> CritiqueResult:
    """A refusal is no verdict: no feedback, no score, not done, and the problem recorded."""
    flat = " ".join(refusal.split())[:160]
    problem = f"the critic refused: {flat!r}"
    return CritiqueResult(Critique(source=source), usage, (*earlier, problem))
