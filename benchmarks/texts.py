"""Deterministic stand-in texts: drafts and critiques of a set size, unique per call.

By default they are excerpts of English prose taken from the documentation
that ships with Python (`pydoc_data`), so they compress as model output would
(PostgreSQL compresses large values; SQLite does not). `english=False` gives
made-up words instead, which PostgreSQL cannot compress: the worst case.
"""

from __future__ import annotations

import json
import random
import re
from functools import cache

__all__ = ["critique_json", "draft_text", "dspy_fields", "dspy_reply"]

_SYLLABLES = [c + v for c in "bcdfghklmnprstvw" for v in "aeiou"]


@cache
def _corpus() -> str:
    """Python's own documentation as one line of prose, or "" where it is not installed."""
    try:
        from pydoc_data.topics import topics
    except ImportError:
        return ""
    return " ".join(" ".join(str(text).split()) for text in topics.values())


def _made_up(rng: random.Random, size: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < size:
        words.append("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3))))
    return " ".join(words)


def _prose(seed: str, size: int, english: bool) -> str:
    """`size` characters of prose, starting with a capital and ending with a full stop."""
    rng = random.Random(seed)
    corpus = _corpus() if english else ""
    if len(corpus) > 10 * size:
        start = rng.randrange(len(corpus) - 2 * size)
        start = corpus.index(" ", start) + 1
        text = corpus[start : start + size]
    else:
        text = _made_up(rng, size)
    return (text[:1].upper() + text[1 : size - 1]).ljust(size - 1) + "."


def draft_text(n: int, size: int = 2048, *, english: bool = True) -> str:
    """The n-th draft: `size` characters of prose."""
    return _prose(f"draft-{n}", size, english)


def critique_json(n: int, size: int = 2048, *, english: bool = True, items: int = 8) -> str:
    """The n-th critique as the critic's JSON, about `size` characters, never done."""
    length = size // items - 12
    feedback = [_prose(f"feedback-{n}-{i}", length, english) for i in range(items)]
    return json.dumps({"feedback": feedback, "score": 0.3 + (n % 5) / 10, "done": False})


_DSPY_OUTPUTS = re.compile(r"Your output fields are:\n(.*?)\nAll interactions", re.S)
_DSPY_FIELD = re.compile(r"^\d+\. `(\w+)`", re.M)


def dspy_fields(system: str) -> list[str] | None:
    """The output fields a DSPy chat-adapter prompt asks for; None for another prompt."""
    found = _DSPY_OUTPUTS.search(system)
    return _DSPY_FIELD.findall(found.group(1)) if found else None


def dspy_reply(fields: list[str], n: int) -> str:
    """A reply in DSPy's chat format filling `fields` with the n-th draft or critique text."""
    feedback = " ".join(json.loads(critique_json(n))["feedback"])
    values = {"draft": draft_text(n), "advice": json.dumps({"self": feedback})}
    text = "".join(f"[[ ## {name} ## ]]\n{values.get(name, feedback)}\n\n" for name in fields)
    return text + "[[ ## completed ## ]]"
