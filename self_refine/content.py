"""A task given as message content: a list of text and image blocks instead of a string.

The blocks are LangChain's: `{"type": "text", "text": ...}`, `{"type": "image", "url":
...}` or `{"type": "image", "base64": ..., "mime_type": "image/png"}` (OpenAI's
`{"type": "image_url", "image_url": {"url": ...}}` is taken too). The task reaches every
model request as these blocks (`prompts/render.py` fences the text around them); the
thread stores it once, as its input (a step of candidates sends its branches the task's
inline images by reference: `by_reference`, `images_held`, `resolved`); verifiers,
hygiene and the command line read its text (`task_text`), with each image named in
brackets where text is shown (`describe_task`). An image block is checked at the door
(`task_problem`): an http(s) or data:image/ URL, or base64 data that decodes, under an
image MIME type.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from self_refine.errors import ConfigError

__all__ = [
    "MAX_IMAGE_CHARS",
    "TaskContent",
    "by_reference",
    "describe_task",
    "has_images",
    "image_source",
    "images_held",
    "resolved",
    "task_problem",
    "task_text",
]

TaskContent = str | list[dict[str, Any]]
"""A task: its text, or message content blocks (text and images)."""

MAX_IMAGE_CHARS = 20_000_000
"""Most characters of images given inline (base64 or data: URLs) one task may carry."""

_IMAGE_TYPES = ("image", "image_url")
_URL_SCHEMES = ("http://", "https://", "data:image/")
_IMAGE_MIME = re.compile(r"image/[A-Za-z0-9][A-Za-z0-9.+-]*")


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
        if not isinstance(data, str):
            return f"{where}: base64 must be a string"
        return _mime_problem(where, block.get("mime_type") or "image/png") or _base64_problem(
            where, data
        )
    source = image_source(block)
    if not source.startswith(_URL_SCHEMES):
        return needs
    if source.startswith("data:"):
        header, _, data = source.partition(",")
        mime, *parameters = header.removeprefix("data:").split(";")
        problem = _mime_problem(where, mime)
        if problem is None and "base64" in parameters:
            problem = _base64_problem(where, data)
        return problem
    return None


def _mime_problem(where: str, mime: Any) -> str | None:
    if isinstance(mime, str) and _IMAGE_MIME.fullmatch(mime):
        return None
    return (
        f"{where}: mime_type {mime!r} is not an image type: give image/png, image/jpeg, "
        "image/gif or image/webp, as the data is"
    )


def _base64_problem(where: str, data: str) -> str | None:
    try:
        base64.b64decode(data, validate=True)
    except binascii.Error as error:
        return (
            f"{where}: the image's base64 data does not decode ({error}): give the image "
            "file's bytes in standard base64, in one piece (no line breaks)"
        )
    return None


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


_REF = "image_ref"
"""The block that stands for an inline image in a candidate branch's `Send` (see below)."""
_HELD: dict[str, tuple[dict[str, Any], int]] = {}
_HELD_LOCK = threading.Lock()


def _inline_digest(block: Any) -> str | None:
    """The sha256 of an image given inline (data: URL or base64); None for a URL or text."""
    if not _is_image(block):
        return None
    source = image_source(block)
    if not source.startswith("data:"):
        return None
    return hashlib.sha256(source.encode()).hexdigest()


def by_reference(task: Any) -> Any:
    """The task with each inline image replaced by a reference to it (its sha256).

    A step of N candidates sends each branch what it reads (`Send`), and LangGraph
    stores every such packet: inline images would be stored N times per step. The
    references are resolved (`resolved`) from the images the run's door holds
    (`images_held`), so the thread stores each image once, in its task.
    """
    if not isinstance(task, list) or not any(_inline_digest(b) for b in task):
        return task
    return [{"type": _REF, "sha256": digest} if (digest := _inline_digest(b)) else b for b in task]


@contextmanager
def images_held(task: Any) -> Iterator[None]:
    """Hold the task's inline images for the block: a run's references resolve to them."""
    blocks = {d: b for b in task if (d := _inline_digest(b))} if isinstance(task, list) else {}
    with _HELD_LOCK:
        for digest, block in blocks.items():
            _HELD[digest] = (block, _HELD.get(digest, (block, 0))[1] + 1)
    try:
        yield
    finally:
        with _HELD_LOCK:
            for digest in blocks:
                block, holders = _HELD[digest]
                if holders > 1:
                    _HELD[digest] = (block, holders - 1)
                else:
                    del _HELD[digest]


def resolved(task: Any) -> Any:
    """The task with each image reference (`by_reference`) replaced by the image it names."""
    if not isinstance(task, list) or not any(
        isinstance(b, dict) and b.get("type") == _REF for b in task
    ):
        return task
    with _HELD_LOCK:
        held = {digest: block for digest, (block, _) in _HELD.items()}
    blocks = []
    for block in task:
        if isinstance(block, dict) and block.get("type") == _REF:
            if block.get("sha256") not in held:
                raise ConfigError(
                    "a candidate's task refers to an inline image this process does not hold: "
                    "run the graph through its compiled form, whose door holds the task's images"
                )
            block = held[block["sha256"]]
        blocks.append(block)
    return blocks
