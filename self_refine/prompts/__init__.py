"""Prompt sets, the refine forms, and the messages built from them.

The names below are imported on first use, so that a module that needs only the refine
forms (`prompts.forms`, which the settings read) does not load LangChain's messages.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from self_refine.prompts.profiles import PROFILES as PROFILES
    from self_refine.prompts.profiles import PromptSet as PromptSet
    from self_refine.prompts.profiles import get_profile as get_profile
    from self_refine.prompts.render import feedback_messages as feedback_messages
    from self_refine.prompts.render import fence as fence
    from self_refine.prompts.render import format_feedback as format_feedback
    from self_refine.prompts.render import generate_messages as generate_messages
    from self_refine.prompts.render import refine_messages as refine_messages
    from self_refine.prompts.render import unfence as unfence

_MODULE_OF = {
    "PROFILES": "profiles",
    "PromptSet": "profiles",
    "get_profile": "profiles",
    "feedback_messages": "render",
    "fence": "render",
    "format_feedback": "render",
    "generate_messages": "render",
    "refine_messages": "render",
    "unfence": "render",
}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'self_refine.prompts' has no attribute {name!r}")
    value = getattr(import_module(f"self_refine.prompts.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
