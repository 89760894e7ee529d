"""The `json_schema` verifier: the draft is JSON that satisfies reference["schema"].

Validation uses the `jsonschema` package (the `verifiers` extra), which
supports every JSON Schema draft and picks the one the schema's `$schema` names.
The schema comes with the data, so it is checked first and kept inside itself
(`schema_safety`); a draft's JSON nested more than `MAX_JSON_DEPTH` levels deep
gets a finding of its own instead of being validated.
"""

from __future__ import annotations

import json
import re
from typing import Any

from self_refine.critics.verifiers.base import BuiltinVerifier, reference_field
from self_refine.critics.verifiers.schema_safety import pattern_time_limit, safe_validator
from self_refine.errors import ConfigError
from self_refine.state import Critique

__all__ = ["JSON_SCHEMA", "MAX_JSON_DEPTH", "json_path", "parse_json_draft", "read_json_draft"]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[^\n]*\n(.*?)```", re.S)
_MAX_ITEMS = 10
MAX_JSON_DEPTH = 32
"""Deepest nesting of lists and objects in a draft's JSON value, as in a reference: a
typed answer's value is stored with the run, and validation recurses once per level."""


def _prepare(reference: Any) -> Any:
    schema = reference_field(reference, "schema", '{"type": "object", "required": ["name"]}')
    if not isinstance(schema, dict | bool):
        raise ConfigError(f'reference["schema"] must be a JSON object, got {type(schema).__name__}')
    return safe_validator(schema, 'reference["schema"]')


def parse_json_draft(draft: str) -> Any:
    """The JSON value in the draft: a ```json fenced block if there is one, else the whole text.

    Raises json.JSONDecodeError when it is not valid JSON, ValueError when it is
    nested more than `MAX_JSON_DEPTH` levels deep.
    """
    fenced = _FENCE.search(draft)
    try:
        value = json.loads(fenced.group(1) if fenced else draft.strip())
    except RecursionError:
        raise ValueError(_too_deep()) from None
    if _deeper_than(value, MAX_JSON_DEPTH):
        raise ValueError(_too_deep())
    return value


def _too_deep() -> str:
    return (
        f"The JSON value is nested more than {MAX_JSON_DEPTH} levels deep. Reply with "
        "a flatter value."
    )


def _deeper_than(value: Any, levels: int) -> bool:
    """Whether lists and objects nest more than `levels` deep in `value` (no recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= levels:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def read_json_draft(draft: str) -> tuple[Any, Critique | None]:
    """The draft's JSON value, and None; or None and the critique of a draft that holds none."""
    try:
        return parse_json_draft(draft), None
    except json.JSONDecodeError as error:
        said = (
            f"The draft is not valid JSON: {error.msg} (line {error.lineno}, "
            f"column {error.colno}). Reply with the JSON value only."
        )
    except ValueError as error:
        said = str(error)
    return None, Critique(feedback=[said], score=0.0)


def json_path(parts: Any) -> str:
    """Format a jsonschema error path as $.items[2].price."""
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _judge(task: str, draft: str, validator: Any) -> Critique:
    value, unusable = read_json_draft(draft)
    if unusable is not None:
        return unusable
    try:
        with pattern_time_limit():
            errors = list(validator.iter_errors(value))
    except RecursionError:
        # A value within the nesting limit, under a schema whose references chain at every level.
        said = "The JSON value is nested too deeply for the schema to check. Reply flatter."
        return Critique(feedback=[said], score=0.0)
    errors.sort(key=lambda e: [str(p) for p in e.absolute_path])
    feedback = [f"At {json_path(e.absolute_path)}: {e.message}." for e in errors[:_MAX_ITEMS]]
    if len(errors) > _MAX_ITEMS:
        feedback.append(f"... and {len(errors) - _MAX_ITEMS} more schema violations.")
    return Critique(feedback=feedback, score=round(1 / (1 + len(errors)), 3), done=not errors)


JSON_SCHEMA = BuiltinVerifier(
    name="json_schema",
    summary='the draft is JSON valid against reference["schema"] (needs jsonschema)',
    prepare=_prepare,
    judge=_judge,
)
