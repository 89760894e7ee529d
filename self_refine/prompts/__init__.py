"""Prompt sets and the messages built from them."""

from self_refine.prompts.profiles import PROFILES, PromptSet, get_profile
from self_refine.prompts.render import (
    feedback_messages,
    fence,
    format_feedback,
    generate_messages,
    refine_messages,
    unfence,
)

__all__ = [
    "PROFILES",
    "PromptSet",
    "feedback_messages",
    "fence",
    "format_feedback",
    "generate_messages",
    "get_profile",
    "refine_messages",
    "unfence",
]
