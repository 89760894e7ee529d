"""What no answer from a real model may contain: the prompt's fence tags, escaped tags, the task."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_TAG = re.compile(r"</?(?:task|draft|feedback|reference|attempt)\b|&lt;", re.I)


def _flat(text: str) -> str:
    return " ".join(text.lower().split())


def assert_clean_answer(task: str, answer: str) -> None:
    """Fail when the answer carries fence tags, escaped tags or the task text."""
    tag = _TAG.search(answer)
    assert tag is None, f"the answer holds the prompt's scaffolding {tag.group(0)!r}: {answer!r}"
    assert _flat(task) not in _flat(answer), f"the answer repeats the task: {answer!r}"


def assert_scores_in_range(attempts: Iterable[dict[str, Any]]) -> None:
    """Fail when a critique's score is outside 0..1."""
    for attempt in attempts:
        score = attempt["critique"].get("score")
        assert score is None or 0.0 <= score <= 1.0, f"score {score} out of range"
