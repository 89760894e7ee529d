"""Render the page data into one self-contained HTML file with Jinja2."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

from self_refine.errors import ConfigError
from self_refine.redact import terminal_safe

__all__ = ["is_page", "render_page", "write_batch_page", "write_thread_page"]

_TEMPLATES = Path(__file__).with_name("templates")
_GENERATOR = b'<meta name="generator" content="langgraph-self-refine">'
"""The line of every page's head (templates/base.html.j2) that says this program wrote it."""


def is_page(path: Path) -> bool:
    """Whether the file at `path` is a page this program wrote (so it may be written again)."""
    with path.open("rb") as handle:
        return _GENERATOR in handle.read(4096)


def _id_text(value: Any) -> str:
    """An id as a page shows it: control, format and direction characters (NUL, U+202E)
    as escapes (\\x00, \\u202e), and a backslash doubled, so two ids never show alike."""

    def shown(char: str) -> str:
        if char == "\\":
            return "\\\\"
        if unicodedata.category(char) not in _HIDDEN:
            return char
        code = ord(char)
        if code < 0x100:
            return f"\\x{code:02x}"
        return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"

    return "".join(shown(char) for char in str(value))


_HIDDEN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
"""Unicode categories an id does not show raw: controls, format characters (the bidi
overrides among them), surrogates, private and unassigned code points, line breaks."""


def _pretty(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


def _shown(value: Any) -> Any:
    """What a page shows of a value: text (a task, a draft, feedback) with its control and
    invisible format characters as escapes (`terminal_safe`: U+202E as \\u202e), so no
    direction override reorders what the page shows; HTML a macro made, as it is."""
    if isinstance(value, str) and not hasattr(value, "__html__"):
        return terminal_safe(value)
    return value


def render_page(template: str, page: dict[str, Any]) -> str:
    """The HTML text of `template` (a file in templates/) filled with `page`."""
    try:
        import jinja2
    except ImportError:
        raise ConfigError("HTML pages need Jinja2: pip install jinja2") from None
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_shown,
    )
    environment.filters["pretty"] = _pretty
    environment.filters["id_text"] = _id_text
    return environment.get_template(template).render(page=page)


def _write(path: str | Path, text: str) -> Path:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as error:
        raise ConfigError(
            f"cannot write the page {str(path)!r} ({error.strerror}): give a writable file path"
        ) from None
    return target


def write_thread_page(page: dict[str, Any], path: str | Path) -> Path:
    """Write a thread page (data from `pages.thread.thread_view`) to `path`."""
    return _write(path, render_page("thread.html.j2", page))


def write_batch_page(page: dict[str, Any], path: str | Path) -> Path:
    """Write a batch page (data from `pages.batch.batch_view`) to `path`."""
    return _write(path, render_page("batch.html.j2", page))
