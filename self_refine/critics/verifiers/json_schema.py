"""The `json_schema` verifier: the draft is JSON that satisfies reference["schema"].

Validation uses the `jsonschema` package (the `verifiers` extra), which
supports every JSON Schema draft and picks the one the schema's `$schema` names.
"""

from __future__ import annotations

import json
import re
from typing import Any

from self_refine.critics.verifiers.base import BuiltinVerifier, reference_field
from self_refine.errors import ConfigError, install_hint
from self_refine.state import Critique

__all__ = ["JSON_SCHEMA", "json_path", "parse_json_draft"]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[^\n]*\n(.*?)```", re.S)
_MAX_ITEMS = 10


def _validator_class(schema: Any) -> Any:
    try:
        from jsonschema import validators
        from jsonschema.exceptions import SchemaError
    except ImportError:
        raise ConfigError(
            f"the json_schema verifier needs the jsonschema package: {install_hint('verifiers')}"
        ) from None
    cls = validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as error:
        raise ConfigError(
            f'reference["schema"] is not a valid JSON Schema: {error.message}'
        ) from None
    return cls


def _prepare(reference: Any) -> Any:
    schema = reference_field(reference, "schema", '{"type": "object", "required": ["name"]}')
    if not isinstance(schema, dict | bool):
        raise ConfigError(f'reference["schema"] must be a JSON object, got {type(schema).__name__}')
    return _validator_class(schema)(schema)


def parse_json_draft(draft: str) -> Any:
    """The JSON value in the draft: a ```json fenced block if there is one, else the whole text.

    Raises json.JSONDecodeError when it is not valid JSON.
    """
    fenced = _FENCE.search(draft)
    return json.loads(fenced.group(1) if fenced else draft.strip())


def json_path(parts: Any) -> str:
    """Format a jsonschema error path as $.items[2].price."""
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _judge(task: str, draft: str, validator: Any) -> Critique:
    try:
        value = parse_json_draft(draft)
    except json.JSONDecodeError as error:
        return Critique(
            feedback=[
                f"The draft is not valid JSON: {error.msg} (line {error.lineno}, "
                f"column {error.colno}). Reply with the JSON value only."
            ],
            score=0.0,
        )
    errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
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
