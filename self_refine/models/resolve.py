"""Turn model strings into chat models, and read text and token usage from replies."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable

from self_refine.errors import ConfigError
from self_refine.models.roles import as_role, is_role_runnable
from self_refine.state import Usage

__all__ = [
    "ModelSpec",
    "check_model",
    "describe_model",
    "message_text",
    "message_usage",
    "resolve_model",
]

DEFAULT_MAX_TOKENS = 1024
"""Most tokens a reply may have when neither the settings nor a profile say: every call
is bounded."""

_BARE_NAME = re.compile(r"^[A-Za-z0-9][\w.\-/]*$")
_SERVED_NAME = re.compile(r"^[A-Za-z0-9][\w.\-/:]*$")
_NO_KEY_NEEDED = "not-needed"


@dataclass(frozen=True)
class ModelSpec:
    """How to reach a model: its string and the connection settings that go with it.

    `base_url` and `api_key` are the effective ones (arguments, else the
    environment), so that a changed environment never returns a stale model.
    """

    name: str
    base_url: str | None = None
    timeout: float | None = None
    max_retries: int | None = None
    api_key: str | None = field(default=None, repr=False)
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None


def resolve_model(
    model: str | BaseChatModel | Runnable[Any, Any],
    *,
    base_url: str | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    api_key: str | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    seed: int | None = None,
) -> BaseChatModel:
    """Return a chat model for an instance or a model string.

    `"offline"` is the deterministic stand-in; `"local"` runs the default
    GGUF model in this process (`"local:smollm2"`, `"local:PATH.gguf"`: another
    one; see `models/fetch.py`); `"gpt-4o-mini"` and
    `"openai:gpt-4o-mini"` are `ChatOpenAI`. With a base URL (`base_url`, else
    OPENAI_BASE_URL) any OpenAI-compatible server is used and the string is its
    own model id, passed as is (Ollama's `"llama3.1:8b"`); without one, other
    `"provider:model"` strings go through `langchain`'s `init_chat_model` when
    `langchain` is installed. `api_key` (else OPENAI_API_KEY) is kept as a
    secret inside the model only. `temperature` and `seed`, when given, are the
    model's (None: its own default). Any other LangChain `Runnable` (a messages-to-message
    chain, a compiled graph with `messages` such as an agent) comes back wrapped as a
    role (`models/roles.py`), which the nodes call as they call a chat model.
    """
    if isinstance(model, BaseChatModel):
        return model
    if is_role_runnable(model):
        return as_role(model)
    if not isinstance(model, str):
        raise ConfigError(_NOT_A_MODEL.format(kind=type(model).__name__))
    return _resolve(
        ModelSpec(
            model.strip(),
            base_url or os.environ.get("OPENAI_BASE_URL") or None,
            timeout,
            max_retries,
            api_key or os.environ.get("OPENAI_API_KEY") or None,
            max_tokens or DEFAULT_MAX_TOKENS,
            temperature,
            seed,
        )
    )


def check_model(
    model: str | BaseChatModel | Runnable[Any, Any] | None, *, base_url: str | None = None
) -> None:
    """Raise ConfigError for a model string of no known form; keys are checked on use.

    A key may still come with a run's context, so only the string's form is
    judged here.
    """
    if model is None or isinstance(model, BaseChatModel):
        return
    if is_role_runnable(model):
        as_role(model)  # a graph without messages, or with a saver of its own, fails here
        return
    if not isinstance(model, str):
        raise ConfigError(_NOT_A_MODEL.format(kind=type(model).__name__))
    _parse(model.strip(), base_url or os.environ.get("OPENAI_BASE_URL") or None)


_NOT_A_MODEL = (
    "model must be a model string or a LangChain chat model (or a Runnable from messages "
    "to a message, or a compiled graph with 'messages' such as an agent), got {kind}"
)

KNOWN_FORMS = (
    "'offline' (the deterministic stand-in), 'local' (the embedded GGUF model), "
    "'local:PATH.gguf', an OpenAI model name such as 'gpt-4o-mini', 'provider:model' "
    "such as 'openai:gpt-4o-mini', or a served model's own name together with a base URL"
)
_OPENAI_FAMILY = re.compile(r"^(gpt-|chatgpt-|o\d|ft:|text-|davinci|babbage|codex-)")


def _parse(name: str, base_url: str | None) -> tuple[str, str]:
    """(provider, model name) of a model string; "served" for a server's own model id."""
    if not name:
        raise ConfigError(f"the model string is empty: use {KNOWN_FORMS}")
    if name == "offline":
        return "offline", name
    provider, sep, model_name = name.partition(":")
    if provider == "local":
        return "local", name
    if base_url and provider != "openai" and _SERVED_NAME.match(name):
        return "served", name  # the server's own model id, e.g. Ollama's "llama3.1:8b"
    if not sep:
        provider, model_name = "openai", name
        if not _OPENAI_FAMILY.match(name):
            raise ConfigError(_unknown(name))
    if not model_name or not _BARE_NAME.match(model_name) or not provider.isidentifier():
        raise ConfigError(_unknown(name))
    return provider, model_name


def _unknown(name: str) -> str:
    """The message for a model string of no known form, with the closest known name."""
    close = difflib.get_close_matches(name.lower(), ["offline", "local", "gpt-4o-mini"], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown model string {name!r}{hint}: use {KNOWN_FORMS}"


@lru_cache(maxsize=64)
def _resolve(spec: ModelSpec) -> BaseChatModel:
    name = spec.name
    provider, model_name = _parse(name, spec.base_url)
    if provider == "offline":
        from self_refine.models.offline import OfflineModel

        return OfflineModel()
    if provider == "local":
        from self_refine.models.fetch import local_model_path
        from self_refine.models.local import LocalChatModel
        from self_refine.models.runtime import check_local_runtime

        path = local_model_path(name)
        check_local_runtime(path)  # a crashing build or a file that cannot load, said here
        sampling: dict[str, Any] = {}
        if spec.temperature is not None:
            sampling["temperature"] = spec.temperature
        if spec.seed is not None:
            sampling["seed"] = spec.seed
        return LocalChatModel(
            model_path=str(path),
            model_name=f"local:{path.name}",
            max_tokens=spec.max_tokens or DEFAULT_MAX_TOKENS,
            **sampling,
        )
    if provider == "served":
        return _openai(model_name, spec)
    if provider == "openai":
        return _openai(model_name, spec)
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        raise ConfigError(
            f"model {name!r} needs the 'langchain' package (pip install langchain "
            f"langchain-{provider}); or serve it behind an OpenAI-compatible endpoint "
            "and give base_url=..."
        ) from None
    options: dict[str, Any] = {}
    if spec.timeout is not None:
        options["timeout"] = spec.timeout
    if spec.max_retries is not None:
        options["max_retries"] = spec.max_retries
    if spec.api_key:
        options["api_key"] = spec.api_key
    if spec.temperature is not None:
        options["temperature"] = spec.temperature
    options["max_tokens"] = spec.max_tokens
    return init_chat_model(name, **options)


def _openai(model_name: str, spec: ModelSpec) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    base_url, api_key = spec.base_url, spec.api_key
    if api_key is None and base_url is None:
        raise ConfigError(
            f"model {model_name!r} needs an API key: set OPENAI_API_KEY or give api_key=..., "
            'or base_url=... for an OpenAI-compatible server, or use model="offline"'
        )
    options: dict[str, Any] = {"model": model_name, "api_key": api_key or _NO_KEY_NEEDED}
    options["max_tokens"] = spec.max_tokens
    if base_url:
        options["base_url"] = base_url
        # Servers of the older API (llama.cpp's, vLLM's) read max_tokens, not the
        # max_completion_tokens that ChatOpenAI sends: send both.
        options["extra_body"] = {"max_tokens": spec.max_tokens}
    if spec.timeout is not None:
        options["timeout"] = spec.timeout
    if spec.max_retries is not None:
        options["max_retries"] = spec.max_retries
    if spec.temperature is not None:
        options["temperature"] = spec.temperature
    if spec.seed is not None:
        options["seed"] = spec.seed
    from self_refine.models.loop_client import LoopLocalAsyncClient

    # One model object serves every event loop of the process (it is cached above).
    options["http_async_client"] = LoopLocalAsyncClient()
    return ChatOpenAI(**options)


def describe_model(model: Any) -> tuple[str, str]:
    """The model's name and the endpoint it calls, for error messages and traces."""
    from self_refine.models.local import LocalChatModel
    from self_refine.models.offline import OfflineModel

    if isinstance(model, OfflineModel):
        return "offline", "this process"
    if isinstance(model, LocalChatModel):
        return str(model.model_name), f"this process, llama.cpp with {model.model_path}"
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    endpoint = getattr(model, "openai_api_base", None) or getattr(model, "base_url", None)
    if not endpoint and type(model).__name__ == "ChatOpenAI":
        endpoint = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    return str(name or type(model).__name__), str(endpoint or "the provider's endpoint")


def message_text(message: BaseMessage) -> str:
    """The reply's text, whether content is a string or a list of blocks."""
    return message.text.strip()


def message_usage(message: Any) -> Usage:
    """Token usage a reply reports; zeros when the server reports none."""
    meta = getattr(message, "usage_metadata", None) if isinstance(message, AIMessage) else None
    meta = meta or {}
    input_tokens = int(meta.get("input_tokens", 0) or 0)
    output_tokens = int(meta.get("output_tokens", 0) or 0)
    total = int(meta.get("total_tokens", 0) or 0) or input_tokens + output_tokens
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": total}
