"""Batch input: items read from JSONL (or given in memory), their ids, and shards.

Every line is checked as the item it would become; a line that cannot be one is
kept as an `InputProblem` naming the line, never dropped silently.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from self_refine.content import TaskContent, task_problem
from self_refine.errors import ConfigError
from self_refine.input_checks import MAX_TASK_CHARS, lone_surrogate, reference_problem
from self_refine.input_files import read_input

__all__ = [
    "BatchItem",
    "InputProblem",
    "in_shard",
    "item_id",
    "parse_shard",
    "read_items",
]


@dataclass(frozen=True)
class BatchItem:
    """One task to refine, with what is known about it."""

    id: str
    task: TaskContent
    reference: Any = None
    draft: str | None = None
    line: int | None = None
    correct: bool | None = None
    """Whether `draft` is known to be correct (a caller may say so); None: unknown."""

    def content_key(self) -> str:
        """A hash of what the item asks (task, reference, draft), to tell edits apart."""
        return _digest({"task": self.task, "reference": self.reference, "draft": self.draft})


@dataclass(frozen=True)
class InputProblem:
    """A line of the input that cannot be used, and why."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _digest(value: Any) -> str:
    return hashlib.sha256(_canonical(value).encode()).hexdigest()


def item_id(obj: dict[str, Any]) -> str:
    """The item's `id`, or a stable hash of its content (the same line gives the same id)."""
    given = obj.get("id")
    if given is not None:
        return str(given)
    return _digest(obj)[:16]


def _item(obj: Any, line: int) -> BatchItem:
    """Validate one parsed line; raise ValueError saying what is wrong."""
    if not isinstance(obj, dict):
        raise ValueError(f'expected a JSON object such as {{"task": "..."}}, got {_kind(obj)}')
    task = obj.get("task")
    if task is None:
        raise ValueError('needs a "task" with the text of the task')
    if isinstance(task, list):
        if why := task_problem(task, MAX_TASK_CHARS):
            raise ValueError(f'"task": {why}')
    elif not isinstance(task, str):
        raise ValueError(f'"task" must be a string, the text of the task; got {_kind(task)}')
    elif not task.strip():
        raise ValueError('"task" is empty: give the text of the task')
    elif len(task) > MAX_TASK_CHARS:
        raise ValueError(f'"task" is {len(task):,} characters, over {MAX_TASK_CHARS:,}')
    given_id = obj.get("id")
    if given_id is not None and (
        isinstance(given_id, bool) or not isinstance(given_id, str | int) or given_id == ""
    ):
        raise ValueError(f'"id" must be a non-empty string or an integer, got {given_id!r}')
    draft = obj.get("draft")
    if draft is not None and not isinstance(draft, str):
        raise ValueError(f'"draft" must be a string, got {_kind(draft)}')
    if why := reference_problem(obj.get("reference")):
        raise ValueError(why)
    for key, value in obj.items():
        if why := lone_surrogate(key, "a key") or lone_surrogate(value, f'"{key}"'):
            raise ValueError(why)
    return BatchItem(item_id(obj), task, obj.get("reference"), draft, line)


def _kind(value: Any) -> str:
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
    if isinstance(value, bool):
        return f"true or false ({json.dumps(value)})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    return names.get(type(value), repr(value))


def _line_text(line: bytes, number: int) -> str | None:
    """Decode one input line as UTF-8 (a BOM allowed on line 1); None when it is not UTF-8."""
    if number == 1 and line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    try:
        return line.removesuffix(b"\r").decode("utf-8")
    except UnicodeDecodeError:
        return None


def read_items(path: str | Path) -> tuple[list[BatchItem], list[InputProblem]]:
    """Read a JSONL file: the usable items in order, and the problems of the other lines.

    Lines end at "\\n" only; blank lines are ignored; a line repeating an earlier
    item's id, a line that is not UTF-8 and a line nested too deeply are problems.
    """
    try:
        raw = read_input(path)
    except OSError as error:
        raise ConfigError(
            f"cannot read {str(path)!r} ({error.strerror}): check the input path"
        ) from None
    items: list[BatchItem] = []
    problems: list[InputProblem] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(raw.split(b"\n"), 1):
        text = _line_text(line, number)
        if text is None:
            problems.append(
                InputProblem(number, "not UTF-8 text: save the file as UTF-8 and run again")
            )
            continue
        if not text.strip():
            continue
        try:
            item = _item(json.loads(text), number)
        except RecursionError:
            problems.append(InputProblem(number, "JSON nested too deeply: flatten this line"))
            continue
        except json.JSONDecodeError as error:
            problems.append(
                InputProblem(number, f"not valid JSON ({error.msg}, column {error.colno})")
            )
            continue
        except ValueError as error:
            problems.append(InputProblem(number, str(error)))
            continue
        if item.id in first_line:
            problems.append(
                InputProblem(number, f"id {item.id!r} repeats line {first_line[item.id]}")
            )
            continue
        first_line[item.id] = number
        items.append(item)
    return items, problems


def parse_shard(text: str) -> tuple[int, int]:
    """Read "I/N" (1 <= I <= N) into (I, N)."""
    index, sep, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not sep or not 1 <= i <= n:
        raise ConfigError(f"--shard must be I/N with 1 <= I <= N (e.g. 1/4), got {text!r}")
    return i, n


def in_shard(item_id: str, shard: tuple[int, int]) -> bool:
    """Whether an id belongs to shard (I, N): a hash of the id, so any machine agrees."""
    index, count = shard
    number = int.from_bytes(hashlib.sha256(item_id.encode()).digest()[:8], "big")
    return number % count == index - 1
