"""A task given as message content: a list of text and image blocks instead of a string.

The blocks are LangChain's: `{"type": "text", "text": ...}`, `{"type": "image", "url":
...}` or `{"type": "image", "base64": ..., "mime_type": "image/png"}` (OpenAI's
`{"type": "image_url", "image_url": {"url": ...}}` is taken too). The task reaches every
model request as these blocks (`prompts/render.py` fences the text around them); the
thread stores it once, as its input; verifiers, hygiene and the command line read its
text (`task_text`), with each image named in brackets where text is shown
(`describe_task`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "MAX_IMAGE_CHARS",
    "TaskContent",
    "describe_task",
    "has_images",
    "image_source",
    "task_problem",
    "task_text",
]

TaskContent = str | list[dict[str, Any]]
"""A task: its text, or message content blocks (text and images)."""

MAX_IMAGE_CHARS = 20_000_000
"""Most characters of images given inline (base64 or data: URLs) one task may carry."""

_IMAGE_TYPES = ("image", "image_url")
_URL_SCHEMES = ("http://", "https://", "data:image/")


def _is_image(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in _IMAGE_TYPES


def image_source(block: dict[str, Any]) -> str:
    """The URL an image block shows: its url, or a data: URL of its base64 data."""
    if block.get("type") == "image_url":
        inner = block.get("image_url")
        return str(inner.get("url") if isinstance(inner, dict) else inner or "")
    if block.get("url"):
        return str(block["url"])
    data = block.get("base64") or block.get("data") or ""
    return f"data:{block.get('mime_type') or 'image/png'};base64,{data}"


def has_images(task: Any) -> bool:
    """True when the task carries an image block."""
    return isinstance(task, list) and any(_is_image(block) for block in task)


def task_text(task: Any) -> str:
    """The task's text: the string, or its text blocks joined by blank lines."""
    if isinstance(task, str):
        return task
    if not isinstance(task, list):
        return ""
    texts = [
        str(b.get("text", "")) for b in task if isinstance(b, dict) and b.get("type") == "text"
    ]
    return "\n\n".join(texts)


def describe_task(task: Any) -> str:
    """The task as text to show: each image named in brackets where it stands."""
    if not isinstance(task, list):
        return task_text(task)
    parts = []
    for block in task:
        if _is_image(block):
            source = image_source(block)
            shown = source if not source.startswith("data:") else source.split(";", 1)[0]
            parts.append(f"[image: {shown}]")
        elif isinstance(block, dict):
            parts.append(str(block.get("text", "")))
    return "\n\n".join(parts)


def _block_problem(index: int, block: Any) -> str | None:
    where = f"task block {index}"
    if not isinstance(block, dict):
        return f'{where} must be an object such as {{"type": "text", "text": "..."}}'
    kind = block.get("type")
    if kind == "text":
        return None if isinstance(block.get("text"), str) else f'{where} needs "text" (a string)'
    if kind not in _IMAGE_TYPES:
        return (
            f"{where} has type {kind!r}: a task's blocks are text and images "
            '({"type": "image", "url": "https://..."} or {"type": "image", "base64": "...", '
            '"mime_type": "image/png"})'
        )
    needs = f"{where}: an image needs an http(s) or data:image/ URL, or base64 with a mime_type"
    if kind == "image" and not block.get("url"):
        data = block.get("base64") or block.get("data")
        if not data:
            return needs
        return None if isinstance(data, str) else f"{where}: base64 must be a string"
    return None if image_source(block).startswith(_URL_SCHEMES) else needs


def task_problem(task: Sequence[Any], max_chars: int) -> str | None:
    """Why a list of blocks is no usable task (None when it is one)."""
    if not task:
        return "task is an empty list: give its text, or text and image blocks"
    for index, block in enumerate(task):
        if why := _block_problem(index, block):
            return why
    text = task_text(list(task))
    if not text.strip():
        return "task has no text: add a text block that says what to do with the images"
    if len(text) > max_chars:
        return (
            f"task is {len(text):,} characters, over the limit of {max_chars:,}: "
            "shorten it or pass the long material as a draft or reference"
        )
    inline = sum(len(image_source(b)) for b in task if _is_image(b))
    if inline > MAX_IMAGE_CHARS:
        return (
            f"task's images take {inline:,} characters, over {MAX_IMAGE_CHARS:,}: "
            "give large images by URL, or make them smaller"
        )
    return None
