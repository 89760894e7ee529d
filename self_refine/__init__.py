"""Self-Refine (generate, critique, refine) as a checkpointed LangGraph state machine."""

from self_refine.batch import Judge
from self_refine.batch_api import BatchResult, arefine_batch, refine_batch
from self_refine.context import RefineContext
from self_refine.critics import Critic, CritiqueRequest, CritiqueResult, LLMCritic
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
)

__all__ = [
    "PROFILES",
    "Attempt",
    "BatchResult",
    "ConfigError",
    "Critic",
    "CriticDone",
    "Critique",
    "CritiqueRequest",
    "CritiqueResult",
    "LLMCritic",
    "MaxIterations",
    "Judge",
    "ModelCallError",
    "NoImprovement",
    "OfflineModel",
    "PromptSet",
    "RefineContext",
    "RefineInput",
    "RefineOutput",
    "RefineState",
    "ScoreThreshold",
    "SelfRefineError",
    "StopPolicy",
    "StopView",
    "TokenBudget",
    "Unchanged",
    "Usage",
    "arefine",
    "arefine_batch",
    "create_self_refine_graph",
    "get_profile",
    "recursion_limit",
    "refine",
    "refine_batch",
    "resolve_model",
]
