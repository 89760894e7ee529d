"""Keep secrets out of text that leaves the process: API keys, and passwords in URLs."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["MASK", "model_secrets", "redact", "redact_url"]

MASK = "***"
_MIN_SECRET_CHARS = 6
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-z][a-z0-9+.\-]*://[^:/@\s]*:)(?P<password>[^@\s]+)@")
_ENV_SECRETS = ("OPENAI_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")


def redact_url(url: str) -> str:
    """The URL with any password in it masked."""
    return _URL_PASSWORD.sub(lambda m: f"{m.group('head')}{MASK}@", url)


def model_secrets(model: Any) -> list[str]:
    """The secret values a chat model holds (its API key), to mask wherever text leaves."""
    found = []
    for name in ("openai_api_key", "api_key", "anthropic_api_key"):
        value: Any = getattr(model, name, None)
        secret = value.get_secret_value() if hasattr(value, "get_secret_value") else None
        if isinstance(secret, str) and secret:
            found.append(secret)
    return found


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Mask the given secrets, the API keys in the environment, and passwords in URLs."""
    known = [s for s in secrets if s] + [os.environ.get(name, "") for name in _ENV_SECRETS]
    for secret in sorted({s for s in known if len(s) >= _MIN_SECRET_CHARS}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return redact_url(text)
