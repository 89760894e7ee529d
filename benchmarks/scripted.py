"""A fast scripted chat model: 2 KB drafts and 2 KB critiques, read off a precomputed pool."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable

from benchmarks.texts import critique_json, draft_text
from self_refine.models.offline import json_reply_parser

__all__ = ["ScriptedModel"]

_POOL = 256
_ROLE = re.compile(r"^Role: (\w+)")


@cache
def _pool(role: str, english: bool) -> list[str]:
    make = critique_json if role == "critic" else draft_text
    return [make(n, english=english) for n in range(_POOL)]


def _role(messages: list[BaseMessage]) -> str:
    system = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
    found = _ROLE.search(system)
    return found.group(1) if found else "generator"


class ScriptedModel(BaseChatModel):
    """Answers each role of the library's prompts at once: a new draft, or a critique.

    The critic is never satisfied, so a run goes on until its iteration limit.
    `english=False` answers in made-up words (see `benchmarks.texts`).
    """

    calls: int = 0
    english: bool = True

    @property
    def _llm_type(self) -> str:
        return "benchmark-scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls += 1
        role = "critic" if _role(messages) == "critic" else "writer"
        message = AIMessage(_pool(role, self.english)[self.calls % _POOL])
        return ChatResult(generations=[ChatGeneration(message=message)])

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, Any]:
        """Parse the JSON critique into `schema`, as a provider's structured output would."""

        return self | json_reply_parser(schema, include_raw=include_raw)
