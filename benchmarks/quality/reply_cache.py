"""A reply cache on disk for the quality benchmarks: a request asked before costs nothing.

The key is the exact request and the model that answers it:

- the local model (`LocalChatModel`): what llama.cpp is asked (`LocalChatModel._request`:
  the messages, max_tokens, temperature, stop, seed and response format with its JSON
  schema), the GGUF file's name and sha256, the context size and llama-cpp-python's
  version; the hook is the model's llama call, as in `same_requests.py`;
- a model behind an OpenAI-compatible server (`ChatOpenAI`): the request's method, URL
  and body (the key, in a header, is never part of it nor stored), through the HTTP
  client the model sends with.

A request without a seed is a new draw each time it is asked (a server samples anew,
and a step of candidates may send the same request N times): within one scope (the
runner opens one per item and strategy, `new_scope`) the k-th asking of the same
unseeded request is its k-th draw, kept apart, so N candidates stay N samples and the
first draw is still shared with other scopes. A seeded request is one reply.

A cached reply keeps the tokens it cost when it was asked (its `usage`), so a strategy
spends the same budget whether its replies come from the model or from here; the
local model's `prompt_tokens_evaluated` is 0 on a hit (nothing was read). Each entry
is one JSON file under the cache's folder, written whole (a temporary file renamed).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from self_refine.models.local import LocalChatModel
from self_refine.models.loop_client import LoopLocalAsyncClient

__all__ = ["DEFAULT_FOLDER", "CachedLocalChatModel", "ReplyCache", "with_reply_cache"]

DEFAULT_FOLDER = Path(__file__).resolve().parents[1] / ".cache" / "replies"
"""Where replies are kept unless a run says otherwise (never committed: .gitignore)."""


class ReplyCache:
    """Replies on disk by the sha256 of their request; counts its hits and misses.

    For the misses it also adds up what asking the model took (`asked`): seconds, reply
    tokens and, for the local model, prompt tokens llama.cpp evaluated, the work a run
    on a cold cache repeats.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.hits = 0
        self.misses = 0
        self.asked = {"seconds": 0.0, "output_tokens": 0, "evaluated_tokens": 0}
        self._lock = threading.Lock()
        self._draws: dict[str, int] = {}

    @staticmethod
    def key(request: Any) -> str:
        """The entry's name: the sha256 of the request as canonical JSON."""
        text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def new_scope(self) -> None:
        """Count draws of unseeded requests afresh (a new item or strategy)."""
        with self._lock:
            self._draws.clear()

    def draw_key(self, request: Any, *, seeded: bool) -> str:
        """The entry of this asking: the request's, or for an unseeded one its k-th draw's."""
        key = self.key(request)
        if seeded:
            return key
        with self._lock:
            draw = self._draws.get(key, 0)
            self._draws[key] = draw + 1
        return key if draw == 0 else self.key({"request": request, "draw": draw})

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply (a hit), or None (a miss: the caller asks and `put`s)."""
        try:
            found = json.loads(self._path(key).read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            found = None
        with self._lock:
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
        return found

    def put(self, key: str, reply: dict[str, Any]) -> None:
        """Store a reply, whole or not at all."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(handle, "w") as out:
            json.dump(reply, out)
        os.replace(temporary, path)

    def note_asked(self, seconds: float, output_tokens: int, evaluated_tokens: int) -> None:
        """Add what one miss took the model."""
        with self._lock:
            self.asked["seconds"] += seconds
            self.asked["output_tokens"] += output_tokens
            self.asked["evaluated_tokens"] += evaluated_tokens

    def counts(self) -> dict[str, Any]:
        """Hits and misses so far, and what the misses took the model."""
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "asked": dict(self.asked)}


class CachedLocalChatModel(LocalChatModel):
    """The local model, its replies read from a `ReplyCache` when asked before."""

    reply_cache: Any = Field(default=None, exclude=True)
    file_sha256: str = Field(default="", description="The GGUF file's sha256 (the cache key).")

    def _cache_key(self, request: dict[str, Any]) -> str:
        from importlib.metadata import PackageNotFoundError, version

        try:
            runtime = version("llama-cpp-python")
        except PackageNotFoundError:
            runtime = "unknown"
        model = {
            "file": Path(self.model_path).name,
            "sha256": self.file_sha256,
            "n_ctx": self.n_ctx,
            "llama-cpp-python": runtime,
        }
        seeded = request.get("seed") is not None
        return self.reply_cache.draw_key({"model": model, "request": request}, seeded=seeded)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        cache: ReplyCache = self.reply_cache
        key = self._cache_key(self._request(messages, stop, **kwargs))
        found = cache.get(key)
        if found is None:
            start = time.perf_counter()
            asked = super()._generate(messages, stop, run_manager, **kwargs)
            message = asked.generations[0].message
            metadata = dict(message.response_metadata)
            evaluated = int(metadata.pop("prompt_tokens_evaluated", 0) or 0)
            usage = dict(getattr(message, "usage_metadata", None) or {})
            found = {"text": message.text, "usage": usage, "metadata": metadata}
            cache.put(key, found)
            seconds = time.perf_counter() - start
            cache.note_asked(seconds, int(usage.get("output_tokens", 0)), evaluated)
            return asked
        reply = AIMessage(
            content=found["text"],
            usage_metadata=found["usage"],
            response_metadata={**found["metadata"], "prompt_tokens_evaluated": 0, "cached": True},
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])


class _CachingHttpClient(LoopLocalAsyncClient):
    """The async HTTP client of a served model, answering requests asked before from disk."""

    def __init__(self, cache: ReplyCache, **options: Any) -> None:
        super().__init__(**options)
        self._cache = cache

    async def send(self, request: Any, **kwargs: Any) -> Any:
        import httpx

        body = request.read().decode("utf-8", "replace")
        try:
            seeded = json.loads(body).get("seed") is not None
        except (ValueError, AttributeError):
            seeded = False
        asked = {"method": request.method, "url": str(request.url), "body": body}
        key = self._cache.draw_key(asked, seeded=seeded)
        found = self._cache.get(key)
        if found is None:
            start = time.perf_counter()
            response = await super().send(request, **kwargs)
            content = await response.aread()
            if response.status_code != 200:
                return response
            self._cache.note_asked(time.perf_counter() - start, 0, 0)
            found = {
                "status": response.status_code,
                "headers": {
                    name: value
                    for name, value in response.headers.items()
                    if name.lower()
                    not in ("content-encoding", "content-length", "transfer-encoding")
                },
                "body": content.decode("utf-8"),
            }
            self._cache.put(key, found)
        return httpx.Response(
            found["status"], headers=found["headers"], content=found["body"], request=request
        )


def with_reply_cache(model: Any, cache: ReplyCache, sha256: str | None) -> Any:
    """The model answering from `cache` where it can; None for a model it cannot serve.

    `sha256` is the local model's file's (`document.model_meta` works it out).
    """
    if isinstance(model, LocalChatModel):
        fields = ("model_path", "model_name", "n_ctx", "max_tokens", "temperature", "seed")
        return CachedLocalChatModel(
            **{name: getattr(model, name) for name in fields},
            reuse_prefix=model.reuse_prefix,
            callbacks=model.callbacks,
            disable_streaming=True,
            reply_cache=cache,
            file_sha256=sha256 or "",
        )
    root = getattr(model, "root_async_client", None)
    if type(model).__name__ == "ChatOpenAI" and root is not None:
        client = _CachingHttpClient(cache)
        served = root.with_options(http_client=client)
        update = {"http_async_client": client, "root_async_client": served}
        return model.model_copy(update={**update, "async_client": served.chat.completions})
    return None
