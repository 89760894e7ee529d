"""What a JSON schema that came with the data may do: stay inside itself, bounded.

A schema arrives with a dataset line (`reference["schema"]`) or a response format,
so it is data, not code: it must not make the program read a file, reach a host or
never finish. `safe_validator` checks a schema before any model call and returns the
`jsonschema` validator that judges drafts against it:

- size: at most `MAX_SCHEMA_DEPTH` levels of nesting and `MAX_SCHEMA_CHARS`
  characters of text (measured without recursion);
- references (`$ref`, `$dynamicRef`, `$recursiveRef`) resolve inside the schema
  only: one that names a file, a URL or anything not in the schema is refused up
  front, and the validator's registry refuses to retrieve anything (jsonschema
  fetches remote references when it is given no registry);
- no reference loop that validation would follow without going deeper into the
  value (`{"$ref": "#"}`), and at most `MAX_REFERENCE_CHAIN` references and other
  in-place subschemas one inside another;
- every `pattern` and `patternProperties` key is a valid regular expression, and is
  matched by the `regex` module with a time limit (`PATTERN_SECONDS` per draft), so
  a pattern that backtracks catastrophically (`^(a+)+$`) cannot hang a run: a match
  out of time is a finding about that value, not a wait.
"""

from __future__ import annotations

import contextvars
import functools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from self_refine.errors import ConfigError

__all__ = [
    "MAX_REFERENCE_CHAIN",
    "MAX_SCHEMA_CHARS",
    "MAX_SCHEMA_DEPTH",
    "PATTERN_SECONDS",
    "pattern_time_limit",
    "safe_validator",
    "shape_problem",
]

MAX_SCHEMA_DEPTH = 32
"""Deepest nesting of objects and lists in a schema (a reference's own bound)."""
MAX_SCHEMA_CHARS = 100_000
"""Most characters of text (keys and strings) in a schema: about 25,000 tokens, which a
typed answer sends with every request."""
MAX_REFERENCE_CHAIN = 32
"""Most references and in-place subschemas (allOf, anyOf, oneOf, not, if/then/else,
dependentSchemas) one inside another, which validation follows at one level of the value."""
PATTERN_SECONDS = 1.0
"""Time all the pattern matches of one draft's validation may take together."""

_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
_PATTERN_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "self_refine_pattern_deadline", default=None
)


def shape_problem(schema: Any) -> str | None:
    """Why a schema is too large or too deeply nested to use, or None. Walked without recursion."""
    chars = 0
    stack: list[tuple[Any, int]] = [(schema, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth >= MAX_SCHEMA_DEPTH:
                return (
                    f"is nested more than {MAX_SCHEMA_DEPTH} levels deep: flatten it (name "
                    'the deep parts under "$defs" and refer to them with "$ref")'
                )
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else list(item)
            stack.extend((child, depth + 1) for child in children)
        else:
            chars += len(item) if isinstance(item, str) else 1
        if chars > MAX_SCHEMA_CHARS:
            return (
                f"holds over {MAX_SCHEMA_CHARS:,} characters of text: a schema that large "
                "does not fit a model's request; keep what the answer must satisfy"
            )
    return None


def safe_validator(schema: Any, where: str = "the schema") -> Any:
    """A jsonschema validator for `schema`, checked first; ConfigError naming `where` if unsafe."""
    try:
        from jsonschema import validators
        from jsonschema.exceptions import SchemaError
    except ImportError:
        from self_refine.errors import install_hint

        raise ConfigError(
            f"the json_schema verifier needs the jsonschema package: {install_hint('verifiers')}"
        ) from None
    if why := shape_problem(schema):
        raise ConfigError(f"{where} {why}")
    cls = validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as error:
        raise ConfigError(f"{where} is not a valid JSON Schema: {error.message}") from None
    registry = _registry()
    spec = _specification(cls)
    _check_references(schema, spec, registry, where)
    _check_patterns(schema, spec, where)
    return _time_limited(cls)(schema, registry=registry)


def _refuse_retrieval(uri: str) -> Any:
    """A registry's retrieve function that never reads a file or fetches a URL."""
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # attrs fields mypy does not see


@functools.cache
def _registry() -> Any:
    """The references a schema may use: its own, and the JSON Schema meta-schemas bundled
    with jsonschema; anything else is refused, never retrieved."""
    from jsonschema_specifications import REGISTRY
    from referencing import Registry

    return Registry(retrieve=_refuse_retrieval).combine(REGISTRY)  # type: ignore[call-arg]


def _specification(cls: Any) -> Any:
    import referencing
    import referencing.jsonschema

    dialect = cls.ID_OF(cls.META_SCHEMA) or "urn:unknown-dialect"
    opaque = referencing.Specification.OPAQUE
    return referencing.jsonschema.specification_with(dialect, default=opaque)


def _in_place(schema: dict[str, Any]) -> Iterator[Any]:
    """The subschemas applied to the same value as `schema` (not to a part of it)."""
    for keyword in _IN_PLACE_LISTS:
        value = schema.get(keyword)
        if isinstance(value, list):
            yield from value
    for keyword in _IN_PLACE_ONE:
        if keyword in schema:
            yield schema[keyword]
    for keyword in ("dependentSchemas", "dependencies"):
        value = schema.get(keyword)
        if isinstance(value, dict):
            yield from (part for part in value.values() if isinstance(part, dict | bool))


def _check_references(schema: Any, spec: Any, registry: Any, where: str) -> None:
    """Refuse references that leave the schema or point nowhere, and in-place loops or chains.

    Each subschema is visited once, without recursion: a depth-first walk along the
    in-place steps (references and subschemas applied to the same value) counts each
    one's longest chain, and a subschema met again on its own chain is a loop that
    validation would follow forever. Subschemas that apply to a part of the value
    (properties, items, ...) start walks of their own.
    """
    from referencing.exceptions import Unresolvable

    longest: dict[int, int] = {}
    on_chain: set[int] = set()
    steps: dict[int, list[Any]] = {}
    root = registry.resolver_with_root(spec.create_resource(schema))
    below: list[tuple[Any, Any]] = [(schema, root)]
    while below:
        # (subschema, the resolver its references are looked up with, whether it is done)
        stack: list[tuple[Any, Any, bool]] = [(*below.pop(), False)]
        while stack:
            node, resolver, done = stack.pop()
            key = id(node)
            if done:
                on_chain.discard(key)
                longest[key] = 1 + max((longest[id(step)] for step in steps.pop(key)), default=0)
                if longest[key] > MAX_REFERENCE_CHAIN:
                    raise ConfigError(
                        f"{where} nests more than {MAX_REFERENCE_CHAIN} references and in-place "
                        "subschemas (allOf, anyOf, oneOf, not, if/then/else) one inside "
                        "another: flatten the chain"
                    )
                continue
            if key in longest:
                continue
            if not isinstance(node, dict):
                longest[key] = 0
                continue
            in_place = [
                (part, resolver.in_subresource(spec.create_resource(part)))
                for part in _in_place(node)
            ]
            for keyword in _REFERENCES:
                ref = node.get(keyword)
                if not isinstance(ref, str):
                    continue
                try:
                    resolved = resolver.lookup(ref)
                except Unresolvable as error:
                    raise ConfigError(_unresolvable(where, keyword, ref, error)) from None
                if id(resolved.contents) in on_chain or resolved.contents is node:
                    raise ConfigError(_loop(where, keyword, ref))
                in_place.append((resolved.contents, resolved.resolver))
            if any(id(part) in on_chain or part is node for part, _ in in_place):
                raise ConfigError(_loop(where, "allOf", "a subschema"))
            on_chain.add(key)
            steps[key] = [part for part, _ in in_place]
            stack.append((node, resolver, True))
            stack.extend((part, part_resolver, False) for part, part_resolver in in_place)
            applied = {id(part) for part, _ in in_place}
            below.extend(
                (part, resolver.in_subresource(spec.create_resource(part)))
                for part in spec.subresources_of(node)
                if id(part) not in applied
            )


def _loop(where: str, keyword: str, ref: str) -> str:
    said = f'"{keyword}": {ref!r}' if keyword in _REFERENCES else "an in-place subschema"
    return (
        f"{where} loops: {said} leads back to a schema that is applying it, without going "
        "deeper into the value, so validating would never end; refer back only below a "
        'property or an item (e.g. {"properties": {"child": {"$ref": "#"}}})'
    )


def _unresolvable(where: str, keyword: str, ref: str, error: Exception) -> str:
    from referencing.exceptions import NoSuchAnchor, PointerToNowhere

    if not isinstance(error, PointerToNowhere | NoSuchAnchor):  # no such resource in the schema
        return (
            f'{where} has "{keyword}": {ref!r}, which points outside the schema: references '
            "are resolved inside the schema only, never read from a file or fetched; put "
            'the referenced schema under "$defs" and refer to it as "#/$defs/NAME"'
        )
    return (
        f'{where} has "{keyword}": {ref!r}, which points to nothing in the schema: '
        'refer to a part of it, such as "#/$defs/NAME"'
    )


def _check_patterns(schema: Any, spec: Any, where: str) -> None:
    """Refuse a pattern that is no regular expression (before any draft meets it), and key
    patterns that unevaluatedProperties would match without a time limit."""
    import regex

    keywords: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        keywords.update(node)
        patterns = list(node.get("patternProperties") or {})
        if isinstance(node.get("pattern"), str):
            patterns.append(node["pattern"])
        for pattern in patterns:
            try:
                regex.compile(pattern)
            except regex.error as error:
                raise ConfigError(
                    f"{where} has the pattern {pattern!r}, which is not a regular "
                    f"expression ({error}): fix it"
                ) from None
        stack.extend(spec.subresources_of(node))
    if {"patternProperties", "unevaluatedProperties"} <= keywords:
        raise ConfigError(
            f"{where} uses patternProperties together with unevaluatedProperties, whose key "
            "patterns cannot be matched with a time limit: name the keys in properties, or "
            "use additionalProperties instead of unevaluatedProperties"
        )


@contextmanager
def pattern_time_limit(seconds: float = PATTERN_SECONDS) -> Iterator[None]:
    """Let the pattern matches inside the block take `seconds` in all."""
    token = _PATTERN_DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _PATTERN_DEADLINE.reset(token)


class _OutOfTime(Exception):
    """A pattern match ran out of its time."""


def _search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches somewhere in `text`, within the time left (_OutOfTime if not)."""
    import regex

    deadline = _PATTERN_DEADLINE.get()
    left = PATTERN_SECONDS if deadline is None else deadline - time.monotonic()
    try:
        return regex.search(pattern, text, timeout=max(left, 0.001)) is not None
    except TimeoutError:
        raise _OutOfTime from None


def _out_of_time(pattern: str, text: str) -> Any:
    from jsonschema.exceptions import ValidationError

    shown = text if len(text) <= 40 else text[:37] + "..."
    return ValidationError(
        f"{shown!r} could not be checked against the pattern {pattern!r} in time (a pattern "
        "that backtracks catastrophically, such as nested repeats like (a+)+, takes "
        "exponential time on some values): give a value the pattern matches at once, "
        "or fix the pattern in the schema"
    )


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "string"):
        return
    try:
        matched = _search(pattern, instance)
    except _OutOfTime:
        yield _out_of_time(pattern, instance)
        return
    if not matched:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _matching_patterns(patterns: Any, key: str) -> tuple[list[str], str | None]:
    """The patterns that match `key`, and the first that ran out of time (if one did)."""
    found = []
    for pattern in patterns:
        try:
            if _search(pattern, key):
                found.append(pattern)
        except _OutOfTime:
            return found, pattern
    return found, None


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for key, value in instance.items():
        found, slow = _matching_patterns(patterns, key)
        if slow is not None:
            yield _out_of_time(slow, key)
        for pattern in found:
            yield from validator.descend(value, patterns[pattern], path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    named = schema.get("properties") or {}
    patterns = schema.get("patternProperties") or {}
    extras = []
    for key in instance:
        if key in named:
            continue
        found, slow = _matching_patterns(patterns, key)
        if slow is not None:
            yield _out_of_time(slow, key)
        elif not found:
            extras.append(key)
    if validator.is_type(additional, "object"):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)
    elif additional is False and extras:
        listed = ", ".join(repr(key) for key in sorted(extras, key=str))
        if patterns:
            shown = ", ".join(repr(pattern) for pattern in sorted(patterns))
            verb = "matches" if len(extras) == 1 else "match"
            yield ValidationError(f"{listed} {verb} none of the key patterns {shown}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({listed} {verb} unexpected)"
            )


@functools.cache
def _time_limited(cls: Any) -> Any:
    """The validator class with every pattern matched by the `regex` module, in time."""
    from jsonschema import validators

    return validators.extend(
        cls,
        {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
        },
    )
