"""Word-level diffs between two drafts, bounded so that a page stays near-linear in draft size.

A word diff (difflib) costs up to the product of the two drafts' lengths: a 30 KB
draft took seconds, a 1 MB one minutes. So the words the drafts share at their
start and end are set aside first (a refine step usually changes a part); what is
left is compared word by word only up to `WORD_LIMIT` words a side, else sentence
by sentence (each changed run of sentences word by word when it is short), and
past `SENTENCE_LIMIT` sentences it is shown as replaced whole. The comparison says
how coarse it was, for the page to show.
"""

from __future__ import annotations

import difflib
import re
from typing import NamedTuple

__all__ = ["SENTENCE_LIMIT", "WORD_LIMIT", "Comparison", "compare_drafts", "word_diff"]

_TOKENS = re.compile(r"\s+|[^\s]+")
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s|\n")

WORD_LIMIT = 1_500
"""Most words (and spaces) a side compared word by word in one piece."""
SENTENCE_LIMIT = 5_000
"""Most sentences a side compared sentence by sentence; past it, the changed part is replaced."""

Segment = tuple[str, str]


class Comparison(NamedTuple):
    """The segments `(kind, text)` turning one draft into the next, and how they were found."""

    segments: list[Segment]
    coarse: str | None = None
    """None for a word diff throughout; else what the page should say about it."""


def word_diff(before: str, after: str) -> list[Segment]:
    """Segments `(kind, text)` turning `before` into `after`; kind is "same", "ins" or "del".

    Whitespace is kept as its own token, so joining the "same" and "ins"
    segments gives `after` back exactly. Long drafts are compared more coarsely
    (see `compare_drafts`).
    """
    return compare_drafts(before, after).segments


def compare_drafts(before: str, after: str) -> Comparison:
    """Compare two drafts as finely as their length allows (see the module's docstring)."""
    old, new = _TOKENS.findall(before), _TOKENS.findall(after)
    start = _shared_start(old, new)
    end = _shared_start(old[start:][::-1], new[start:][::-1])
    segments: list[Segment] = []
    _add(segments, "same", "".join(new[:start]))
    middle_old, middle_new = old[start : len(old) - end], new[start : len(new) - end]
    coarse = None
    if max(len(middle_old), len(middle_new)) <= WORD_LIMIT:
        _words(segments, middle_old, middle_new)
    else:
        coarse = _sentences(segments, "".join(middle_old), "".join(middle_new))
    _add(segments, "same", "".join(new[len(new) - end :]))
    return Comparison(segments, coarse)


def _shared_start(first: list[str], second: list[str]) -> int:
    count = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        count += 1
    return count


def _words(segments: list[Segment], old: list[str], new: list[str]) -> None:
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            _add(segments, "same", "".join(new[j1:j2]))
            continue
        if tag in ("delete", "replace"):
            _add(segments, "del", "".join(old[i1:i2]))
        if tag in ("insert", "replace"):
            _add(segments, "ins", "".join(new[j1:j2]))


def _split_sentences(text: str) -> list[str]:
    """The text cut after each sentence end or line end, so the pieces join back to it."""
    pieces, last = [], 0
    for found in _SENTENCE_END.finditer(text):
        pieces.append(text[last : found.end()])
        last = found.end()
    if last < len(text):
        pieces.append(text[last:])
    return pieces


def _sentences(segments: list[Segment], before: str, after: str) -> str:
    """Compare sentence by sentence; say how coarse the comparison was."""
    old, new = _split_sentences(before), _split_sentences(after)
    if max(len(old), len(new)) > SENTENCE_LIMIT:
        _add(segments, "del", before)
        _add(segments, "ins", after)
        return "these drafts are too long to compare: the changed part is shown replaced whole"
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            _add(segments, "same", "".join(new[j1:j2]))
            continue
        removed, added = "".join(old[i1:i2]), "".join(new[j1:j2])
        removed_words, added_words = _TOKENS.findall(removed), _TOKENS.findall(added)
        if max(len(removed_words), len(added_words)) <= WORD_LIMIT:
            _words(segments, removed_words, added_words)
        else:
            _add(segments, "del", removed)
            _add(segments, "ins", added)
    return "long drafts are compared sentence by sentence; long changed passages are shown whole"


def _add(segments: list[Segment], kind: str, text: str) -> None:
    if not text:
        return
    if segments and segments[-1][0] == kind:
        segments[-1] = (kind, segments[-1][1] + text)
    else:
        segments.append((kind, text))
