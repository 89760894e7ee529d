"""Self-Refine (generate, critique, refine) as a checkpointed LangGraph state machine."""

from self_refine.context import RefineContext
from self_refine.critics import (
    VERIFIERS,
    CombinedCritic,
    Critic,
    CritiqueRequest,
    CritiqueResult,
    HumanCritic,
    LLMCritic,
    NotApplicable,
    Verifier,
    judge_draft,
)
from self_refine.critics.sandbox import SandboxLimits
from self_refine.critics.verifiers import python_tests_verifier
from self_refine.errors import ConfigError, ModelCallError, SelfRefineError
from self_refine.graphs import (
    GRAPH_NAME,
    create_refined_chat_graph,
    create_self_refine_graph,
    recursion_limit,
    refine_node,
    reply_from_output,
    task_from_messages,
)
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
    "GRAPH_NAME",
    "PROFILES",
    "VERIFIERS",
    "Attempt",
    "CombinedCritic",
    "ConfigError",
    "Critic",
    "CriticDone",
    "Critique",
    "CritiqueRequest",
    "CritiqueResult",
    "HumanCritic",
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
    "create_refined_chat_graph",
    "create_self_refine_graph",
    "get_profile",
    "judge_draft",
    "python_tests_verifier",
    "recursion_limit",
    "refine",
    "refine_node",
    "reply_from_output",
    "resolve_model",
    "task_from_messages",
]
