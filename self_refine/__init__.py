"""Self-Refine (generate, critique, refine) as a checkpointed LangGraph state machine."""

from self_refine.context import RefineContext
from self_refine.critics import Critic, CritiqueRequest, CritiqueResult, HumanCritic, LLMCritic
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
)

__all__ = [
    "GRAPH_NAME",
    "PROFILES",
    "Attempt",
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
    "create_refined_chat_graph",
    "create_self_refine_graph",
    "get_profile",
    "recursion_limit",
    "refine",
    "refine_node",
    "reply_from_output",
    "resolve_model",
    "task_from_messages",
]
