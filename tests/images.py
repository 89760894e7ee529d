"""A small real PNG and tasks that carry it, for the tests of tasks with images."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

__all__ = ["IMAGE_TASK_TEXT", "image_task", "png_base64"]

IMAGE_TASK_TEXT = "Describe the picture in one sentence using the words: red, dot."


def png_base64() -> str:
    """A 1x1 red PNG, base64-encoded."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    png = (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode()


def image_task(image: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The task as content blocks: its text, then the image (base64 unless another is given)."""
    block = image or {"type": "image", "base64": png_base64(), "mime_type": "image/png"}
    return [{"type": "text", "text": IMAGE_TASK_TEXT}, block]
