"""`RefineContext`: a run's settings, each field with its default, its description
(Studio's form) and its own check; and the names of the settings.

How a call's settings are worked out, and what they may not be together, is `call.py`.
Longer than the ~300 lines a module should hold: one dataclass
whose twenty fields each carry the description Studio shows.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from self_refine.errors import ConfigError
from self_refine.prompts.forms import REFINE_FORMS, RefineForm
from self_refine.redact import redact_url

__all__ = [
    "CANDIDATES_LIMIT",
    "CONNECTION_FIELDS",
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_STRATEGY",
    "FIELD_NAMES",
    "MAX_ITERATIONS_LIMIT",
    "RESULT_FIELDS",
    "ROLE_MODEL_FIELDS",
    "SELECTS",
    "STRATEGIES",
    "STRATEGY_SETTINGS",
    "RefineContext",
    "Select",
    "StrategyRow",
    "Strategy",
    "StrategySetting",
]

DEFAULT_MAX_ITERATIONS = 3
"""Refine steps a run may take when its settings do not say."""

MAX_ITERATIONS_LIMIT = 50
"""Upper bound on `max_iterations`, so the graph's recursion limit stays finite."""

CANDIDATES_LIMIT = 16
"""Upper bound on `candidates`: replies sampled at once per draft step."""

Strategy = Literal["refine", "sample", "search"]
STRATEGIES: tuple[Strategy, ...] = ("refine", "sample", "search")
"""How a run spends its steps: see the `strategy` setting."""
StrategySetting = Literal["auto", "refine", "sample", "search"]
STRATEGY_SETTINGS: tuple[StrategySetting, ...] = ("auto", *STRATEGIES)
"""What the `strategy` setting may say: a strategy, or "auto" (`resolve.AUTO_STRATEGY`)."""

Select = Literal["best", "last", "vote"]
SELECTS: tuple[Select, ...] = ("best", "last", "vote")
"""Which draft a run answers with: see the `select` setting."""


ROLE_MODEL_FIELDS = ("generator_model", "critic_model", "refiner_model")
"""The fields that name one role's model."""

_INTEGER_LIMIT = 2**63 - 1
"""Largest whole-number setting: what a checkpoint (SQLite, msgpack) can store."""

_TIMEOUT_LIMIT = 86_400
"""Longest `timeout`, in seconds (a day): a finite one the HTTP clients can schedule."""
_TIMEOUT_LEAST = 0.001
"""Shortest `timeout`, in seconds (a millisecond): a shorter one fails every request."""


def _describe(text: str) -> dict[str, str]:
    return {"description": text}


def _check_number(
    name: str, value: Any, low: float, high: float | None, *, integer: bool = False
) -> None:
    """Raise ConfigError unless value is None or a number (an integer if asked) in range.

    An integer with no upper bound of its own is bounded by what a checkpoint can store.
    """
    if value is None:
        return
    wrong_kind = not isinstance(value, int) if integer else not isinstance(value, int | float)
    if isinstance(value, bool) or wrong_kind or value != value:
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{name} must be {kind}, got {_shown(value)}")
    shown = (lambda bound: str(int(bound))) if integer else (lambda bound: f"{bound:g}")
    if high is None and value < low:
        raise ConfigError(f"{name} must be >= {shown(low)}, got {_shown(value)}")
    if integer and high is None:
        high = _INTEGER_LIMIT
    if value < low or (high is not None and value > high):
        raise ConfigError(
            f"{name} must be between {shown(low)} and {shown(high)}, got {_shown(value)}"
        )


def _shown(value: Any) -> str:
    """The value as an error quotes it: a huge integer by its size, not its digits."""
    if isinstance(value, int) and abs(value) > _INTEGER_LIMIT:
        return f"an integer of {value.bit_length()} bits"
    return repr(value)


def _names(setting: str, value: Any) -> tuple[str, ...]:
    """Names from a list or a "name,name" string; ConfigError for anything else."""
    if isinstance(value, str):
        return tuple(name.strip() for name in value.split(",") if name.strip())
    if isinstance(value, list | tuple) and all(isinstance(name, str) for name in value):
        return tuple(value)
    raise ConfigError(
        f'{setting} must be a list of names such as ["concepts", "llm"], '
        f'or one string "concepts,llm"; got {value!r}'
    )


@dataclass(frozen=True, kw_only=True)
class RefineContext:
    """Settings for one refinement run, each with its default.

    Build one with the fields to change (`RefineContext(max_iterations=5)`), or
    change a few of another's with `dataclasses.replace(settings, profile="math")`.
    """

    model: str | None = field(
        default=None,
        metadata=_describe(
            'Model for all three roles unless overridden: "offline" (the deterministic '
            'stand-in), "local" (the embedded model), "gpt-4o-mini", "openai:gpt-4o-mini", '
            'or another "provider:model". Empty: the model the graph was built with.'
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
    critics: tuple[str, ...] | None = field(
        default=None,
        metadata=_describe(
            'Who critiques each draft, by name: verifiers ("answer", "python_tests", '
            '"concepts", "json_schema", "program"), which run first, and "llm" (the critic '
            'model) to explain their findings; or "human" alone (asks a person); or "none" '
            "alone: no draft is critiqued, no critic model is called, and the run's tokens "
            'go to samples (self-consistency: needs strategy "sample" and select "vote"). A '
            "string is read as \"name,name\". Empty: the graph's critics, else the profile's "
            "defaults."
        ),
    )
    judge: tuple[str, ...] | None = field(
        default=None,
        metadata=_describe(
            'Verifiers that judge the first draft before any critic ("answer", '
            '"python_tests", "concepts", "json_schema"; those whose data the reference '
            "holds): a first draft they all pass is the answer as it is (stop reason "
            '"verified"), never critiqued or refined; refine only incorrect answers. A '
            'string is read as "name,name". Empty: the graph\'s judge, else none; [] '
            "for none."
        ),
    )
    max_iterations: int = field(
        default=DEFAULT_MAX_ITERATIONS,
        metadata=_describe(
            f"Most refine steps a run may take (0..{MAX_ITERATIONS_LIMIT}); always in force, "
            "whatever the critic says. 0: the first draft is critiqued and answered, never "
            "refined (with candidates, best-of-N sampling)."
        ),
    )
    strategy: StrategySetting = field(
        default="auto",
        metadata=_describe(
            'How each step is spent: "refine" (the draft is critiqued and rewritten from the '
            'critique, the loop of the paper), "sample" (fresh drafts of the task, best-of-N '
            'until the budget is spent) or "search" (each reply of a step either refines '
            "one of the drafts a verifier failed, saying what failed, or writes a fresh one, "
            "chosen by a bandit over the verifiers' graded scores; the best draft so far is "
            'the answer). With "sample" and "search" the steps go on until a draft is '
            "verified, the token budget (max_tokens_total) is spent, or max_iterations steps "
            'are taken. "auto", the first that fits: "sample" when select is "vote"; '
            '"refine" when the offline stand-in writes the drafts; "sample" when a verifier '
            'can check them; "sample" with select "vote" and critics "none" '
            "(self-consistency) when the profile's drafts end with a final answer and none "
            'of critics, select, score_threshold and patience is named; else "refine" '
            "(the critic alone judges). The run keeps the strategy it took."
        ),
    )
    candidates: int = field(
        default=1,
        metadata=_describe(
            f"Replies each draft step samples at once (1..{CANDIDATES_LIMIT}), as parallel "
            "branches: the first draft (unless the input brings one) and every refine step. "
            "Each is critiqued; the verifiers' verdict, then the critic's score, picks one, "
            "and the attempt keeps the others. 1: one reply, asked again once if rejected."
        ),
    )
    first_verified: bool = field(
        default=True,
        metadata=_describe(
            "With candidates, end a draft step at its first candidate the verifiers pass: "
            "the others' model calls stop (the local model within a token; a server's reply "
            "already asked for is not waited on past its return) and they are recorded as "
            '"stopped". False: every candidate is written and judged before the pick.'
        ),
    )
    temperature: float | None = field(
        default=None,
        metadata=_describe(
            "Sampling temperature of every call to a model given as a string (0..2), "
            "candidates included, each with a seed of its own. Empty: the model's own "
            "(the local model's 0.2; a server's default), and candidates after the first "
            "sample at 0.8 when that is colder."
        ),
    )
    seed: int | None = field(
        default=None,
        metadata=_describe(
            "Sampling seed of models given as strings (the local model, servers that take "
            "one); candidate k of a step and a resampled reply each draw with a seed of "
            "their own worked out from it. Empty: the model's own (the local model's 0; "
            "none for a server, whose candidates after the first still get one each)."
        ),
    )
    score_threshold: float | None = field(
        default=None,
        metadata=_describe(
            "Stop when the critique's score is at or above this (0..1). Empty: no threshold."
        ),
    )
    patience: int | None = field(
        default=None,
        metadata=_describe(
            "Stop when the best score has not improved for this many rounds. Empty: never."
        ),
    )
    history_window: int | None = field(
        default=None,
        metadata=_describe(
            "How many earlier (draft, feedback) pairs the refine prompt carries besides "
            "the current one. Empty: all of them."
        ),
    )
    refine_form: RefineForm | None = field(
        default=None,
        metadata=_describe(
            'How the refine request is laid out: "conversation" (the first request '
            "continued as a chat: each earlier draft a reply of the model, each critique a "
            'message asking for the next draft), "single" (one message with the task and '
            'every earlier draft and its feedback, fenced in tags) or "fresh" (the task and '
            "the latest feedback, no draft: a new draft written from scratch). Empty: the "
            'profile\'s form, else "conversation" (a search\'s refinements: "fresh").'
        ),
    )
    select: Select | None = field(
        default=None,
        metadata=_describe(
            'Which draft is the answer: "best" (highest score; ties go to the earlier, then '
            'the shorter draft), "last", or "vote" (self-consistency: the final answer most '
            "drafts state, among the drafts the verifiers passed when any did; the draft "
            "that first stated it answers, and a tie goes to the answer reached first; needs a "
            'profile whose drafts end with a final answer, such as "math"; over drafts '
            'sampled apart (strategy "sample" or "search") or one refine chain). Empty: '
            '"vote" when the profile\'s drafts end with a final answer (and are not typed as '
            'JSON), else "best".'
        ),
    )
    profile: str = field(
        default="general",
        metadata=_describe("Prompt set for the kind of task (see `self-refine profiles`)."),
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
            "retried), 0.001..86400. Empty: the client's default (600 for OpenAI)."
        ),
    )
    max_tokens: int | None = field(
        default=None,
        metadata=_describe(
            "Most tokens one model reply may have (drafts and critiques), sent with every "
            "call to a model given as a string. Empty: the profile's cap for each role "
            "(`self-refine profiles` lists them; a longer reply is cut, and the local "
            "model's reply also ends once it repeats itself)."
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
        """Raise ConfigError naming the bad setting and what is allowed.

        A setting given as None takes its default; a `critics` list or "name,name"
        string is kept as a tuple, so a context can never change after it is built.
        """
        for name, default in _DEFAULTS.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, default)
        for name in ("critics", "judge"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _names(name, getattr(self, name)))
        _check_number("max_iterations", self.max_iterations, 0, MAX_ITERATIONS_LIMIT, integer=True)
        _check_number("candidates", self.candidates, 1, CANDIDATES_LIMIT, integer=True)
        _check_number("score_threshold", self.score_threshold, 0, 1)
        _check_number("temperature", self.temperature, 0, 2)
        _check_number("seed", self.seed, 0, 2**31 - 1, integer=True)
        _check_number("patience", self.patience, 1, None, integer=True)
        _check_number("history_window", self.history_window, 0, None, integer=True)
        _check_number("max_retries", self.max_retries, 0, 100, integer=True)
        _check_number("timeout", self.timeout, float("-inf"), None)
        if self.timeout is not None and self.timeout < _TIMEOUT_LEAST:
            given = f"{self.timeout:g}" if float(self.timeout).is_integer() else repr(self.timeout)
            raise ConfigError(
                f"timeout must be at least {_TIMEOUT_LEAST:g} seconds (a millisecond; a "
                f"model request takes longer), got {given}"
            )
        if self.timeout is not None and self.timeout > _TIMEOUT_LIMIT:
            raise ConfigError(
                f"timeout must be at most {_TIMEOUT_LIMIT} seconds (a day), got {self.timeout:g}"
            )
        _check_number("max_tokens_total", self.max_tokens_total, 1, None, integer=True)
        _check_number("max_tokens", self.max_tokens, 1, 131072, integer=True)
        _check_number("max_draft_chars", self.max_draft_chars, 1, None, integer=True)
        if self.refine_form is not None and self.refine_form not in REFINE_FORMS:
            raise ConfigError(
                f'refine_form must be "conversation", "single" or "fresh", got {self.refine_form!r}'
            )
        if self.strategy not in STRATEGY_SETTINGS:
            raise ConfigError(
                f'strategy must be "auto", "refine", "sample" or "search", got {self.strategy!r}'
            )
        if not isinstance(self.first_verified, bool):
            raise ConfigError(f"first_verified must be true or false, got {self.first_verified!r}")
        if self.select is not None and self.select not in SELECTS:
            raise ConfigError(f'select must be "best", "last" or "vote", got {self.select!r}')
        for name in ("model", *ROLE_MODEL_FIELDS, "base_url", "api_key"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ConfigError(f"{name} must be a string, got {type(value).__name__}")
        if not isinstance(self.profile, str) or not self.profile:
            raise ConfigError(f"profile must be a profile's name, got {self.profile!r}")

    def kept(self) -> dict[str, Any]:
        """These settings as a run's thread keeps them for its resumes: never a secret.

        Empty fields and the API key are left out, and a password in `base_url` is
        masked. `resolve.from_kept` reads them back.
        """
        kept = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "api_key" and getattr(self, f.name) is not None
        }
        if "base_url" in kept:
            kept["base_url"] = redact_url(kept["base_url"])
        for name in ("critics", "judge"):
            if name in kept:
                kept[name] = list(kept[name])
        return kept


FIELD_NAMES = tuple(f.name for f in dataclasses.fields(RefineContext))
"""Every setting's one name."""

CONNECTION_FIELDS = ("base_url", "api_key", "max_retries", "timeout", "max_tokens")
"""The settings that say how a model is reached rather than what a run does."""

RESULT_FIELDS = tuple(name for name in FIELD_NAMES if name not in CONNECTION_FIELDS)
"""The settings that shape a run's results: a batch rerun with others gets new threads."""

_DEFAULTS = {f.name: f.default for f in dataclasses.fields(RefineContext) if f.default is not None}
"""The settings whose default is a value, not empty."""


StrategyRow = Literal["vote", "offline", "answer", "verifier", "critic"]
"""A row of `DEFAULT_STRATEGY`: which of a run's checks decided what "auto" takes."""

DEFAULT_STRATEGY: dict[StrategyRow, tuple[Strategy, str]] = {
    "vote": ("sample", 'select "vote" counts the final answers of drafts sampled apart'),
    "offline": (
        "refine",
        "the offline stand-in writes the same draft every time, so fresh drafts add nothing",
    ),
    "answer": (
        "sample",
        "the default when drafts state a final answer and no verifier checks them: "
        "self-consistency",
    ),
    "verifier": (
        "sample",
        "the default when a verifier checks the drafts: fresh drafts until one passes",
    ),
    "critic": (
        "refine",
        "the default when no verifier checks the drafts: the paper's loop of critique and rewrite",
    ),
}
"""The strategy a run whose settings say "auto" takes, by the checks it has, first row first
(`_auto_row`), and why; the runs behind each row: docs/guides/quality.md, "The default
strategy, and the runs behind it"."""
