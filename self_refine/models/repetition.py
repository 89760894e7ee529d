"""A reply that has started repeating itself: where its loop begins, and where to cut it.

A small model can fall into a loop ("a kite kite kite ...", one sentence again and
again) and write it until its token cap. A text ends in a loop when its tail is one
block written at least `COPIES` times in a row, `LOOP_CHARS` characters or more in all:
three copies of a sentence, or a short word many times. The local model stops writing
there (`models/local.py`), and a draft is cut after the block's first copy
(`models/hygiene.clean_reply`), for replies of any model.
"""

from __future__ import annotations

import re

__all__ = ["COPIES", "LOOP_CHARS", "LONGEST_BLOCK", "cut_loop", "loop_start"]

COPIES = 3
"""Copies of a block in a row that make a loop (two can be meant: "very, very")."""
LOOP_CHARS = 64
"""Fewest characters a loop spans, so that a short run ("...", "----") is no loop."""
LONGEST_BLOCK = 400
"""Longest block looked for: a paragraph said again and again."""
_WORDY = re.compile(r"\w")


def loop_start(text: str) -> tuple[int, int] | None:
    """(where the loop starts, the block's length) when `text` ends in a loop; else None.

    The shortest block is taken, and only one with a letter or digit in it (a rule of
    dashes is no loop); its first copy starts where the text began repeating.
    """
    size = len(text)
    if size < LOOP_CHARS:
        return None
    last, at = text[-1], size - 1
    lowest = max(size - 1 - min(LONGEST_BLOCK, size // COPIES), 0)
    while (at := text.rfind(last, lowest, at)) >= 0:
        block = size - 1 - at
        span = max(COPIES * block, LOOP_CHARS)
        if span > size:
            break
        tail = text[size - span :]
        if tail[block:] != tail[:-block] or not _WORDY.search(tail[-block:]):
            continue
        start = size - span
        while start > 0 and text[start - 1] == text[start - 1 + block]:
            start -= 1
        return start, block
    return None


def cut_loop(text: str) -> str:
    """The text up to the end of its loop's first copy (the text itself when it has none)."""
    found = loop_start(text)
    if found is None:
        return text
    start, block = found
    return text[: start + block].rstrip()
