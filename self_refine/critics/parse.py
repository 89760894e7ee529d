"""Read a critique out of plain model text when structured output is unavailable or broken."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from self_refine.state import Critique

__all__ = [
    "CUT_JSON",
    "FIELD_NAMES",
    "NOTHING_COMPLETE",
    "NOT_ADDRESSED",
    "feedback_items",
    "is_broken_json",
    "not_addressed",
    "parse_critique_text",
    "read_critique",
    "salvage_cut_json",
    "score_problem",
]

FIELD_NAMES = ("feedback", "score", "done")
"""The fields of the critique the critic model is asked for (`critics.llm.CritiqueReply`)."""

CUT_JSON = "the critique JSON was cut off; its complete feedback items were kept"
NOTHING_COMPLETE = "the critique JSON was cut off before its first complete item; nothing kept"

_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(.*\S)")
_SCORE = re.compile(r"\bscore\b\W{0,5}(\d+(?:\.\d+)?)\s*(?:/\s*(\d+(?:\.\d+)?))?", re.I)
_FIELD_VALUE = re.compile(
    r"[\W_]*(?:score|done)[\W_]*(?:is\s+)?[\W_]*"
    r"(?:\d+(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?|true|false|yes|no)[\W_]*",
    re.I,
)
"""An item or line that states the score or done ("score: 5", "**Done**: false",
"Score 7/10") rather than a problem of the draft."""
_NOT_ADDRESSED = re.compile(
    r"\b(?:(?:does|do|did)(?:\s+not|n['\u2019]t)|fails?\s+to|failed\s+to)\s+(?:even\s+)?"
    r"(?:address|answer|attempt|follow|fulfil+|respond\s+to|complete)\s+"
    r"(?:the|this|your)\s+(?:given\s+)?(?:task|question|prompt|request|instructions?)\b"
    r"(?!['\u2019]s)"
    r"|\bignores\s+the\s+(?:task|question|prompt|instructions?)\b(?!['\u2019]s)",
    re.I,
)
"""A remark that the draft does not address the task at all (not one part of it)."""
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


_FEEDBACK_LIST = re.compile(r'"feedback"\s*:\s*\[')
_SCORE_FIELD = re.compile(r'"score"\s*:\s*(-?\d+(?:\.\d+)?)')
_DONE_FIELD = re.compile(r'"done"\s*:\s*(true|false)')
_NON_WORD = re.compile(r"[\W_]+")
_FEW_LETTERS = re.compile(rf"[\W_]*(?:[^\W_][\W_]*){{0,{max(map(len, FIELD_NAMES))}}}")
"""Text with no more letters and digits than the longest field name: only such an item
can be a field name, and most items are ruled out after a few characters."""


def salvage_cut_json(text: str) -> dict[str, Any] | None:
    """The complete parts of a critique JSON cut off mid-way: its whole feedback strings,
    and its score and done if they came before the cut. None when nothing is complete.

    A small model can repeat one item until its token limit cuts the reply off; the
    items before the cut are still what it meant to say.
    """
    if not is_broken_json(text):
        return None
    data: dict[str, Any] = {}
    listed = _FEEDBACK_LIST.search(text)
    if listed:
        decoder, items, at = json.JSONDecoder(), [], listed.end()
        while True:
            at = len(text) - len(text[at:].lstrip())
            try:
                item, at = decoder.raw_decode(text, at)
            except json.JSONDecodeError:
                break
            if not isinstance(item, str):
                break
            items.append(item)
            at = len(text) - len(text[at:].lstrip())
            if text[at : at + 1] != ",":
                break
            at += 1
        if items:
            data["feedback"] = items
    if score := _SCORE_FIELD.search(text):
        data["score"] = float(score.group(1))
    if done := _DONE_FIELD.search(text):
        data["done"] = done.group(1) == "true"
    return data if data.get("feedback") or "score" in data else None


def feedback_items(items: Iterable[Any]) -> tuple[list[str], list[str]]:
    """The feedback items to keep, each once, and the problem to record when any was dropped.

    An item that is only a field name of the critique ("score", "Done:", "feedback"; case,
    spaces and punctuation aside), or one that states the score or done ("score: 5",
    "done: false"), names no problem of the draft: a small model lists the schema's keys
    among its items. It is dropped; an item that uses the word is kept.
    """
    kept = list(dict.fromkeys(str(item) for item in items))
    names = [item for item in kept if _is_field(item)]
    if not names:
        return kept, []
    shown = ", ".join(repr(name) for name in dict.fromkeys(names))
    return (
        [item for item in kept if item not in names],
        [f"the critique's feedback listed field names as items ({shown}); dropped"],
    )


def _is_field(item: str) -> bool:
    """Whether the item is a field name of the critique, or states the score or done."""
    if _FEW_LETTERS.fullmatch(item) and _bare(item) in FIELD_NAMES:
        return True
    return len(item) < 80 and _FIELD_VALUE.fullmatch(item) is not None


NOT_ADDRESSED = "the critique says the draft does not address the task; read as not done, score 0"


def not_addressed(critique: Critique) -> tuple[Critique, list[str]]:
    """The critique read as no pass when its feedback says the draft does not address the
    task (a small model can say so and still answer done, score 1), and the problem
    recorded; unchanged otherwise. A remark on one part of the task ("does not address
    the task's last word") keeps the verdict."""
    if not any(_NOT_ADDRESSED.search(item) for item in critique.feedback):
        return critique, []
    if not critique.done and not critique.score:
        return critique, []
    return critique.model_copy(update={"done": False, "score": 0.0}), [NOT_ADDRESSED]


def _bare(item: str) -> str:
    """The item's letters and digits, lower-case."""
    return _NON_WORD.sub("", item).lower()


def score_problem(raw: Any, critique: Critique) -> list[str]:
    """Say so when a score was outside [0, 1] and had to be rescaled or clamped."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return []
    if 0 <= value <= 1 or critique.score is None:
        return []
    return [f"the critic's score {value:g} was outside [0, 1]; read as {critique.score:g}"]


def parse_critique_text(text: str, *, source: str = "llm") -> Critique:
    """Best-effort critique from free text; never raises, never returns an empty verdict.

    Tries a JSON object first (tolerating missing or wrong-typed fields; one cut off
    keeps its complete items, and none when it has none), then bullet lists with
    "score: 0.7" / "7/10" lines; as a last resort the whole text becomes one feedback
    item, so no reply is ever lost.
    """
    return read_critique(text, source=source)[0]


def read_critique(text: str, *, source: str = "llm") -> tuple[Critique, list[str]]:
    """Like parse_critique_text(), and also say what was wrong with the reply."""
    critique, problems = _read(text, source)
    critique, contradiction = not_addressed(critique)
    return critique, problems + contradiction


def _read(text: str, source: str) -> tuple[Critique, list[str]]:
    if not text.strip():
        return Critique(source=source), ["the critic returned an empty reply"]
    data = _json_object(text)
    if data is not None:
        return _from_json(data, source)
    cut = salvage_cut_json(text)
    if cut is not None:
        critique, problems = _from_json(cut, source)
        return critique, [CUT_JSON, *problems]
    if is_broken_json(text):
        return Critique(source=source), [NOTHING_COMPLETE]
    items = [m.group(1) for line in text.splitlines() if (m := _BULLET.match(line))]
    score: float | None = None
    match = _SCORE.search(text)
    if match:
        value = float(match.group(1))
        scale = float(match.group(2)) if match.group(2) else None
        score = value / scale if scale else value
    done = bool(_DONE.search(text))
    items, dropped = feedback_items(items)
    if not items and (not done or _NOT_ADDRESSED.search(text)):
        prose = [line for line in text.splitlines() if not _FIELD_VALUE.fullmatch(line)]
        items = [" ".join(" ".join(prose).split())] if "".join(prose).strip() else []
    critique = Critique(feedback=items, score=score, done=done and not items, source=source)
    problems = ["the critique was not JSON; read it as plain text", *dropped]
    return critique, problems + score_problem(score, critique)


def _from_json(data: dict[str, Any], source: str) -> tuple[Critique, list[str]]:
    problems = []
    missing = [key for key in ("feedback", "score", "done") if key not in data]
    if missing:
        problems.append(f"the critique JSON had no {', '.join(missing)}")
    feedback = data.get("feedback", [])
    if isinstance(feedback, str):
        feedback = [feedback]
    elif not isinstance(feedback, list):
        if "feedback" in data:
            problems.append(f"the critique's feedback was a {type(feedback).__name__}; ignored")
        feedback = []
    score = data.get("score")
    if score is not None and (isinstance(score, bool) or not _is_number(score)):
        problems.append(f"the critique's score {score!r} is not a number; ignored")
        score = None
    done = data.get("done", False)
    if not isinstance(done, bool):
        problems.append(f"the critique's done {done!r} is not true or false; read as text")
        done = str(done).strip().lower() in ("true", "yes", "1")
    feedback, dropped = feedback_items(feedback)
    critique = Critique(feedback=feedback, score=score, done=done, source=source)
    return critique, problems + dropped + score_problem(score, critique)


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True
