"""Self-Refine (generate, critique, refine) as a checkpointed LangGraph state machine."""

from self_refine.batch_api import BatchResult, arefine_batch, refine_batch
from self_refine.context import RefineContext
from self_refine.critics import (
    VERIFIERS,
    CombinedCritic,
    Critic,
    CritiqueRequest,
    CritiqueResult,
    LLMCritic,
    NotApplicable,
    Verifier,
    judge_draft,
)
from self_refine.critics.sandbox import SandboxLimits
from self_refine.critics.verifiers import python_tests_verifier
from self_refine.errors import ConfigError, ModelCallError, SelfRefineError
from self_refine.graphs import create_self_refine_graph, recursion_limit
from self_refine.models import resolve_model
from self_refine.offline import OfflineModel
from self_refine.prompts import PROFILES, PromptSet, get_profile
from self_refine.run import arefine, refine
from self_refine.state import Attempt, Critique, RefineInput, RefineOutput, RefineState, Usage
from self_refine.stopping import (
    CriticDone,
    MaxIterations,
    NoImprovement,
    ScoreThreshold,
    StopPolicy,
    StopView,
    TokenBudget,
    Unchanged,
    Verified,
)

__all__ = [
    "PROFILES",
    "VERIFIERS",
    "Attempt",
    "BatchResult",
    "CombinedCritic",
    "ConfigError",
    "Critic",
    "CriticDone",
    "Critique",
    "CritiqueRequest",
    "CritiqueResult",
    "LLMCritic",
    "MaxIterations",
    "ModelCallError",
    "NoImprovement",
    "NotApplicable",
    "OfflineModel",
    "PromptSet",
    "RefineContext",
    "RefineInput",
    "RefineOutput",
    "RefineState",
    "SandboxLimits",
    "ScoreThreshold",
    "SelfRefineError",
    "StopPolicy",
    "StopView",
    "TokenBudget",
    "Unchanged",
    "Usage",
    "Verified",
    "Verifier",
    "arefine",
    "arefine_batch",
    "create_self_refine_graph",
    "get_profile",
    "judge_draft",
    "python_tests_verifier",
    "recursion_limit",
    "refine",
    "refine_batch",
    "resolve_model",
]
