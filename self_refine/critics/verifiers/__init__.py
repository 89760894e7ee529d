"""Programmatic verifiers: exact, checkable critiques of a draft."""

from self_refine.critics.verifiers.answer import answers_match, extract_answer
from self_refine.critics.verifiers.base import (
    BuiltinVerifier,
    NotApplicable,
    Verifier,
    VerifierCritic,
)
from self_refine.critics.verifiers.concepts import missing_concepts
from self_refine.critics.verifiers.program import program_verifier
from self_refine.critics.verifiers.python_tests import extract_code, python_tests_verifier
from self_refine.critics.verifiers.registry import (
    EXPLAINER_NAMES,
    VERIFIERS,
    judge_draft,
    resolve_verifier,
)

__all__ = [
    "EXPLAINER_NAMES",
    "VERIFIERS",
    "BuiltinVerifier",
    "NotApplicable",
    "Verifier",
    "VerifierCritic",
    "answers_match",
    "extract_answer",
    "extract_code",
    "judge_draft",
    "missing_concepts",
    "program_verifier",
    "python_tests_verifier",
    "resolve_verifier",
]
