"""Read a critique out of plain model text when structured output is unavailable or broken."""

from __future__ import annotations

import json
import re
from typing import Any

from self_refine.state import Critique

__all__ = ["is_broken_json", "parse_critique_text"]

_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(.*\S)")
_SCORE = re.compile(r"\bscore\b\W{0,3}(\d+(?:\.\d+)?)\s*(?:/\s*(\d+(?:\.\d+)?))?", re.I)
_DONE = re.compile(
    r"\b(?:done\W{0,3}(?:true|yes)|no (?:further )?changes? (?:are )?needed)\b", re.I
)


def _json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in text (bare, or in a ``` fence), or None."""
    decoder = json.JSONDecoder()
    for start in [m.start() for m in re.finditer(r"\{", text)]:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def is_broken_json(text: str) -> bool:
    """True when text starts a JSON object but holds no complete one (a cut-off reply)."""
    body = text.strip().removeprefix("```json").removeprefix("```").lstrip()
    return body.startswith("{") and _json_object(text) is None


def parse_critique_text(text: str, *, source: str = "llm") -> Critique:
    """Best-effort critique from free text; never raises, never returns an empty verdict.

    Tries a JSON object first (tolerating missing or wrong-typed fields), then
    bullet lists with "score: 0.7" / "7/10" lines; as a last resort the whole
    text becomes one feedback item, so no reply is ever lost.
    """
    data = _json_object(text)
    if data is not None:
        feedback = data.get("feedback", [])
        if isinstance(feedback, str):
            feedback = [feedback]
        elif not isinstance(feedback, list):
            feedback = []
        done = data.get("done", False)
        return Critique(
            feedback=feedback,
            score=data.get("score"),
            done=done if isinstance(done, bool) else str(done).lower() in ("true", "yes", "1"),
            source=source,
        )
    items = [m.group(1) for line in text.splitlines() if (m := _BULLET.match(line))]
    score: float | None = None
    match = _SCORE.search(text)
    if match:
        value = float(match.group(1))
        scale = float(match.group(2)) if match.group(2) else None
        score = value / scale if scale else value
    done = bool(_DONE.search(text))
    if not items and not done and text.strip():
        items = [" ".join(text.split())]
    return Critique(feedback=items, score=score, done=done and not items, source=source)
