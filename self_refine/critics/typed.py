"""Typed answers: a `response_format` that every draft is checked against before any critic.

`response_format` (on the factory, `refine()`, `refine_batch()`, `--response-format`)
is a pydantic model class, a TypedDict or a JSON schema, as in LangGraph's
`create_react_agent`. `ResponseFormat` holds it as a JSON schema (what models are
asked for, what the thread keeps) and checks a draft against it: the draft's JSON is
validated (pydantic for a class or a TypedDict, `jsonschema` for a JSON schema, as the
`json_schema` verifier does), and each error becomes one exact feedback item
("At $.age: Input should be a valid integer."). `TypedAnswerCritic` puts that check in
front of the run's critics: a draft that does not validate gets those items as its
critique, without a model call, and only a valid draft is judged by the others.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from typing_extensions import is_typeddict

from self_refine.critics.base import Critic, CritiqueRequest, CritiqueResult
from self_refine.critics.combined import CombinedCritic
from self_refine.critics.verifiers.base import VerifierCritic
from self_refine.critics.verifiers.json_schema import (
    JSON_SCHEMA,
    json_path,
    parse_json_draft,
    read_json_draft,
)
from self_refine.critics.verifiers.schema_safety import safe_validator
from self_refine.errors import ConfigError
from self_refine.prompts import PromptSet
from self_refine.state import Critique, add_usage

__all__ = ["RESPONSE_FORMAT", "ResponseFormat", "TypedAnswerCritic"]

RESPONSE_FORMAT = "response_format"
"""The source of the critique a draft gets when it does not match the response format."""

_MAX_ITEMS = 10
_REPLY_JSON = "Reply with JSON only: one value that matches this JSON schema:"
_REVISE_JSON = "Reply with the new JSON value only, matching the JSON schema given with the task."


class ResponseFormat:
    """A typed answer's schema, and how a draft is checked against it and read as a value."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self._adapter: TypeAdapter[Any] | None = None
        self._validator: Any = None
        if isinstance(spec, type) and issubclass(spec, BaseModel):
            schema = spec.model_json_schema()
        elif is_typeddict(spec):
            self._adapter = TypeAdapter(spec)
            schema = self._adapter.json_schema()
        elif isinstance(spec, dict):
            schema = dict(spec)
            self._validator = safe_validator(schema, "the response format")  # a bad one fails here
        else:
            raise ConfigError(
                "response_format must be a pydantic model class, a TypedDict or a JSON schema "
                f"(a dict), got {type(spec).__name__}"
            )
        self.shown: dict[str, Any] = {"title": "Answer", **schema}
        """The JSON schema as a request in plain text shows it (it always has a title)."""
        self.schema: dict[str, Any] = {"properties": {}, **self.shown}
        """The JSON schema models are asked to follow as structured output: with a title and
        `properties` (empty when the schema has none, which changes nothing it allows),
        without which LangChain's chat models do not take a dict as a JSON schema."""

    def check(self, draft: str) -> Critique | None:
        """The draft's critique when it does not match the format; None when it does."""
        if self._validator is not None:
            found = JSON_SCHEMA.judge("", draft, self._validator)
            if found.done:
                return None
            return found.model_copy(update={"source": RESPONSE_FORMAT, "verified": False})
        value, unusable = read_json_draft(draft)
        if unusable is not None:
            return unusable.model_copy(update={"source": RESPONSE_FORMAT, "verified": False})
        try:
            self._validate(value)
        except ValidationError as error:
            items = [f"At {json_path(e['loc'])}: {e['msg']}." for e in error.errors()]
            feedback = items[:_MAX_ITEMS]
            if len(items) > _MAX_ITEMS:
                feedback.append(f"... and {len(items) - _MAX_ITEMS} more errors.")
            score = round(1 / (1 + len(items)), 3)
            return Critique(feedback=feedback, score=score, source=RESPONSE_FORMAT, verified=False)
        return None

    def _validate(self, value: Any) -> Any:
        if self._adapter is not None:
            return self._adapter.validate_python(value)
        if isinstance(self.spec, type) and issubclass(self.spec, BaseModel):
            return self.spec.model_validate(value)
        return value

    def value(self, draft: str) -> Any:
        """The draft's JSON value, validated and normalized (None when it does not match)."""
        if self.check(draft) is not None:
            return None
        valid = self._validate(parse_json_draft(draft))
        if isinstance(valid, BaseModel):
            return valid.model_dump(mode="json")
        if self._adapter is not None:
            return self._adapter.dump_python(valid, mode="json")
        return valid

    def instance(self, value: Any) -> Any:
        """A validated JSON value as Python has it: the pydantic object, else the value."""
        if value is None:
            return None
        return self._validate(value)

    def prompts(self, prompts: PromptSet) -> PromptSet:
        """The prompt set asking for JSON of this schema (for models asked in plain text)."""
        schema = json.dumps(self.shown, ensure_ascii=False)
        revise = f"{prompts.revise} {_REVISE_JSON}".strip()
        return dataclasses.replace(
            prompts, request=f"{prompts.request}\n\n{_REPLY_JSON}\n{schema}", revise=revise
        )


class TypedAnswerCritic(CombinedCritic):
    """The run's critics behind the response format's check: invalid drafts go no further."""

    def __init__(
        self,
        verifiers: list[VerifierCritic] | tuple[VerifierCritic, ...],
        explainer: Critic | None,
        answer_format: ResponseFormat,
        *,
        words_settle: bool = False,
    ) -> None:
        super().__init__(verifiers, explainer, words_settle=words_settle)
        self.answer_format = answer_format

    def critique(self, request: CritiqueRequest) -> CritiqueResult:
        """The format's findings for an invalid draft; else the run's critics' verdict."""
        found = self.answer_format.check(request.draft)
        if found is not None:
            return CritiqueResult(found, add_usage())
        return super().critique(request)

    async def acritique(self, request: CritiqueRequest) -> CritiqueResult:
        """Async twin of critique()."""
        found = self.answer_format.check(request.draft)
        if found is not None:
            return CritiqueResult(found, add_usage())
        return await super().acritique(request)
