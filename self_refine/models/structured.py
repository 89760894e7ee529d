"""Structured output that steps down: json_schema -> json_object -> plain text, per model.

How a model is asked for JSON, best first: a JSON schema the server enforces
(`json_schema`), a JSON object with the schema in the prompt (`json_object`), plain
text read leniently (`plain`). `StructuredAsk` is the one caller that steps down: a
model (or its server) that refuses a way is stepped down once, and the step is
remembered by the `StructuredAsk` of that model, one per model of a run's plan
(`settings/plan.py`), shared by its critiques (`critics/llm.py`) and a typed answer's
drafts (`StructuredDrafts`). Until a way has worked, one call at a time tries it (a
lock, and an asyncio lock per event loop for async calls), so a concurrent batch
tries a refused way once; the calls that waited while another settled the way go
on together (the lock holds trials, not calls).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from typing import Any, NamedTuple

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableParallel, RunnableSequence

from self_refine.models.calls import call_slot, is_transport_error

__all__ = [
    "MODES",
    "Asked",
    "StructuredAsk",
    "StructuredDrafts",
    "bare_request",
    "is_transport_only",
    "is_unsupported",
    "short_error",
]

log = logging.getLogger(__name__)

MODES = ("json_schema", "json_object", "plain")
"""How structured output is asked for, best first: a JSON schema the server enforces, a
JSON object (the schema is in the prompt), plain text read leniently."""

_GATES_MAX = 32


class Asked(NamedTuple):
    """A model's reply, and the way it was asked (one of MODES)."""

    reply: Any
    mode: str


class StructuredAsk:
    """One model asked for structured output the best way it takes, stepping down as it must.

    `invoke(runnable_for, messages)` calls `runnable_for(mode)` in the best way not yet
    refused: `runnable_for("plain")` is the plain-text request. A refusal
    (`is_unsupported`) steps this model down for good; any other error is raised. The
    runnables built for each way are kept here (`built`), since building one costs
    about a millisecond (ChatOpenAI converts the schema).
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.mode = MODES[0]
        self.tried: list[str] = []
        self.settled = False
        """True once a structured call went through in `mode`: from then on, no waiting."""
        self._lock = threading.Lock()
        self._gate = threading.Lock()
        self._agates: dict[int, asyncio.Lock] = {}
        self._built: dict[str, Any] = {}

    def built(self, key: str, build: Callable[[], Any]) -> Any:
        """The runnable kept under `key`, built the first time it is asked for."""
        runnable = self._built.get(key)
        if runnable is None:
            runnable = self._built[key] = build()
        return runnable

    def invoke(
        self,
        runnable_for: Callable[[str], Any],
        messages: list[BaseMessage],
        config: RunnableConfig | None = None,
    ) -> Asked:
        """The reply, asked the best way this model takes, and that way."""
        while (mode := self.mode) != "plain":
            try:
                with self._trying():
                    if self.mode != mode:
                        continue  # another call found this way refused while we waited
                    reply = runnable_for(mode).invoke(messages, config)
                    self.settled = True
                return Asked(reply, mode)
            except Exception as error:
                self._step_down(mode, error)
        return Asked(self.plain(runnable_for("plain"), messages, config), "plain")

    async def ainvoke(
        self,
        runnable_for: Callable[[str], Any],
        messages: list[BaseMessage],
        config: RunnableConfig | None = None,
        *,
        in_slot: bool = False,
    ) -> Asked:
        """Async twin of invoke(); with `in_slot`, each call waits for one of a batch's call
        slots (`models.calls.call_slot`), not the waits at the gate."""
        while (mode := self.mode) != "plain":
            try:
                async with self._atrying():
                    if self.mode != mode:
                        continue
                    runnable = runnable_for(mode)
                    async with call_slot() if in_slot else nullcontext():
                        reply = await runnable.ainvoke(messages, config)
                    self.settled = True
                return Asked(reply, mode)
            except Exception as error:
                self._step_down(mode, error)
        reply = await self.aplain(runnable_for("plain"), messages, config, in_slot=in_slot)
        return Asked(reply, "plain")

    def plain(
        self, runnable: Any, messages: list[BaseMessage], config: RunnableConfig | None = None
    ) -> Any:
        """A plain-text call; its failure says which ways of asking failed before it."""
        with self._noting():
            return runnable.invoke(messages, config)

    async def aplain(
        self,
        runnable: Any,
        messages: list[BaseMessage],
        config: RunnableConfig | None = None,
        *,
        in_slot: bool = False,
    ) -> Any:
        """Async twin of plain()."""
        with self._noting():
            async with call_slot() if in_slot else nullcontext():
                return await runnable.ainvoke(messages, config)

    def _step_down(self, mode: str, error: Exception) -> None:
        """Remember that the model refuses `mode` (from now on it is asked the next way);
        raise any other error."""
        if not is_unsupported(error):
            raise error
        following = MODES[MODES.index(mode) + 1]
        with self._lock:
            if self.mode == mode:
                self.tried.append(f"{mode} ({short_error(error)})")
                self.mode = following
        log.info("%s unsupported (%s); using %s", mode, error, following)

    @contextmanager
    def _trying(self) -> Iterator[None]:
        """Hold the gate while the way of asking is not settled yet."""
        if self.settled:
            yield
            return
        with self._gate:
            if not self.settled:
                yield
                return
        yield

    @asynccontextmanager
    async def _atrying(self) -> AsyncIterator[None]:
        """Async twin of _trying(): an asyncio lock of the running loop."""
        if self.settled:
            yield
            return
        loop = id(asyncio.get_running_loop())
        with self._lock:
            if len(self._agates) > _GATES_MAX:
                self._agates.clear()
            gate = self._agates.setdefault(loop, asyncio.Lock())
        async with gate:
            if not self.settled:
                yield
                return
        yield

    @contextmanager
    def _noting(self) -> Iterator[None]:
        try:
            yield
        except Exception as error:
            if self.tried:
                error.add_note("stepped down after: " + "; ".join(self.tried))
            raise


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


def is_transport_only(error: Exception) -> bool:
    """True for failures that a plain-text call would hit too (network, auth, rate limits)."""
    return is_transport_error(error) and not is_unsupported(error)


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
    """A model asked for drafts that are JSON of `schema`, through its `StructuredAsk`.

    It is called as the model is (`invoke(messages, config)`) and answers one
    message whose text is the JSON: indented canonically when it parses, as the
    model wrote it when it does not (then the draft's check says what is wrong).
    `bind(temperature=..., seed=...)` makes a new draw of it (a resample, a
    candidate): the requests carry those settings, the model's way of asking stays shared.
    """

    def __init__(
        self, ask: StructuredAsk, schema: dict[str, Any], settings: dict[str, Any] | None = None
    ) -> None:
        model = ask.model
        self.ask = ask
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
        return StructuredDrafts(self.ask, self.schema, {**self.settings, **settings})

    def _runnable(self, mode: str) -> Any:
        """The request of one way of asking, with this draw's settings as call keywords (a
        bare request or the model takes them, as does a chain whose first step is the bound
        model: a sequence passes its keywords to its first step)."""
        if mode == "plain":
            runnable = self.ask.model
        else:
            runnable = self.ask.built(f"{self.key}:{mode}", lambda: self._build(mode))
        return runnable.bind(**self.settings) if self.settings else runnable

    def _build(self, mode: str) -> Any:
        method = "json_schema" if mode == "json_schema" else "json_mode"
        chain = self.ask.model.with_structured_output(self.schema, method=method, include_raw=True)
        return bare_request(chain) or chain

    def invoke(
        self, input: list[BaseMessage], config: RunnableConfig | None = None, **_: Any
    ) -> AIMessage:
        """Ask for a JSON draft the best way the model takes."""
        return _json_text(self.ask.invoke(self._runnable, input, config).reply)

    async def ainvoke(
        self, input: list[BaseMessage], config: RunnableConfig | None = None, **_: Any
    ) -> AIMessage:
        """Async twin of invoke() (the node's call already holds a batch's call slot)."""
        return _json_text((await self.ask.ainvoke(self._runnable, input, config)).reply)
