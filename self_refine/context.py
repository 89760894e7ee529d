"""Per-run settings, shown and edited in LangGraph Studio as the context schema."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from self_refine.errors import ConfigError

__all__ = ["MAX_ITERATIONS_LIMIT", "RefineContext"]

MAX_ITERATIONS_LIMIT = 50
"""Upper bound on `max_iterations`, so the graph's recursion limit stays finite."""


def _describe(text: str) -> dict[str, str]:
    return {"description": text}


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
            'Who critiques each draft, by name: "llm" (the critic model), "human" (asks a '
            "person), or verifiers. Empty: the graph's critics, else the profile's defaults."
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
    select: Literal["best", "last"] | None = field(
        default=None,
        metadata=_describe(
            'Which draft is the answer: "best" (highest score, ties to the latest) or "last". '
            'Empty: "best".'
        ),
    )
    profile: str | None = field(
        default=None,
        metadata=_describe(
            "Prompt set for the kind of task (see `self-refine profiles`). Empty: general."
        ),
    )

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ConfigError naming the bad setting and what is allowed."""
        if self.max_iterations is None:
            pass
        elif not isinstance(self.max_iterations, int) or isinstance(self.max_iterations, bool):
            raise ConfigError(f"max_iterations must be an integer, got {self.max_iterations!r}")
        elif not 1 <= self.max_iterations <= MAX_ITERATIONS_LIMIT:
            raise ConfigError(
                f"max_iterations must be between 1 and {MAX_ITERATIONS_LIMIT}, "
                f"got {self.max_iterations}"
            )
        if self.score_threshold is not None and not 0 <= self.score_threshold <= 1:
            raise ConfigError(
                f"score_threshold must be between 0 and 1, got {self.score_threshold}"
            )
        if self.patience is not None and self.patience < 1:
            raise ConfigError(f"patience must be >= 1, got {self.patience}")
        if self.history_window is not None and self.history_window < 0:
            raise ConfigError(f"history_window must be >= 0, got {self.history_window}")
        if self.select is not None and self.select not in ("best", "last"):
            raise ConfigError(f'select must be "best" or "last", got {self.select!r}')

    def over(self, base: RefineContext) -> RefineContext:
        """Return `base` with every setting this context gives (not None) laid over it."""
        given = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not None
        }
        return dataclasses.replace(base, **given)

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
