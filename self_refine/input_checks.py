"""What a caller may pass in: the checks of a run's input, before anything is written.

A task (text, or text and image blocks) within its size, a draft that is text, a
reference within its depth and size, and no text that is not Unicode. The graph's
door (`graphs/checked.py`), `refine()`, the parent-graph adapter, the CLI and the batch
readers all check input here.
"""

from __future__ import annotations

import math
import re
from typing import Any

from self_refine.content import task_problem

__all__ = [
    "MAX_REFERENCE_CHARS",
    "MAX_REFERENCE_DEPTH",
    "MAX_TASK_CHARS",
    "lone_surrogate",
    "reference_problem",
    "validate_input",
]

MAX_TASK_CHARS = 100_000
"""Longest task accepted, in characters; longer ones are refused before any model call."""


MAX_REFERENCE_DEPTH = 32
"""Deepest nesting of lists and objects accepted in a reference (checkpoints refuse ~250)."""
MAX_REFERENCE_CHARS = 1_000_000
"""Most characters of text (strings and keys) accepted in a reference."""


def reference_problem(value: Any) -> str | None:
    """Why a reference cannot be used (nested too deeply, too large, a number that is NaN or
    infinite), or None when it can.

    Walked without recursion, so any depth is measured safely.
    """
    chars = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth >= MAX_REFERENCE_DEPTH:
                return (
                    f"reference is nested more than {MAX_REFERENCE_DEPTH} levels deep: "
                    "flatten it (a verifier reads a few levels at most)"
                )
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else list(item)
            stack.extend((child, depth + 1) for child in children)
        else:
            if isinstance(item, float) and not math.isfinite(item):
                return (
                    f"reference holds {item!r}, which is no finite number (NaN, or a number "
                    "too large for a float, such as 1e999): give the answer as a string "
                    '(e.g. "1e999"), or a finite number'
                )
            chars += len(item) if isinstance(item, str) else 1
        if chars > MAX_REFERENCE_CHARS:
            return (
                f"reference holds over {MAX_REFERENCE_CHARS:,} characters of text: keep what "
                "the verifiers check (an answer, tests, concepts, a schema) and leave the rest out"
            )
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(value: Any, name: str) -> str | None:
    """Why text in `value` (a string, or JSON-like data) is not Unicode, or None when it is.

    A lone surrogate (text decoded from bytes that were not UTF-8, or a JSON
    escape such as "\\ud800" without its pair) cannot be stored, sent to a
    model or printed as UTF-8: every run of such input would fail.
    """
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found is None:
            return None
        return (
            f"{name} holds {found.group()!r} at character {found.start()}, a lone surrogate "
            "that is not Unicode text (bytes that were not UTF-8, or half of a JSON "
            "\\uXXXX pair): fix the text's encoding or remove that character"
        )
    if isinstance(value, dict):
        items = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return None
    return next((why for item in items if (why := lone_surrogate(item, name))), None)


def validate_input(state: Any) -> None:
    """Raise ConfigError when the input has no usable task or a draft of the wrong type."""
    from self_refine.errors import ConfigError

    task = state.get("task") if isinstance(state, dict) else None
    if isinstance(task, list):
        if why := task_problem(task, MAX_TASK_CHARS):
            raise ConfigError(why)
    elif not isinstance(task, str):
        raise ConfigError(
            f"task must be a string, got {type(task).__name__}: pass {{'task': '...'}} "
            "(or a list of text and image blocks)"
        )
    elif not task.strip():
        raise ConfigError("task is empty: give the text of the task to refine a response for")
    elif len(task) > MAX_TASK_CHARS:
        raise ConfigError(
            f"task is {len(task):,} characters, over the limit of {MAX_TASK_CHARS:,}: "
            "shorten it or pass the long material as a draft or reference"
        )
    draft = state.get("draft")
    if draft is not None and not isinstance(draft, str):
        raise ConfigError(f"draft must be a string, got {type(draft).__name__}")
    if why := reference_problem(state.get("reference")):
        raise ConfigError(why)
    for name in ("task", "draft", "reference"):
        if why := lone_surrogate(state.get(name), name):
            raise ConfigError(why)
