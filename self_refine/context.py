"""Per-run settings, shown and edited in LangGraph Studio as the context schema."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from self_refine.errors import ConfigError

__all__ = ["DEFAULT_MAX_TOKENS", "MAX_ITERATIONS_LIMIT", "RefineContext"]

MAX_ITERATIONS_LIMIT = 50
"""Upper bound on `max_iterations`, so the graph's recursion limit stays finite."""

DEFAULT_MAX_TOKENS = 1024
"""Most tokens a reply may have when `max_tokens` is not set: every call is bounded."""


def _describe(text: str) -> dict[str, str]:
    return {"description": text}


def _check_number(
    name: str, value: Any, low: float, high: float | None, *, integer: bool = False
) -> None:
    """Raise ConfigError unless value is None or a number (an integer if asked) in range."""
    if value is None:
        return
    wrong_kind = not isinstance(value, int) if integer else not isinstance(value, int | float)
    if isinstance(value, bool) or wrong_kind or value != value:
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{name} must be {kind}, got {value!r}")
    number = float(value)
    if number < low or (high is not None and number > high):
        allowed = f"between {low:g} and {high:g}" if high is not None else f">= {low:g}"
        raise ConfigError(f"{name} must be {allowed}, got {value!r}")


@dataclass(kw_only=True)
class RefineContext:
    """Settings for one refinement run.

    Every field may be left empty (None): it then falls back to what the
    graph's factory was given, so a run needs no context at all.
    """

    model: str | None = field(
        default=None,
        metadata=_describe(
            'Model for all three roles unless overridden: "offline" (the deterministic '
            'stand-in), "gpt-4o-mini", "openai:gpt-4o-mini", or another "provider:model". '
            "Empty: the model the graph was built with."
        ),
    )
    generator_model: str | None = field(
        default=None, metadata=_describe("Model that writes the first draft (default: model).")
    )
    critic_model: str | None = field(
        default=None, metadata=_describe("Model that critiques each draft (default: model).")
    )
    refiner_model: str | None = field(
        default=None, metadata=_describe("Model that rewrites the draft (default: model).")
    )
    base_url: str | None = field(
        default=None,
        metadata=_describe(
            "Base URL of an OpenAI-compatible server (vLLM, Ollama, llama.cpp), "
            "e.g. http://127.0.0.1:8000/v1. Empty: OPENAI_BASE_URL or OpenAI itself."
        ),
    )
    critics: list[str] | None = field(
        default=None,
        metadata=_describe(
            'Who critiques each draft, by name: verifiers ("answer", "python_tests", '
            '"concepts", "json_schema"), which run first, and "llm" (the critic model) to '
            'explain their findings; or "human" alone (asks a person). A string is read as '
            "\"name,name\". Empty: the graph's critics, else the profile's defaults."
        ),
    )
    max_iterations: int | None = field(
        default=None,
        metadata=_describe(
            f"Most refine steps a run may take (1..{MAX_ITERATIONS_LIMIT}); always in force, "
            "whatever the critic says. Empty: the graph's default (3 unless built otherwise)."
        ),
    )
    score_threshold: float | None = field(
        default=None,
        metadata=_describe("Stop when the critique's score is at or above this (0..1)."),
    )
    patience: int | None = field(
        default=None,
        metadata=_describe("Stop when the best score has not improved for this many rounds."),
    )
    history_window: int | None = field(
        default=None,
        metadata=_describe(
            "How many earlier (draft, feedback) pairs the refine prompt carries besides "
            "the current one. Empty: all of them."
        ),
    )
    refine_form: Literal["conversation", "single"] | None = field(
        default=None,
        metadata=_describe(
            'How the refine request is laid out: "conversation" (the first request '
            "continued as a chat: each earlier draft a reply of the model, each critique a "
            'message asking for the next draft) or "single" (one message with the task and '
            "every earlier draft and its feedback, fenced in tags). Empty: the profile's "
            'form, else "conversation".'
        ),
    )
    select: Literal["best", "last"] | None = field(
        default=None,
        metadata=_describe(
            'Which draft is the answer: "best" (highest score; ties go to the earlier, then '
            'the shorter draft) or "last". '
            'Empty: "best".'
        ),
    )
    profile: str | None = field(
        default=None,
        metadata=_describe(
            "Prompt set for the kind of task (see `self-refine profiles`). Empty: general."
        ),
    )
    max_retries: int | None = field(
        default=None,
        metadata=_describe(
            "How many times a failed model call (rate limit, server error, timeout, dropped "
            "connection) is retried, with exponential backoff and jitter. Empty: the "
            "client's default (2 for OpenAI)."
        ),
    )
    timeout: float | None = field(
        default=None,
        metadata=_describe(
            "Seconds one model request may take before it counts as failed (and is "
            "retried). Empty: the client's default (600 for OpenAI)."
        ),
    )
    max_tokens: int | None = field(
        default=None,
        metadata=_describe(
            "Most tokens one model reply may have (drafts and critiques), sent with every "
            f"call to a model given as a string. Empty: {DEFAULT_MAX_TOKENS}."
        ),
    )
    max_draft_chars: int | None = field(
        default=None,
        metadata=_describe(
            "Longest draft accepted, in characters: a longer reply is rejected (the previous "
            "draft is kept). Empty: six times the task's length, at least 3,000."
        ),
    )
    max_tokens_total: int | None = field(
        default=None,
        metadata=_describe(
            "Token budget of the whole run: once the model calls have used this many "
            'tokens, the run stops with stop reason "token_budget". Empty: no budget.'
        ),
    )
    api_key: str | None = field(
        default=None,
        repr=False,
        metadata=_describe(
            "API key for the model endpoint. Used for the calls only: never checkpointed, "
            "traced or printed. Empty: OPENAI_API_KEY from the environment."
        ),
    )

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ConfigError naming the bad setting and what is allowed.

        A `critics` string ("concepts,llm", as a dict context or a server client
        may give it) is split into its names first.
        """
        _check_number("max_iterations", self.max_iterations, 1, MAX_ITERATIONS_LIMIT, integer=True)
        _check_number("score_threshold", self.score_threshold, 0, 1)
        _check_number("patience", self.patience, 1, None, integer=True)
        _check_number("history_window", self.history_window, 0, None, integer=True)
        _check_number("max_retries", self.max_retries, 0, 100, integer=True)
        _check_number("timeout", self.timeout, float("-inf"), None)
        if self.timeout is not None and self.timeout <= 0:
            raise ConfigError(f"timeout must be a positive number of seconds, got {self.timeout:g}")
        _check_number("max_tokens_total", self.max_tokens_total, 1, None, integer=True)
        _check_number("max_tokens", self.max_tokens, 1, 131072, integer=True)
        _check_number("max_draft_chars", self.max_draft_chars, 1, None, integer=True)
        if self.refine_form is not None and self.refine_form not in ("conversation", "single"):
            raise ConfigError(
                f'refine_form must be "conversation" or "single", got {self.refine_form!r}'
            )
        if self.select is not None and self.select not in ("best", "last"):
            raise ConfigError(f'select must be "best" or "last", got {self.select!r}')
        for name in ("model", "generator_model", "critic_model", "refiner_model", "profile"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ConfigError(f"{name} must be a string, got {type(value).__name__}")
        if self.api_key is not None and not isinstance(self.api_key, str):
            raise ConfigError(f"api_key must be a string, got {type(self.api_key).__name__}")
        self._check_critics()

    def _check_critics(self) -> None:
        """Raise ConfigError unless critics is empty or a list of names the graph can run."""
        if self.critics is None:
            return
        from self_refine.critics.resolve import critic_names, resolve_critics  # heavy: lazily

        if isinstance(self.critics, str):
            self.critics = critic_names(self.critics)
        names = self.critics
        if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
            raise ConfigError(
                'critics must be a list of names such as ["concepts", "llm"], '
                f'or one string "concepts,llm"; got {names!r}'
            )
        if names:
            resolve_critics(names)

    def over(self, base: RefineContext) -> RefineContext:
        """Return `base` with every setting this context gives (not None) laid over it."""
        given = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not None
        }
        return dataclasses.replace(base, **given)

    def kept(self) -> dict[str, Any]:
        """The settings this context gives, as a run's thread keeps them: never a secret.

        The API key is left out, and a password in `base_url` is masked.
        """
        from self_refine.redact import redact_url

        kept = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "api_key" and getattr(self, f.name) is not None
        }
        if "base_url" in kept:
            kept["base_url"] = redact_url(kept["base_url"])
        if "critics" in kept:
            kept["critics"] = list(kept["critics"])
        return kept

    def over_kept(self, kept: dict[str, Any]) -> RefineContext:
        """This call's context laid over the settings its run was started with (`kept`)."""
        from self_refine.redact import url_has_password

        if self.base_url is None and url_has_password(kept.get("base_url") or ""):
            raise ConfigError(
                "the run's base_url carries a password, which is never stored: "
                "give base_url again in the context of this call"
            )
        return self.over(RefineContext(**kept))

    @classmethod
    def coerce(cls, value: Any) -> RefineContext:
        """Read a context that may be ours, a dict, None, or a parent graph's own."""
        if isinstance(value, cls):
            return value
        names = {f.name for f in dataclasses.fields(cls)}
        if isinstance(value, dict):
            known = {k: v for k, v in value.items() if k in names and v is not None}
        elif value is not None and dataclasses.is_dataclass(value):
            known = {k: getattr(value, k) for k in names if getattr(value, k, None) is not None}
        else:
            known = {}
        return cls(**known)
