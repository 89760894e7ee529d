"""Structured output that steps down: json_schema -> json_object -> plain text, per model.

How a model is asked for JSON, best first: a JSON schema the server enforces
(`json_schema`), a JSON object with the schema in the prompt (`json_object`), plain
text read leniently (`plain`). A model (or its server) that refuses a way is stepped
down once, and the step is remembered for the process (`ModelNote`): until a way has
worked for a model, one call at a time tries it (`trying`, `atrying`), so a
concurrent batch tries a refused way once. The LLM critic asks for critiques this
way (`critics/llm.py`), and a graph with a `response_format` its drafts
(`StructuredDrafts`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableParallel, RunnableSequence

from self_refine.models.calls import is_transport_error

__all__ = [
    "MODES",
    "NOTES_LOCK",
    "ModelNote",
    "StructuredDrafts",
    "atrying",
    "bare_request",
    "is_transport_only",
    "is_unsupported",
    "model_note",
    "short_error",
    "step_down",
    "tried",
    "trying",
]

log = logging.getLogger(__name__)

MODES = ("json_schema", "json_object", "plain")
"""How structured output is asked for, best first: a JSON schema the server enforces, a
JSON object (the schema is in the prompt), plain text read leniently."""


@dataclass
class ModelNote:
    """What was learned about one model: the best way of asking that it takes, the
    structured-output runnables built for it (critiques' by mode, drafts' by schema and
    mode), and what failed on the way."""

    model: BaseChatModel
    structured: dict[str, Any] = field(default_factory=dict)
    mode: str = MODES[0]
    tried: list[str] = field(default_factory=list)
    settled: bool = False
    """True once a structured call went through in `mode`: from then on, no waiting."""
    gate: threading.Lock = field(default_factory=threading.Lock)
    agates: dict[int, asyncio.Lock] = field(default_factory=dict)
    """Until the mode is settled, one call at a time tries it (per event loop for async
    calls), so concurrent calls of a batch do not all try a way the server refuses."""


@contextmanager
def trying(note: ModelNote) -> Iterator[None]:
    """Hold the note's gate while its way of asking is not settled yet.

    Calls that waited at the gate while another call settled the way go on
    together: the gate serializes the trials, not the calls after them.
    """
    if note.settled:
        yield
        return
    with note.gate:
        if not note.settled:
            yield
            return
    yield


@asynccontextmanager
async def atrying(note: ModelNote) -> AsyncIterator[None]:
    """Async twin of trying(): an asyncio lock of the running loop."""
    if note.settled:
        yield
        return
    loop = id(asyncio.get_running_loop())
    with NOTES_LOCK:
        if len(note.agates) > _NOTES_MAX:
            note.agates.clear()
        gate = note.agates.setdefault(loop, asyncio.Lock())
    async with gate:
        if not note.settled:
            yield
            return
    yield


# By model id, with the model kept alive so its id stays its own; a few dozen at most.
# Building a structured-output runnable costs about a millisecond (ChatOpenAI converts
# the schema), so it is built once per model.
_NOTES: dict[int, ModelNote] = {}
_NOTES_MAX = 32
NOTES_LOCK = threading.Lock()


def model_note(model: BaseChatModel) -> ModelNote:
    note = _NOTES.get(id(model))
    if note is not None and note.model is model:
        return note
    with NOTES_LOCK:
        if len(_NOTES) >= _NOTES_MAX:
            _NOTES.pop(next(iter(_NOTES)))
        note = _NOTES[id(model)] = ModelNote(model)
    return note


def bare_request(chain: Any) -> Runnable[Any, Any] | None:
    """The model call inside a structured-output chain, when the chain has LangChain's usual shape.

    `with_structured_output(include_raw=True)` returns `{raw: model bound to the
    provider's structured-output request} | parsers with fallbacks`: about ten
    nested runs per call, which cost more CPU than the request itself (about
    1.3 ms per critique with ChatOpenAI). The critic reads the reply itself
    (`_as_structured`), so it calls the bound model alone: the same request.
    None when the chain has another shape (it is then called whole).
    """
    if not isinstance(chain, RunnableSequence) or not isinstance(chain.first, RunnableParallel):
        return None
    steps = chain.first.steps__
    return steps["raw"] if set(steps) == {"raw"} else None


_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured", "schema")


def is_unsupported(error: Exception) -> bool:
    """True when the server or model refuses the way of asking itself, not the request.

    Any 400/404/415/422, and a 5xx whose message names the response format (the
    unmodified llama-cpp-python server answers a json_schema format with HTTP 500).
    """
    status = getattr(error, "status_code", None)
    if isinstance(error, NotImplementedError) or status in (400, 404, 415, 422):
        return True
    text = f"{error} {_body_text(error)}".lower()
    return isinstance(status, int) and status >= 500 and any(w in text for w in _FORMAT_WORDS)


def _body_text(error: Exception) -> str:
    """An HTTP error's body as text: openai's client puts only `error.message` in its message,
    so a server answering in another shape (FastAPI's `{"detail": ...}`) says it here."""
    body = getattr(error, "body", None)
    if body is None or isinstance(body, str):
        return body or ""
    return json.dumps(body, default=str)


def short_error(error: Exception) -> str:
    status = getattr(error, "status_code", None)
    kind = f"HTTP {status}" if status else type(error).__name__
    return f"{kind}: {' '.join(str(error).split())[:120]}"


@contextmanager
def tried(note: ModelNote) -> Iterator[None]:
    """Say, on a failure of the plain-text call, which ways of asking failed before it."""
    try:
        yield
    except Exception as error:
        if note.tried:
            error.add_note("the critic had stepped down after: " + "; ".join(note.tried))
        raise


def is_transport_only(error: Exception) -> bool:
    """True for failures that a plain-text call would hit too (network, auth, rate limits)."""
    return is_transport_error(error) and not is_unsupported(error)


def step_down(note: ModelNote, mode: str, error: Exception) -> None:
    """Remember that the model refuses `mode`: from now on it is asked the next way."""
    following = MODES[MODES.index(mode) + 1]
    with NOTES_LOCK:
        if note.mode == mode:
            note.tried.append(f"{mode} ({short_error(error)})")
            note.mode = following
    log.info("%s unsupported (%s); using %s", mode, error, following)


def _json_text(reply: Any) -> AIMessage:
    """The reply as a message whose text is its JSON (tool-call arguments where the model
    answers structured output with a tool call), as canonical JSON when it parses."""
    raw = reply.get("raw") if isinstance(reply, dict) else reply
    if not isinstance(raw, AIMessage):
        return AIMessage(str(raw or ""))
    text = raw.text.strip()
    if not text and raw.tool_calls:
        text = json.dumps(raw.tool_calls[0]["args"])
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past what the parser takes
        return raw.model_copy(update={"content": text}) if text != raw.content else raw
    canonical = json.dumps(value, ensure_ascii=False, indent=2)
    return raw.model_copy(update={"content": canonical, "tool_calls": []})


class StructuredDrafts(Runnable[list[BaseMessage], AIMessage]):
    """A model asked for drafts that are JSON of `schema`, stepping down as it needs.

    It is called as the model is (`invoke(messages, config)`) and answers one
    message whose text is the JSON: indented canonically when it parses, as the
    model wrote it when it does not (then the draft's check says what is wrong).
    `bind(temperature=..., seed=...)` makes a new draw of it (a resample, a
    candidate): the requests carry those settings, the model's note stays shared.
    """

    def __init__(
        self, model: Any, schema: dict[str, Any], settings: dict[str, Any] | None = None
    ) -> None:
        self.model = model
        self.schema = schema
        self.settings = settings or {}
        self.temperature = getattr(model, "temperature", None)
        self.seed = getattr(model, "seed", None)
        key = json.dumps(schema, sort_keys=True).encode()
        self.key = "draft:" + hashlib.sha256(key).hexdigest()[:16]
        self.name = getattr(model, "name", None) or type(model).__name__
        self.model_name = getattr(model, "model_name", None) or getattr(model, "model", None)
        self.accepts_images = getattr(model, "accepts_images", None)

    def bind(self, **settings: Any) -> StructuredDrafts:
        """The same drafts asked with these request settings (temperature, seed) too."""
        return StructuredDrafts(self.model, self.schema, {**self.settings, **settings})

    def _runnable(self, mode: str) -> Any:
        note = model_note(self.model)
        runnable = note.structured.get(f"{self.key}:{mode}")
        if runnable is None:
            method = "json_schema" if mode == "json_schema" else "json_mode"
            chain = self.model.with_structured_output(self.schema, method=method, include_raw=True)
            runnable = note.structured[f"{self.key}:{mode}"] = bare_request(chain) or chain
        return self._drawn(runnable)

    def _drawn(self, runnable: Any) -> Any:
        """The runnable with this draw's settings as call keywords: a bare request or the
        model takes them, as does a chain whose first step is the bound model (a sequence
        passes its keywords to its first step)."""
        return runnable.bind(**self.settings) if self.settings else runnable

    def invoke(
        self, input: list[BaseMessage], config: RunnableConfig | None = None, **_: Any
    ) -> AIMessage:
        """Ask for a JSON draft the best way the model takes."""
        note = model_note(self.model)
        while (mode := note.mode) != "plain":
            try:
                with trying(note):
                    if note.mode != mode:
                        continue  # another call found this way refused while we waited
                    reply = self._runnable(mode).invoke(input, config)
                    note.settled = True
            except Exception as error:
                if not is_unsupported(error):
                    raise
                step_down(note, mode, error)
                continue
            return _json_text(reply)
        with tried(note):
            return _json_text(self._drawn(self.model).invoke(input, config))

    async def ainvoke(
        self, input: list[BaseMessage], config: RunnableConfig | None = None, **_: Any
    ) -> AIMessage:
        """Async twin of invoke() (the node's call already holds a batch's call slot)."""
        note = model_note(self.model)
        while (mode := note.mode) != "plain":
            try:
                async with atrying(note):
                    if note.mode != mode:
                        continue
                    reply = await self._runnable(mode).ainvoke(input, config)
                    note.settled = True
            except Exception as error:
                if not is_unsupported(error):
                    raise
                step_down(note, mode, error)
                continue
            return _json_text(reply)
        with tried(note):
            return _json_text(await self._drawn(self.model).ainvoke(input, config))
