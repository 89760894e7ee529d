"""Text that leaves the process, made safe to show: secrets masked, control characters escaped.

API keys and passwords in URLs never reach a trace, a log, an error or a page
(`redact`, `redact_url`); text from a task or a model never acts on a terminal, nor
hides or reorders what a terminal or a page shows (`terminal_safe`); a command shown to be
pasted back pastes as itself (`shell_command`).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from typing import Any

__all__ = [
    "MASK",
    "model_secrets",
    "redact",
    "redact_url",
    "shell_command",
    "terminal_safe",
    "url_has_password",
]

MASK = "***"
_MIN_SECRET_CHARS = 6
_PIECE_CHARS = 8  # any run this long shared with a key is masked
_ECHO_TAIL_CHARS = 4  # servers echo keys as "sk-...wxyz"
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-z][a-z0-9+.\-]*://[^:/@\s]*:)(?P<password>[^@\s]+)@")
_ENV_SECRETS = ("OPENAI_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")


def redact_url(url: str) -> str:
    """The URL with any password in it masked."""
    return _URL_PASSWORD.sub(lambda m: f"{m.group('head')}{MASK}@", url)


def url_has_password(url: str) -> bool:
    """True when the URL carries a password (or its mask)."""
    return _URL_PASSWORD.search(url) is not None


def model_secrets(model: Any) -> list[str]:
    """The secret values a chat model holds (its API key), to mask wherever text leaves."""
    found = []
    for name in ("openai_api_key", "api_key", "anthropic_api_key"):
        value: Any = getattr(model, name, None)
        secret = value.get_secret_value() if hasattr(value, "get_secret_value") else None
        if isinstance(secret, str) and secret:
            found.append(secret)
    return found


def _secret_spans(text: str, secret: str) -> set[int]:
    """Positions of text inside any piece of the secret of _PIECE_CHARS or more characters."""
    size = min(_PIECE_CHARS, len(secret))
    covered: set[int] = set()
    for start in range(len(secret) - size + 1):
        piece = secret[start : start + size]
        found = text.find(piece)
        while found >= 0:
            covered.update(range(found, found + size))
            found = text.find(piece, found + 1)
    return covered


def _mask_spans(text: str, covered: set[int]) -> str:
    """Replace each run of covered positions by one MASK."""
    parts: list[str] = []
    for index, char in enumerate(text):
        if index not in covered:
            parts.append(char)
        elif index - 1 not in covered:
            parts.append(MASK)
    return "".join(parts)


def _mask_echoed_keys(text: str, secret: str) -> str:
    """Mask a server's shortened echo of the key, such as "sk-proj-****wxyz"."""
    tail = re.escape(secret[-_ECHO_TAIL_CHARS:])
    return re.sub(rf"[\w-]*(?:\*{{2,}}|\.{{3}}|\u2026)[\w-]*{tail}\b", MASK, text)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Mask the given secrets, the API keys in the environment, and passwords in URLs.

    Also masks any piece of a secret of 8 or more characters (a server echoing
    part of the key) and shortened echoes of a key that end with its last characters.
    """
    known = [s for s in secrets if s] + [os.environ.get(name, "") for name in _ENV_SECRETS]
    usable = {s for s in known if len(s) >= _MIN_SECRET_CHARS}
    covered: set[int] = set()
    for secret in usable:
        covered |= _secret_spans(text, secret)
    text = _mask_spans(text, covered) if covered else text
    for secret in usable:
        text = _mask_echoed_keys(text, secret)
    return redact_url(text)


_HIDDEN = re.compile(
    # C0 controls except tab and newline, DEL, and C1 controls (0x80-0x9f, e.g. the 8-bit CSI).
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"
    # Unicode's format characters (category Cf: the bidi overrides, embeddings and isolates
    # U+202A-U+202E and U+2066-U+2069, zero-width spaces and joiners U+200B-U+200F, the
    # soft hyphen, the BOM, tags), and the line and paragraph separators U+2028 and U+2029.
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_safe(text: str) -> str:
    """Show control and invisible format characters as visible escapes (ESC as \\x1b,
    U+202E as \\u202e), so none acts on the terminal or changes what a line shows.

    Defuses every ESC/CSI/OSC sequence (colours, cursor moves, window titles,
    hyperlinks) because its introducer is no longer a control character, and every
    direction override ("\\u202e24\\u202c" would show as 42); a Windows line end stays
    a line end.
    """
    text = text.replace("\r\n", "\n")
    return _HIDDEN.sub(_escape, text)


def shell_command(*words: str) -> str:
    """A command to show the user: each word quoted for a POSIX shell, so a thread id or a
    path with spaces, quotes or `;` pastes back as itself; control characters as escapes."""
    return terminal_safe(" ".join(shlex.quote(word) for word in words))
