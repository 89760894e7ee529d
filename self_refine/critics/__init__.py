"""Critics: turn a draft into a Critique."""

from self_refine.critics.base import Critic, CritiqueRequest, CritiqueResult
from self_refine.critics.combined import CombinedCritic, merge_critiques
from self_refine.critics.human import HumanCritic
from self_refine.critics.llm import LLMCritic
from self_refine.critics.parse import parse_critique_text
from self_refine.critics.resolve import (
    CriticPlan,
    critic_names,
    resolve_critics,
    unchecked_verifiers,
)
from self_refine.critics.verifiers import (
    VERIFIERS,
    NotApplicable,
    Verifier,
    VerifierCritic,
    judge_draft,
    resolve_verifier,
)

__all__ = [
    "VERIFIERS",
    "CombinedCritic",
    "Critic",
    "CriticPlan",
    "CritiqueRequest",
    "CritiqueResult",
    "HumanCritic",
    "LLMCritic",
    "NotApplicable",
    "Verifier",
    "VerifierCritic",
    "critic_names",
    "judge_draft",
    "merge_critiques",
    "parse_critique_text",
    "resolve_critics",
    "resolve_verifier",
    "unchecked_verifiers",
]
