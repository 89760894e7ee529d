"""The offline model: a deterministic, rule-based stand-in for a language model.

It exists so that demos, tests and benchmarks run on machines with no model
endpoint. It is not a language model and does not pretend to be one:

- as generator it writes a rough first draft that covers only part of the task;
- as critic it runs real, checkable tests on the draft (every required term of
  the task mentioned, a capital first letter, a closing full stop, no filler
  words, no doubled words) and reports each failure as one feedback item, with
  the fraction of checks passed as the score; it leaves out what the automatic
  checks' notes in its prompt already say;
- as refiner it applies the feedback items it understands, at most
  `edits_per_step` of them per step, like an editor making small passes (asked in
  the fresh form, which shows no draft, to the first draft it would write).

It reads the role from the "Role:" line that this library's prompts start with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import ValidationError

from self_refine.prompts.render import FEEDBACK_TURN, unfence

__all__ = ["OfflineModel", "json_reply_parser", "required_terms"]

FILLER_WORDS = ("very", "really", "basically", "actually")
_STOPWORDS = frozenset(
    """a an and are as at be by for from has have in into is it its of on or that the this
    to was were will with write about using words following include includes sentence
    one two three short long text response task please make give list story paragraph
    should must your you what which when where who how than then them they their these""".split()
)


def _section(text: str, tag: str) -> str | None:
    """Return the content of the last <tag> block in text, unescaped."""
    found = re.findall(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, flags=re.S)
    return unfence(found[-1]) if found else None


def required_terms(task: str) -> list[str]:
    """Terms a draft must mention: an explicit list after a colon, quoted terms, or keywords."""
    listed = re.search(r"(?:words|concepts|terms|keywords)\s*:\s*(.+)", task, flags=re.I)
    if listed:
        raw = re.split(r",|\band\b", listed.group(1).strip().rstrip("."))
        terms = [t.strip(" .'\"").lower() for t in raw]
        return [t for t in dict.fromkeys(terms) if t]
    quoted = re.findall(r"[\"']([^\"']{2,40})[\"']", task)
    if quoted:
        return list(dict.fromkeys(q.lower() for q in quoted))
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z-]{3,}", task)]
    return [w for w in dict.fromkeys(words) if w not in _STOPWORDS][:4]


def _mentions(draft: str, term: str) -> bool:
    return re.search(rf"\b{re.escape(term)}(?:s|es)?\b", draft, flags=re.I) is not None


def critique_text(task: str, draft: str) -> dict[str, Any]:
    """Check the draft and return {"feedback", "score", "done"} as the critic would."""
    terms = required_terms(task)
    issues: list[str] = []
    stripped = draft.strip()
    if stripped[:1].islower():
        issues.append("Start the text with a capital letter.")
    if stripped and stripped[-1] not in ".!?":
        issues.append("End the text with a full stop.")
    for word in FILLER_WORDS:
        if re.search(rf"\b{word}\b", stripped, flags=re.I):
            issues.append(f'Remove the filler word "{word}".')
    for match in re.finditer(r"\b(\w+)\s+\1\b", stripped, flags=re.I):
        issues.append(f'Remove the repeated word "{match.group(1)}".')
    for term in terms:
        if not _mentions(stripped, term):
            issues.append(f'Mention "{term}", which the task asks for.')
    if not stripped:
        issues = ["Write a response: the draft is empty."]
    checks = 2 + len(FILLER_WORDS) + max(1, len(terms))
    score = round(max(0.0, 1 - len(issues) / checks), 3)
    return {"feedback": issues, "score": score, "done": not issues}


def first_draft(task: str) -> str:
    """A rough first draft: covers the first required term only, with style problems."""
    terms = required_terms(task) or ["the task"]
    return f"this is a very rough draft about {terms[0]}"


def _capitalize(draft: str, _: re.Match[str]) -> str:
    return draft[:1].upper() + draft[1:]


def _full_stop(draft: str, _: re.Match[str]) -> str:
    return draft.rstrip() + "."


def _remove_filler(draft: str, match: re.Match[str]) -> str:
    word = re.escape(match.group(1))
    return re.sub(rf"\s*\b{word}\b", "", draft, count=1, flags=re.I).strip()


def _remove_repeat(draft: str, match: re.Match[str]) -> str:
    word = re.escape(match.group(1))
    return re.sub(rf"\b({word})\s+\1\b", r"\1", draft, count=1, flags=re.I)


def _mention(draft: str, match: re.Match[str]) -> str:
    body = draft.rstrip()
    end = "" if body[-1:] in ".!?" else "."
    return f"{body}{end} It also covers {match.group(1)}."


def _replace(draft: str, match: re.Match[str]) -> str:
    return draft.replace(match.group(1), match.group(2), 1)


_EDITS: list[tuple[re.Pattern[str], Callable[[str, re.Match[str]], str]]] = [
    (re.compile(r"capital letter", re.I), _capitalize),
    (re.compile(r"full stop|end .*period", re.I), _full_stop),
    (re.compile(r"remove the filler word \"([^\"]+)\"", re.I), _remove_filler),
    (re.compile(r"remove the repeated word \"([^\"]+)\"", re.I), _remove_repeat),
    (re.compile(r"replace \"([^\"]+)\" with \"([^\"]*)\"", re.I), _replace),
    (
        re.compile(
            r"(?:mention|include|add|use) (?:the (?:word|term|concept) )?\"([^\"]+)\"", re.I
        ),
        _mention,
    ),
]


def refine_text(draft: str, feedback: Sequence[str], edits_per_step: int) -> str:
    """Apply up to `edits_per_step` feedback items that this model understands."""
    applied = 0
    for item in feedback:
        if applied >= edits_per_step:
            break
        for pattern, edit in _EDITS:
            match = pattern.search(item)
            if match:
                draft = edit(draft, match)
                applied += 1
                break
    return draft


def _finding(item: str) -> tuple[str, str] | str:
    """What an item asks for ("mention", "frisbee"), so a repeat of a note can be left out."""
    match = re.search(r"(\w+) (?:the \w+ )?\"([^\"]+)\"", item)
    if not match:
        return item
    verb = match.group(1).lower()
    return ("mention" if verb in _SAME_AS_MENTION else verb), match.group(2).lower()


_SAME_AS_MENTION = frozenset({"use", "include", "add"})


def _feedback_items(block: str | None) -> list[str]:
    if not block:
        return []
    items = [line[2:].strip() for line in block.splitlines() if line.startswith("- ")]
    return [item for item in items if item != "(no feedback)"]


def _feedback_turn(messages: Sequence[BaseMessage]) -> tuple[str, list[str]] | None:
    """(latest draft, its feedback) of a refine request in the conversation form, else None."""
    for index in range(len(messages) - 1, 0, -1):
        text = messages[index].text
        if isinstance(messages[index], HumanMessage) and text.startswith(FEEDBACK_TURN):
            before = messages[index - 1]
            if isinstance(before, AIMessage):
                block = text.removeprefix(FEEDBACK_TURN).split("\n\n", 1)[0]
                return before.text, _feedback_items(block)
    return None


def json_reply_parser(schema: Any, *, include_raw: bool = False) -> RunnableLambda[AIMessage, Any]:
    """Read a reply's JSON text into `schema`, as a provider's structured output would.

    With `include_raw`, the result is {"raw", "parsed", "parsing_error"} and a
    reply that does not fit the schema gives `parsed=None` instead of raising.
    A JSON schema (a dict) gives the parsed JSON value, unchecked.
    """

    def parse(message: AIMessage) -> Any:
        try:
            if isinstance(schema, dict):
                parsed = json.loads(message.text)
            else:
                parsed = schema.model_validate_json(message.text)
        except (ValidationError, ValueError) as error:
            if include_raw:
                return {"raw": message, "parsed": None, "parsing_error": error}
            raise
        if include_raw:
            return {"raw": message, "parsed": parsed, "parsing_error": None}
        return parsed

    async def aparse(message: AIMessage) -> Any:
        return parse(message)  # microseconds: no worker thread needed

    return RunnableLambda(parse, afunc=aparse)


class OfflineModel(BaseChatModel):
    """Deterministic rule-based stand-in for a chat model (see the module docstring)."""

    edits_per_step: int = 2
    accepts_images: ClassVar[bool] = False
    """It reads text only: a task with images is refused before the first call."""

    @property
    def _llm_type(self) -> str:
        return "self-refine-offline"

    def respond(self, messages: Sequence[BaseMessage]) -> str:
        """Answer one request, in the role its system prompt names."""
        system = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
        prompt = messages[-1].text if messages else ""
        role = re.search(r"^Role: (\w+)", system)
        task = _section(prompt, "task") or prompt
        if role and role.group(1) == "critic":
            critique = critique_text(task, _section(prompt, "draft") or "")
            noted = {_finding(n) for n in _feedback_items(_section(prompt, "feedback"))}
            critique["feedback"] = [i for i in critique["feedback"] if _finding(i) not in noted]
            return json.dumps(critique)
        if role and role.group(1) == "refiner":
            turn = _feedback_turn(messages)
            if turn is not None:  # the conversation form: drafts are the model's own turns
                return refine_text(*turn, self.edits_per_step)
            draft = _section(prompt, "draft")
            if draft is None:  # the fresh form: a new first draft, written to the feedback
                draft = first_draft(task)
            return refine_text(
                draft, _feedback_items(_section(prompt, "feedback")), self.edits_per_step
            )
        return first_draft(task)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = self.respond(messages)
        prompt_tokens = sum(len(m.text.split()) for m in messages)
        completion_tokens = len(text.split())
        message = AIMessage(
            text,
            usage_metadata={
                "input_tokens": prompt_tokens,
                "output_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
            response_metadata={"model_name": "offline"},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # The answer takes microseconds: made on the event loop, not on a worker thread.
        return self._generate(messages, stop, **kwargs)

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, Any]:
        """Parse the JSON this model writes into `schema` (a pydantic model class)."""
        return self | json_reply_parser(schema, include_raw=include_raw)
