"""Critics: turn a draft into a Critique."""

from self_refine.critics.base import Critic, CritiqueRequest, CritiqueResult
from self_refine.critics.human import HumanCritic
from self_refine.critics.llm import LLMCritic
from self_refine.critics.parse import parse_critique_text

__all__ = [
    "Critic",
    "CritiqueRequest",
    "CritiqueResult",
    "HumanCritic",
    "LLMCritic",
    "parse_critique_text",
]
