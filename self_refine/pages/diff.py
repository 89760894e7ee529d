"""Word-level diffs between two drafts."""

from __future__ import annotations

import difflib
import re

__all__ = ["word_diff"]

_TOKENS = re.compile(r"\s+|[^\s]+")


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """Segments `(kind, text)` turning `before` into `after`; kind is "same", "ins" or "del".

    Whitespace is kept as its own token, so joining the "same" and "ins"
    segments gives `after` back exactly.
    """
    old, new = _TOKENS.findall(before), _TOKENS.findall(after)
    segments: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            _add(segments, "same", "".join(new[j1:j2]))
            continue
        if tag in ("delete", "replace"):
            _add(segments, "del", "".join(old[i1:i2]))
        if tag in ("insert", "replace"):
            _add(segments, "ins", "".join(new[j1:j2]))
    return segments


def _add(segments: list[tuple[str, str]], kind: str, text: str) -> None:
    if not text:
        return
    if segments and segments[-1][0] == kind:
        segments[-1] = (kind, segments[-1][1] + text)
    else:
        segments.append((kind, text))
