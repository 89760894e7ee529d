"""The LLM critic: structured output, with a plain-text fallback that never loses a reply."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableBinding
from langchain_core.utils.json import parse_json_markdown
from pydantic import BaseModel, Field, ValidationError

from self_refine.critics.base import CritiqueRequest, CritiqueResult
from self_refine.critics.parse import (
    feedback_items,
    is_broken_json,
    not_addressed,
    read_critique,
    salvage_cut_json,
    score_problem,
)
from self_refine.models.calls import refusal_of
from self_refine.models.offline import OfflineModel
from self_refine.models.resolve import message_text, message_usage
from self_refine.models.structured import (
    StructuredAsk,
    bare_request,
    is_transport_only,
)
from self_refine.prompts import PromptSet, feedback_messages
from self_refine.state import Critique, Usage, add_usage

__all__ = ["LLMCritic"]

log = logging.getLogger(__name__)

_EMPTY = "the critic returned an empty reply"


class _UnreadableCritique(ValueError):
    """A structured-output reply cut off mid-JSON: nothing usable in it."""

    said = "its JSON was cut off before its first complete item"


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
    extend (a verifier's) come in the request's `notes`. The model is asked for
    JSON the best way it takes (`ask`, shared with the run's other uses of the
    model; see `models/structured.py`); a reply that cannot be read is asked again
    once in plain text, and an empty one once more.
    """

    def __init__(self, model: Any, prompts: PromptSet, ask: StructuredAsk | None = None) -> None:
        self.name = "offline" if isinstance(model, OfflineModel) else "llm"
        self.model = model
        self.prompts = prompts
        self.ask = ask or StructuredAsk(model)
        self._format = _sent_format(model)

    def _messages(self, request: CritiqueRequest) -> list[BaseMessage]:
        return feedback_messages(self.prompts, request.task, request.draft, request.notes)

    def _runnable(self, mode: str) -> Any:
        """The request of one way of asking; see `bare_request`."""
        if mode == "plain":
            return self.model
        return self.ask.built(f"critique:{mode}", lambda: self._build(mode))

    def _build(self, mode: str) -> Any:
        method = "json_schema" if mode == "json_schema" else "json_mode"
        chain = self.model.with_structured_output(CritiqueReply, method=method, include_raw=True)
        bare = bare_request(chain)
        if bare is None:
            return chain
        if mode == "json_schema" and self._format and isinstance(bare, RunnableBinding):
            return bare.bind(response_format=self._format)
        return bare

    def critique(self, request: CritiqueRequest) -> CritiqueResult:
        """Judge the draft, asking the best way the model takes (see the class)."""
        messages = self._messages(request)
        try:
            asked = self.ask.invoke(self._runnable, messages)
        except Exception as error:  # noqa: BLE001 - unreadable: ask in plain text
            return self._plain(messages, [], _unreadable(error))
        reply, empty, problems = self._read(asked.reply, asked.mode)
        if isinstance(reply, CritiqueResult):
            return reply
        return self._plain(messages, empty, problems, reply)

    async def acritique(self, request: CritiqueRequest) -> CritiqueResult:
        """Async twin of critique(); each call waits for a slot when a batch limits them."""
        messages = self._messages(request)
        try:
            asked = await self.ask.ainvoke(self._runnable, messages, in_slot=True)
        except Exception as error:  # noqa: BLE001 - unreadable: ask in plain text
            return await self._aplain(messages, [], _unreadable(error))
        reply, empty, problems = self._read(asked.reply, asked.mode)
        if isinstance(reply, CritiqueResult):
            return reply
        return await self._aplain(messages, empty, problems, reply)

    def _read(self, reply: Any, mode: str) -> tuple[Any, list[BaseMessage], list[str]]:
        """The critique in a structured reply; else the plain reply to read (None: ask in
        plain text), the empty replies so far and the problems met."""
        if mode == "plain":
            return reply, [], []
        structured = _as_structured(reply)
        try:
            if mode == "json_schema" and self._format:
                _validate_as_the_sdk_does(reply)
            result = self._from_structured(structured)
        except Exception as error:  # noqa: BLE001 - unreadable: ask in plain text
            return None, [], _unreadable(error)
        if result is not None:
            return result, [], []
        return None, [structured["raw"]], []

    def _plain(
        self,
        messages: list[BaseMessage],
        empty: list[BaseMessage],
        problems: list[str],
        reply: Any = None,
    ) -> CritiqueResult:
        """The critique read from a plain-text reply (asked for when `reply` is None); an
        empty reply is asked again once."""
        if reply is None:
            reply = self.ask.plain(self.model, messages)
        if not empty and _is_empty(reply):
            empty.append(reply)
            reply = self.ask.plain(self.model, messages)
        return self._from_text(reply, empty, problems)

    async def _aplain(
        self,
        messages: list[BaseMessage],
        empty: list[BaseMessage],
        problems: list[str],
        reply: Any = None,
    ) -> CritiqueResult:
        """Async twin of _plain()."""
        if reply is None:
            reply = await self.ask.aplain(self.model, messages, in_slot=True)
        if not empty and _is_empty(reply):
            empty.append(reply)
            reply = await self.ask.aplain(self.model, messages, in_slot=True)
        return self._from_text(reply, empty, problems)

    def _from_structured(self, result: dict[str, Any]) -> CritiqueResult | None:
        """The critique in a structured reply; None when the reply is empty (ask again)."""
        raw = result.get("raw")
        usage = message_usage(raw)
        parsed = result.get("parsed")
        text = message_text(raw) if raw is not None else ""
        if isinstance(parsed, CritiqueReply):
            reply = parsed.model_dump()
            reply["feedback"], dropped = feedback_items(reply["feedback"])
            critique, contradiction = not_addressed(Critique(**reply, source=self.name))
            problems = dropped + score_problem(parsed.score, critique) + contradiction
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


def _sent_format(model: Any) -> dict[str, Any] | None:
    """CritiqueReply as the openai SDK sends it, for a ChatOpenAI model (None for others).

    Handed the class, ChatOpenAI passes it on to the SDK, which works its strict JSON
    schema out again at every call (pydantic's schema generation: about 0.3 ms of CPU
    per critique). The critic's bound request takes the SDK's own format instead, worked
    out here once (`_build`), so every request is the same, byte for byte; the SDK then
    leaves the reply unparsed, and the critic validates it as the SDK did
    (`_validate_as_the_sdk_does`).
    """
    chat_openai = sys.modules.get("langchain_openai")
    if chat_openai is None or not isinstance(model, chat_openai.chat_models.base.BaseChatOpenAI):
        return None
    try:
        from openai.lib._parsing import type_to_response_format_param
    except ImportError:  # another SDK version: it works the format out itself
        return None
    sent: Any = type_to_response_format_param(CritiqueReply)
    return dict(sent)


def _validate_as_the_sdk_does(reply: Any) -> None:
    """Raise pydantic's ValidationError for a reply with text that is not CritiqueReply's
    JSON, as the SDK does when handed the class (a refusal or an empty reply is read on)."""
    if not isinstance(reply, BaseMessage) or refusal_of(reply):
        return
    text = reply.content if isinstance(reply.content, str) else message_text(reply)
    if text:
        CritiqueReply.model_validate_json(text)


def _unreadable(error: Exception) -> list[str]:
    """The problem to record for a structured reply that could not be read; a failure of
    the connection or the endpoint is raised instead (a plain-text call would meet it too)."""
    if is_transport_only(error):
        raise error
    log.info("structured critique unreadable (%s); asking again in plain text", error)
    return [
        f"the critic's structured reply was unreadable ({_why(error)}); asked again in plain text"
    ]


def _why(error: Exception) -> str:
    """What was wrong with an unreadable structured reply, in words (no class names)."""
    if isinstance(error, _UnreadableCritique):
        return error.said
    if isinstance(error, ValidationError):
        fields = sorted({str(e["loc"][0]) for e in error.errors() if e.get("loc")})
        if fields and all(e.get("type") != "json_invalid" for e in error.errors()):
            return f"its JSON did not give {', '.join(fields)} as asked"
        return "it was not JSON"
    if isinstance(error, (OutputParserException, ValueError)):
        return "it was not JSON"
    return "the model's structured output failed"


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
