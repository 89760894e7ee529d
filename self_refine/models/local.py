"""The embedded local model: a GGUF file run in this process by llama.cpp.

A thin `BaseChatModel` over `llama_cpp.Llama` rather than LangChain community's
`ChatLlamaCpp`: that one pulls in langchain-community (SQLAlchemy, aiohttp,
langchain-classic), has no async path of its own, makes structured output go
through tool calling, and builds one `Llama` per chat model. Here:

- one `Llama` per (file, context size) per process, shared by every chat model,
  thread and batch worker, its calls serialized by a lock;
- its KV cache is kept between calls, so a prompt whose start was already read
  (the next step of the same thread) is not read again; each reply reports how
  many prompt tokens the model actually evaluated (`prompt_tokens_evaluated` in
  its response metadata) beside the tokens sent (`usage_metadata`);
- structured output through llama.cpp's JSON-schema grammar: the reply is always
  JSON of the asked shape, its lists at most a few items long;
- `max_tokens` on every call, and a reply that starts repeating itself ends there
  (`models/repetition.py`: finish reason "repetition", the text cut after the loop's
  first copy); a call ends within a token when the program stops (`models/cancel.py`);
  async calls run in a worker thread;
- a request is measured before the model reads it: one whose prompt leaves less than
  `MIN_REPLY_TOKENS` (or `max_tokens`, if less) of the context for the reply is refused
  with the numbers (ConfigError), instead of being read for minutes and answered with a
  reply cut to a few words, or refused by llama.cpp once read.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import queue
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, cast

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, ConfigDict, Field

from self_refine.errors import ConfigError
from self_refine.models.cancel import CallCancelled, calls_cancelled, check_cancelled
from self_refine.models.decode_loop import DecodeLoop, LoopCall, Reply
from self_refine.models.llama_backend import THREADS_ENV, decode_threads
from self_refine.models.repetition import cut_loop, loop_start

__all__ = [
    "LOCAL_EXTRA_HINT",
    "MIN_REPLY_TOKENS",
    "LocalChatModel",
    "bounded_lists",
    "shared_llama",
]

LOCAL_EXTRA_HINT = (
    'the local model needs llama-cpp-python: pip install -e ".[local]" (it compiles '
    "llama.cpp once, about 7 minutes on 2 cores), or use model 'offline'"
)

DECODE_ENV = "SELF_REFINE_LOCAL_DECODE"
"""Environment variable: "serial" writes one reply at a time on the calling thread (today's
path before the decode loop, kept for comparing)."""
_STATE_CACHE_BYTES = 2 << 30
"""Memory for saved states, counted whole (a state holds a batch of logits, about 150 MB
for a 150k-token vocabulary, besides its KV cache): about a dozen states."""
_N_BATCH = 256
MIN_REPLY_TOKENS = 256
"""Context left for the reply below which a request is refused (about 1,000 characters)."""
_TEMPLATE_TOKENS = 8
"""Tokens a chat template adds per message (role markers), counted on top of the texts'."""


def _state_cache() -> Any:
    """llama.cpp's RAM state cache, with every byte of a state counted against its capacity.

    The library counts only the KV part of a state, so its capacity alone would let the
    logits it also keeps grow without bound (gigabytes within a few dozen calls).
    """
    from llama_cpp import LlamaRAMCache

    class WholeStateCache(LlamaRAMCache):
        @property
        def cache_size(self) -> int:
            return sum(
                s.llama_state_size + s.scores.nbytes + s.input_ids.nbytes
                for s in self.cache_state.values()
            )

    return WholeStateCache(capacity_bytes=_STATE_CACHE_BYTES)


def _stoppable_llama() -> Any:
    """llama.cpp's `Llama`, whose completions also end when its `stops` say so.

    Its chat completions take no stopping criteria of their own: the chat handler
    calls `create_completion` with the chat format's only. The stops are set for
    one call at a time, under the model's lock (`_Writing`).
    """
    from llama_cpp import Llama, StoppingCriteriaList

    class StoppableLlama(Llama):
        stops: tuple[Any, ...] = ()

        def create_completion(self, *args: Any, **kwargs: Any) -> Any:
            given = kwargs.pop("stopping_criteria", None) or ()
            kwargs["stopping_criteria"] = StoppingCriteriaList([*given, *self.stops]) or None
            return super().create_completion(*args, **kwargs)

    return StoppableLlama


_LLAMAS: dict[tuple[str, int, int], tuple[Any, threading.Lock]] = {}
_LOOPS: dict[tuple[str, int, int], DecodeLoop] = {}
_LLAMAS_LOCK = threading.Lock()


def shared_llama(path: str, n_ctx: int, n_threads: int | None = None) -> tuple[Any, threading.Lock]:
    """The process's one `Llama` for this file and context size, with the lock its calls take.

    `n_threads`: None, the free cores when the model is first loaded (`decode_threads`)."""
    threads = n_threads or _default_threads()
    key = (os.path.realpath(path), n_ctx, threads)
    with _LLAMAS_LOCK:
        found = _LLAMAS.get(key)
        if found is None:
            try:
                import llama_cpp  # noqa: F401 - the extra is installed
            except ImportError:
                raise ConfigError(LOCAL_EXTRA_HINT) from None
            llama = _stoppable_llama()(
                model_path=key[0],
                n_ctx=n_ctx,
                n_batch=_N_BATCH,
                n_threads=threads,
                n_threads_batch=threads,
                verbose=False,
            )
            # Saved states by prompt: the critic's and the refiner's prompts alternate,
            # and each finds its own longest prefix again instead of only the last one.
            llama.set_cache(_state_cache())
            found = _LLAMAS[key] = (llama, threading.Lock())
    return found


_THREADS: list[int] = []


def _default_threads() -> int:
    """SELF_REFINE_THREADS, else the free cores counted once per process (a later count
    would see this process's own load)."""
    if os.environ.get(THREADS_ENV, "").strip():
        return decode_threads()
    with _LLAMAS_LOCK:
        if not _THREADS:
            _THREADS.append(decode_threads())
        return _THREADS[0]


LOOP_CONTEXTS = 4
"""The decode loop's context holds this many full requests' tokens (more when they share
a prompt): 4 x 4,096 tokens, about 200 MB for the 0.5B model."""
LOOP_SEQUENCES = 16
"""Sequences the decode loop keeps at once: replies being written and prompts kept for reuse."""
_LOOP_BATCH = 512


def shared_loop(path: str, n_ctx: int, n_threads: int | None = None) -> DecodeLoop:
    """The process's one decode loop for this file, context size and thread count."""
    llama, _ = shared_llama(path, n_ctx, n_threads)
    threads = n_threads or _default_threads()
    key = (os.path.realpath(path), n_ctx, threads)
    with _LLAMAS_LOCK:
        loop = _LOOPS.get(key)
        if loop is None:
            from self_refine.models.llama_backend import LlamaBackend

            trained = int(llama._model.n_ctx_train()) or n_ctx  # more: llama.cpp warns
            backend = LlamaBackend(
                llama,
                n_cells=max(n_ctx, min(LOOP_CONTEXTS * n_ctx, trained)),
                n_seq=LOOP_SEQUENCES,
                n_batch=_LOOP_BATCH,
                n_threads=threads,
            )
            loop = _LOOPS[key] = DecodeLoop(backend)
            if len(_LOOPS) == 1:
                atexit.register(_close_loops)
    return loop


def _close_loops() -> None:
    """At exit: each loop's thread ends before the model it decodes with is freed."""
    with _LLAMAS_LOCK:
        loops = list(_LOOPS.values())
    for loop in loops:
        loop.close()


def forget_kept_prompts() -> None:
    """Drop what every model of the process keeps for reuse: the decode loops' kept prompts,
    the serial path's context and saved states (a cold start, for measuring)."""
    with _LLAMAS_LOCK:
        loops = list(_LOOPS.values())
        llamas = list(_LLAMAS.values())
    for loop in loops:
        loop.forget_prompts()
    for llama, lock in llamas:
        with lock:
            llama.set_cache(_state_cache())
            llama.reset()


class _Captured(Exception):  # noqa: N818 - not an error: the completion a chat call makes
    def __init__(self, kwargs: dict[str, Any]) -> None:
        super().__init__("captured")
        self.kwargs = kwargs


class _CaptureCompletion:
    """A `Llama` whose completion is not run but handed back: the prompt's tokens, stops,
    grammar and sampling settings its chat template and chat handler made for a request."""

    def __init__(self, llama: Any) -> None:
        self._llama = llama

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)

    def create_completion(self, **kwargs: Any) -> Any:
        raise _Captured(kwargs)


def completion_of(llama: Any, request: dict[str, Any]) -> dict[str, Any]:
    """The `create_completion` arguments `llama.create_chat_completion(**request)` would use."""
    from llama_cpp import Llama

    try:
        Llama.create_chat_completion(cast(Llama, _CaptureCompletion(llama)), **request)
    except _Captured as captured:
        return captured.kwargs
    raise RuntimeError("llama.cpp's chat handler made no completion")  # pragma: no cover


_SAMPLING = (
    "top_k",
    "top_p",
    "min_p",
    "typical_p",
    "repeat_penalty",
    "frequency_penalty",
    "presence_penalty",
    "tfs_z",
    "mirostat_mode",
    "mirostat_eta",
    "mirostat_tau",
    "grammar",
)


def loop_call(
    llama: Any,
    backend: Any,
    request: dict[str, Any],
    *,
    n_ctx: int,
    reuse_prefix: bool,
    on_text: Any = None,
) -> LoopCall | None:
    """The decode loop's call for a chat request, made as `create_chat_completion` makes
    its completion; None when the request needs what only that path does (a logits
    processor, a logit bias)."""
    done = completion_of(llama, request)
    if any(done.get(key) is not None for key in ("logits_processor", "logit_bias")):
        return None
    if done.get("mirostat_mode"):
        return None
    criteria = done.get("stopping_criteria")
    prompt = [int(token) for token in done["prompt"]]
    if len(prompt) >= n_ctx:
        raise ValueError(f"Requested tokens ({len(prompt)}) exceed context window of {n_ctx}")
    max_tokens = done.get("max_tokens")
    if max_tokens is None or max_tokens <= 0 or max_tokens + len(prompt) >= n_ctx:
        max_tokens = n_ctx - len(prompt)
    stop = done.get("stop") or []
    stops = [stop] if isinstance(stop, str) else list(stop)
    seed = done.get("seed")
    if seed is None:
        seed = random.randint(0, 2**32)
    settings = {key: done[key] for key in _SAMPLING if key in done}
    settings["temp"] = done.get("temperature", 0.8)

    def make_sampler() -> Any:
        return backend.sampler(settings, seed)

    return LoopCall(
        prompt=prompt,
        max_tokens=max_tokens,
        stops=stops,
        make_sampler=make_sampler,
        reuse_prefix=reuse_prefix,
        ends=None if criteria is None else lambda ids: bool(criteria(ids, None)),
        on_text=on_text,
    )


_MAX_LIST_ITEMS = 6
"""Most items a list in a grammar-constrained reply may have: a small model can repeat one
feedback item until `max_tokens` runs out and cuts the JSON off; the grammar ends it."""


def bounded_lists(schema: Any) -> Any:
    """The JSON schema with every list that has no `maxItems` bounded to a few items."""
    if isinstance(schema, list):
        return [bounded_lists(part) for part in schema]
    if not isinstance(schema, dict):
        return schema
    bounded = {key: bounded_lists(value) for key, value in schema.items()}
    if bounded.get("type") == "array" and "maxItems" not in bounded:
        bounded["maxItems"] = _MAX_LIST_ITEMS
    return bounded


def _role(message: BaseMessage) -> str:
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    return "user"


class _Writing:
    """One reply being written: it ends early when it starts repeating itself, or when
    the program stops its model calls (`models/cancel.py`).

    As llama.cpp's stopping criterion it is called after each token with every token id
    so far (the first call's ids are the prompt), and decodes only the new ones.
    """

    def __init__(self, llama: Any) -> None:
        self.llama = llama
        self.read: int | None = None
        self.written = b""
        self.looped = False

    def __enter__(self) -> _Writing:
        check_cancelled()  # it waited for the model's lock: the run may be stopping
        self.llama.stops = (self,)
        return self

    def __exit__(self, *exc: object) -> None:
        self.llama.stops = ()
        check_cancelled()  # a reply cut short is no reply

    def __call__(self, ids: Any, _logits: Any) -> bool:
        if calls_cancelled():
            return True
        if self.read is None:
            self.read = len(ids)
            return False
        new = [int(token) for token in ids[self.read :]]
        self.read = len(ids)
        if new:
            self.written += self.llama.detokenize(new)
        self.looped = loop_start(self.written.decode("utf-8", errors="ignore")) is not None
        return self.looped


def _evaluated(llama: Any) -> int:
    """Prompt tokens the model has evaluated so far (llama.cpp's own counter)."""
    import llama_cpp

    return int(llama_cpp.llama_perf_context(llama.ctx).n_p_eval)


class LocalChatModel(BaseChatModel):
    """A chat model that runs a GGUF file in this process with llama.cpp."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_path: str = Field(description="Path of the GGUF file.")
    model_name: str = Field(default="local", description="Name shown in traces and errors.")
    n_ctx: int = Field(default=4096, description="Context size in tokens.")
    max_tokens: int = Field(default=512, description="Most tokens one reply may have.")
    temperature: float = Field(default=0.2)
    seed: int | None = Field(default=0, description="Sampling seed; None: random.")
    reuse_prefix: bool = Field(
        default=True,
        description="Keep what the model has read between calls (False: read every prompt "
        "from the start; for measuring what reuse saves).",
    )
    decode_loop: bool = Field(
        default_factory=lambda: os.environ.get(DECODE_ENV, "").strip().lower() != "serial",
        description="Write replies in the process's shared decode loop, calls made together "
        "decoded together (False, or SELF_REFINE_LOCAL_DECODE=serial: one call at a time "
        "under a lock, on the calling thread; for comparing).",
    )
    n_threads: int | None = Field(
        default=None,
        description="Threads to decode with; None: SELF_REFINE_THREADS, else the cores free "
        "when the model is first loaded.",
    )

    accepts_images: ClassVar[bool] = False
    """The known models read text only: a task with images is refused before the first call."""

    @property
    def _llm_type(self) -> str:
        return "self-refine-local"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "model_path": self.model_path, "n_ctx": self.n_ctx}

    def _request(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> Any:
        request: dict[str, Any] = {
            "messages": [{"role": _role(m), "content": m.text} for m in messages],
            "max_tokens": int(kwargs.get("max_tokens") or self.max_tokens),
            "temperature": float(kwargs.get("temperature", self.temperature)),
            "stop": stop or [],
        }
        seed = kwargs.get("seed", self.seed)
        if seed is not None:
            request["seed"] = int(seed)
        if kwargs.get("response_format"):
            request["response_format"] = kwargs["response_format"]
        return request

    def _llama(self) -> tuple[Any, threading.Lock]:
        if self.n_threads is None:
            return shared_llama(self.model_path, self.n_ctx)
        return shared_llama(self.model_path, self.n_ctx, self.n_threads)

    def _loop_call(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        on_text: Any,
        **kwargs: Any,
    ) -> tuple[DecodeLoop, LoopCall] | None:
        """The shared decode loop and the call for this request; None: a request only the
        serial path takes."""
        check_cancelled()
        llama, _ = self._llama()
        request = self._request(messages, stop, **kwargs)
        self._check_room(llama, messages, request["max_tokens"])
        loop = shared_loop(self.model_path, self.n_ctx, self.n_threads)
        with self._context_errors(llama, messages, request["max_tokens"]):
            call = loop_call(
                llama,
                loop.backend,
                request,
                n_ctx=self.n_ctx,
                reuse_prefix=self.reuse_prefix,
                on_text=on_text,
            )
        return None if call is None else (loop, call)

    @staticmethod
    def _ended(reply: Reply) -> Reply:
        """The reply as the caller gets it: a cancelled one raised, a loop cut after its first
        copy."""
        if reply.finish_reason == "cancelled":
            check_cancelled()
            raise CallCancelled("the call was stopped")
        if reply.finish_reason == "repetition":
            reply.text = cut_loop(reply.text)
        return reply

    def _message(self, reply: Reply) -> dict[str, Any]:
        return {
            "usage_metadata": {
                "input_tokens": reply.prompt_tokens,
                "output_tokens": reply.output_tokens,
                "total_tokens": reply.prompt_tokens + reply.output_tokens,
            },
            "response_metadata": {
                "model_name": self.model_name,
                "finish_reason": reply.finish_reason,
                "prompt_tokens_evaluated": reply.prompt_tokens_evaluated,
            },
        }

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.decode_loop:
            found = self._loop_call(messages, stop, None, **kwargs)
            if found is not None:
                decoder, call = found
                reply = self._ended(decoder.run(call))
                message = AIMessage(content=reply.text, **self._message(reply))
                return ChatResult(generations=[ChatGeneration(message=message)])
        llama, lock = self._llama()
        request = self._request(messages, stop, **kwargs)
        with lock, self._forgetting(llama), _Writing(llama) as loop:
            self._check_room(llama, messages, request["max_tokens"])
            before = _evaluated(llama)
            with self._context_errors(llama, messages, request["max_tokens"]):
                reply = llama.create_chat_completion(**request)
            evaluated = _evaluated(llama) - before
        usage = reply.get("usage") or {}
        text = reply["choices"][0]["message"].get("content") or ""
        finish = reply["choices"][0].get("finish_reason")
        if loop.looped:
            text, finish = cut_loop(text), "repetition"
        message = AIMessage(
            content=text,
            usage_metadata={
                "input_tokens": int(usage.get("prompt_tokens", 0)),
                "output_tokens": int(usage.get("completion_tokens", 0)),
                "total_tokens": int(usage.get("total_tokens", 0)),
            },
            response_metadata={
                "model_name": self.model_name,
                "finish_reason": finish,
                "prompt_tokens_evaluated": evaluated,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        if not self.decode_loop:
            yield from self._stream_serial(messages, stop, run_manager, **kwargs)
            return
        pieces: queue.SimpleQueue[str] = queue.SimpleQueue()
        found = self._loop_call(messages, stop, pieces.put, **kwargs)
        if found is None:
            yield from self._stream_serial(messages, stop, run_manager, **kwargs)
            return
        decoder, call = found
        seq = decoder.submit(call)
        try:
            while True:
                try:
                    piece = pieces.get(timeout=0.1)
                except queue.Empty:
                    if seq.done.is_set() and pieces.empty():  # its last piece came before
                        break
                    continue
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
                if run_manager is not None:
                    run_manager.on_llm_new_token(piece, chunk=chunk)
                yield chunk
        finally:
            if not seq.done.is_set():  # the caller stopped reading (or was interrupted)
                decoder.abandon(seq)
        reply = self._ended(seq.result())
        yield ChatGenerationChunk(message=AIMessageChunk(content="", **self._message(reply)))

    def _stream_serial(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        llama, lock = self._llama()
        request = self._request(messages, stop, **kwargs)
        with lock, self._forgetting(llama), _Writing(llama) as loop:
            self._check_room(llama, messages, request["max_tokens"])
            before = _evaluated(llama)
            written = 0
            finish = None
            with self._context_errors(llama, messages, request["max_tokens"]):
                for part in llama.create_chat_completion(**request, stream=True):
                    finish = part["choices"][0].get("finish_reason") or finish
                    delta = part["choices"][0].get("delta", {}).get("content") or ""
                    if not delta:
                        continue
                    written += 1
                    chunk = ChatGenerationChunk(message=AIMessageChunk(content=delta))
                    if run_manager is not None:
                        run_manager.on_llm_new_token(delta, chunk=chunk)
                    yield chunk
            evaluated = _evaluated(llama) - before
            # The context now holds the prompt and the reply (its last token not yet read).
            sent = max(int(llama.n_tokens) - written + 1, 0)
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata={
                    "input_tokens": sent,
                    "output_tokens": written,
                    "total_tokens": sent + written,
                },
                response_metadata={
                    "model_name": self.model_name,
                    "finish_reason": "repetition" if loop.looped else finish,
                    "prompt_tokens_evaluated": evaluated,
                },
            )
        )

    def _prompt_tokens(self, llama: Any, messages: list[BaseMessage]) -> int:
        """About how many tokens the request's prompt is: its texts, and the template's share."""
        texts = sum(
            len(llama.tokenize(m.text.encode("utf-8"), add_bos=False, special=False))
            for m in messages
        )
        return texts + _TEMPLATE_TOKENS * (len(messages) + 1)

    def check_room(self, messages: list[BaseMessage]) -> None:
        """Raise ConfigError when a request of these messages would leave too little room
        in the context for a reply (before anything of a run is written: the door asks)."""
        llama, _ = self._llama()
        self._check_room(llama, messages, self.max_tokens)

    def _check_room(self, llama: Any, messages: list[BaseMessage], max_tokens: int) -> None:
        """Refuse, before the model reads it, a request that leaves too little room to reply."""
        prompt = self._prompt_tokens(llama, messages)
        if prompt + min(max_tokens, MIN_REPLY_TOKENS) > self.n_ctx:
            raise ConfigError(self._too_long(prompt, max_tokens))

    def _too_long(self, prompt: int, max_tokens: int) -> str:
        room = self.n_ctx - prompt
        where = (
            f"over its context of {self.n_ctx:,} tokens"
            if room <= 0
            else f"which leaves {room:,} of its context of {self.n_ctx:,} tokens for a reply "
            f"of up to {max_tokens:,} (at least {min(max_tokens, MIN_REPLY_TOKENS)} needed)"
        )
        return (
            f"the request to the local model {self.model_name!r} is about {prompt:,} tokens, "
            f"{where}: shorten the task (or the draft and reference it carries), or use a "
            "model with a longer context"
        )

    @contextmanager
    def _context_errors(
        self, llama: Any, messages: list[BaseMessage], max_tokens: int
    ) -> Iterator[None]:
        """llama.cpp's refusal of a prompt longer than the context, as the one-line ConfigError."""
        try:
            yield
        except ValueError as error:
            if "context window" not in str(error):
                raise
            prompt = max(self._prompt_tokens(llama, messages), self.n_ctx)
            raise ConfigError(self._too_long(prompt, max_tokens)) from None

    @contextmanager
    def _forgetting(self, llama: Any) -> Iterator[None]:
        """Without prefix reuse: the call starts from an empty context and no saved states."""
        if self.reuse_prefix:
            yield
            return
        cache = llama.cache
        llama.set_cache(None)
        llama.reset()
        try:
            yield
        finally:
            llama.set_cache(cache)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        # The sync body takes the model's lock; a thread keeps the event loop free.
        return await asyncio.to_thread(self._generate, messages, stop, None, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, Any]:
        """Replies constrained by llama.cpp's JSON-schema grammar, parsed into `schema`.

        A pydantic class's lists are bounded to a few items (critiques); a JSON
        schema (a dict, a typed answer's) is used as given and its JSON value returned,
        save an empty `properties` at its root: JSON Schema reads it as no constraint,
        llama.cpp's grammar as "no keys at all".
        """
        if isinstance(schema, dict):
            if schema.get("properties") == {}:
                schema = {key: value for key, value in schema.items() if key != "properties"}
            fmt = {"type": "json_object", "schema": schema}
        elif isinstance(schema, type) and issubclass(schema, BaseModel):
            fmt = {"type": "json_object", "schema": bounded_lists(schema.model_json_schema())}
        else:
            raise ConfigError(
                "the local model's structured output takes a pydantic model class or a JSON schema"
            )
        bound = self.bind(response_format=fmt)

        def parse(raw: BaseMessage) -> Any:
            try:
                if isinstance(schema, dict):
                    parsed = json.loads(raw.text)
                else:
                    parsed = schema.model_validate_json(raw.text)
            except (ValueError, RecursionError) as error:
                if not include_raw:
                    raise
                return {"raw": raw, "parsed": None, "parsing_error": error}
            return {"raw": raw, "parsed": parsed, "parsing_error": None} if include_raw else parsed

        return bound | RunnableLambda(parse)
