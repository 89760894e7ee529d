"""The refine loop's data: critiques, the search's state, and the graph's state schemas.

A run's attempts and candidates, their types and every way to read them, are
`self_refine.drafts`'s (its types are importable from here too). What a caller may pass
in is checked in `self_refine.input_checks`. Longer than the ~300 lines a module should
hold: each state field's type sits beside the channel that stores it and the reducers
they share, and they are read together.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Annotated, Any, NotRequired, Required

from langchain_core.messages import AIMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.channels.ephemeral_value import EphemeralValue
from langgraph.types import Overwrite
from pydantic import BaseModel, Field, field_validator

# pydantic builds JSON schemas (LangGraph's input/output schemas, Studio) only from
# typing_extensions' TypedDict on Python < 3.12.
from typing_extensions import TypedDict

from self_refine.content import TaskContent
from self_refine.drafts import Attempt, Candidate, RejectedReply, Usage, add_usage

__all__ = [
    "Attempt",
    "Candidate",
    "Critique",
    "RefineInput",
    "RefineOutput",
    "RefineState",
    "RejectedReply",
    "Usage",
    "ANSWER_NAME",
    "RUN_CONTEXT",
    "STOPPED",
    "add_usage",
    "changed_only",
    "start_over",
    "starts_over",
]


class Critique(BaseModel):
    """What a critic says about one draft."""

    feedback: list[str] = Field(
        default_factory=list,
        description="Actionable items, each naming one concrete problem and how to fix it.",
    )
    score: float | None = Field(
        default=None,
        description="Quality of the draft from 0 (unusable) to 1 (needs no change); "
        "None when the critic gives no score.",
    )
    done: bool = Field(default=False, description="True when the draft needs no further change.")
    source: str = Field(
        default="llm", description='Who said it: "llm", a verifier\'s name, or "human".'
    )
    verified: bool | None = Field(
        default=None,
        description="True when programmatic verifiers checked the draft and every one passed, "
        "so no LLM critique was asked for; False when a verifier failed; None when no "
        "verifier judged it.",
    )

    @field_validator("score", mode="before")
    @classmethod
    def _clamp_score(cls, value: Any) -> float | None:
        """Clamp scores into [0, 1]; a 0..10 or 0..100 scale is rescaled."""
        if value is None or isinstance(value, bool):
            return None
        try:
            score = float(value)
        except (TypeError, ValueError):
            return None
        if math.isnan(score):
            return None
        if 1 < score <= 10:
            score /= 10
        elif 10 < score <= 100:
            score /= 100
        return min(1.0, max(0.0, score))

    @field_validator("feedback", mode="before")
    @classmethod
    def _feedback_list(cls, value: Any) -> list[str]:
        """Accept one string or a list of anything printable; drop blank items."""
        if value is None:
            return []
        items = [value] if isinstance(value, str) else list(value)
        return [str(item).strip() for item in items if str(item).strip()]


_MISSING = object()


def changed_only(
    state: Mapping[str, Any], writes: dict[str, Any], keys: Collection[str]
) -> dict[str, Any]:
    """`writes` less those of `keys` that would leave the state as it is.

    For a step's bookkeeping flags (plain channels, no reducer), which most steps write
    unchanged: a write LangGraph need not version, save and stream each step. A key the
    state has never had is written, so that it reads the same as before.
    """
    return {
        key: value
        for key, value in writes.items()
        if key not in keys or state.get(key, _MISSING) != value
    }


class PlannedReply(TypedDict):
    """One reply of the next step of a run that samples or searches, as the planner chose
    it: the node it will be, and the node it refines (None: a fresh draft of the task)."""

    node: int
    parent: int | None
    planned_because: NotRequired[str]
    """Why the search planned this reply (its Thompson draws), in a run that searches."""


class Arm(TypedDict):
    """A draft the search may refine: its node, graded score and times refined so far."""

    node: int
    h: float
    refined: int


class Outcomes(TypedDict):
    """How a run's replies of one kind (fresh drafts, or refinements) fared: how many were
    verified (`right`), how many not (`wrong`)."""

    right: int
    wrong: int


class Spent(TypedDict):
    """What a run's replies of each kind cost, in tokens (draft and critique), and how many."""

    fresh_tokens: int
    fresh: int
    refine_tokens: int
    refine: int


class SearchState(TypedDict):
    """What the search knows (`nodes/search.py`): its arms, how its fresh drafts and its
    refinements fared, what each kind of reply costs, and how many nodes the run has made."""

    arms: list[Arm]
    fresh: Outcomes
    refines: NotRequired[Outcomes]
    spent: Spent
    nodes: int


def _add_candidates(current: list[Candidate], new: list[Candidate]) -> list[Candidate]:
    return [*current, *new]


def _append_attempts(
    current: list[Attempt] | None, writes: Sequence[list[Attempt]]
) -> list[Attempt]:
    """Append each write's attempts; batching-invariant, as DeltaChannel requires."""
    merged = list(current or [])
    for write in writes:
        merged.extend(write)
    return merged


def _latest(current: Any, writes: Sequence[Any]) -> Any:
    """Keep the newest write; batching-invariant, as DeltaChannel requires."""
    return writes[-1] if writes else current


# How the state is stored. SQLite keeps every plain (LastValue) channel inside
# each checkpoint, so a 2 KB draft would be stored again at every step and an
# operator.add list rewritten whole, which grows quadratically. Delta channels
# keep only what each step wrote and replay it when a checkpoint is read:
# - attempts: append-only; a snapshot would be a full copy of the log, and
#   replaying the writes reads the same bytes, so snapshots are rare;
# - task, draft, critique: only the newest write counts, so a snapshot every
#   10 writes bounds the replay at the cost of one value in ten.
# Before its first write a delta channel reads as empty ("" or {}), not missing.
AttemptLog = Annotated[list[Attempt], DeltaChannel(_append_attempts, snapshot_frequency=1000)]
Text = Annotated[str, DeltaChannel(_latest, snapshot_frequency=10)]
CritiqueValue = Annotated[dict[str, Any], DeltaChannel(_latest, snapshot_frequency=10)]
# - run_context: written once per run, by the step after the input's, so reading it
#   walks about as far back as task does.
KeptSettings = Annotated[dict[str, Any], DeltaChannel(_latest, snapshot_frequency=10)]

# - answer_message: the answer as a message, for the messages stream; written by finalize
#   and cleared by the next step, so a thread stores it once, in its run's last checkpoint.
AnswerMessage = Annotated[AIMessage | None, EphemeralValue(Any)]

ANSWER_NAME = "answer"
"""The name of the message that carries a run's answer on the `messages` stream."""

STOPPED = "stopped"
"""The reason a candidate's reply was not taken when another of its step verified first."""

RUN_CONTEXT = "run_context"
"""The state key that keeps a run's context (never a secret) for its resumes."""

ANSWER_SCHEMA = "answer_schema"
"""The state key that keeps the JSON schema a run's answer is typed with (None: plain text)."""


class RefineInput(TypedDict, total=False):
    """What a caller passes in: a task, and optionally a draft to start from.

    The task is its text, or message content: a list of text and image blocks
    (see `self_refine.content`).
    """

    task: Required[TaskContent]
    draft: str
    reference: Any
    id: str


class RefineState(TypedDict, total=False):
    """The loop's working state, checkpointed after every step.

    `run_context` holds the settings the run began with (`RefineContext.kept`: no
    API key, no URL password), written by the `begin` node and read back by the
    door when a later call (a resume, a continuation with None) brings no context
    of its own; `answer_schema` the JSON schema of a typed answer (None: plain
    text), so that a program that builds the graph from what a thread holds (the
    command line's `resume`) can build it typed. `draft_usage`,
    `draft_problems` and `draft_rejected` describe the draft in the making until
    the critique records them in its attempt; `ask_again` is True after a reply
    was rejected, while the node that asked for it asks once more. `fan_out` is how
    many replies the next draft step samples at once (the run's `candidates`),
    written by the node before it; `branches` collects those replies, judged, until
    the `pick` node takes one and records the step (the others in its attempt's
    `candidates`). A run that samples or searches keeps what the search knows
    (`search`) and the next step's replies as the `planner` node chose them
    (`next_replies`: which draft each one refines).
    """

    # The task's text or content blocks (RefineInput says which): the channel is typed by
    # what it reads before its first write, "".
    task: Required[Text]
    run_context: KeptSettings
    answer_schema: dict[str, Any] | None
    draft: Text
    reference: Any
    id: str
    critique: CritiqueValue
    attempts: AttemptLog
    iteration: int
    stop_reason: str | None
    draft_usage: Usage
    draft_problems: list[str]
    draft_rejected: list[RejectedReply]
    ask_again: bool
    fan_out: int
    branches: Annotated[list[Candidate], _add_candidates]
    next_replies: list[PlannedReply]
    search: SearchState | None
    usage: Usage
    answer: str
    answer_message: AnswerMessage
    structured_response: Any
    structured_error: str | None
    best: Attempt | None
    last: Attempt | None
    iterations: int
    score: float | None


class RefineOutput(TypedDict):
    """What a caller gets back.

    With a response format, `structured_response` is the answer's JSON value (None
    when no draft matched the format; `structured_error` then says so and why);
    `refine()` hands back the validated instance instead (a pydantic object).
    """

    answer: str
    best: Attempt | None
    last: Attempt | None
    attempts: list[Attempt]
    iterations: int
    stop_reason: str | None
    score: float | None
    usage: Usage
    id: NotRequired[str]
    structured_response: NotRequired[Any]
    structured_error: NotRequired[str | None]


def starts_over(state: Any) -> bool:
    """True when new input arrived on a thread whose last run finished (it has a stop reason)."""
    return bool(state.get("stop_reason"))


def start_over() -> dict[str, Any]:
    """The writes that clear an earlier run's attempts, bookkeeping and outputs from a thread."""
    nothing = add_usage()
    return {
        "attempts": Overwrite([]),
        "critique": {},
        "iteration": 0,
        "stop_reason": None,
        "usage": nothing,
        "draft_usage": nothing,
        "draft_problems": [],
        "draft_rejected": [],
        "ask_again": False,
        "answer": "",
        "best": None,
        "last": None,
        "iterations": 0,
        "score": None,
        "next_replies": [],
        "search": None,
    }
