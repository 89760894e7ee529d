"""Prompt sets ("profiles"): generate, feedback and refine instructions per kind of task."""

from __future__ import annotations

from dataclasses import dataclass

from self_refine.errors import ConfigError

__all__ = ["PROFILES", "PromptSet", "get_profile"]


@dataclass(frozen=True)
class PromptSet:
    """The three instructions of Self-Refine for one kind of task."""

    name: str
    summary: str
    generate: str
    feedback: str
    refine: str


GENERAL = PromptSet(
    name="general",
    summary="Any writing or reasoning task; the critic judges correctness, completeness, clarity.",
    generate=("You write a complete, correct response to the task. Be concrete and concise."),
    feedback=(
        "You are a strict reviewer. Check the draft against the task: correctness, "
        "whether it does everything the task asks, clarity, and concision. Give each "
        "problem as one actionable feedback item that says what to change. Give a score "
        "from 0 (unusable) to 1 (needs no change), and set done to true only when the "
        "draft needs no change at all."
    ),
    refine=(
        "You improve a draft using reviewer feedback. Fix every item of the latest "
        "feedback, keep what was already good, and do not reintroduce problems that "
        "earlier feedback pointed out."
    ),
)

PROFILES: dict[str, PromptSet] = {GENERAL.name: GENERAL}


def get_profile(name: str) -> PromptSet:
    """Look up a profile by name, or raise ConfigError listing the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise ConfigError(f"unknown profile {name!r}; choose one of: {known}") from None
