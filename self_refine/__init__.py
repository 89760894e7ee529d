"""Self-Refine (generate, critique, refine) as a checkpointed LangGraph state machine.

The public names are imported on first use, so that importing the package (as
the `self-refine` program does to print its help) does not load LangGraph.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from self_refine.batch.api import BatchResult, arefine_batch, refine_batch
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
    from self_refine.critics.sandbox.host import SandboxLimits
    from self_refine.critics.verifiers import python_tests_verifier
    from self_refine.errors import (
        BatchStoppedError,
        ConfigError,
        ModelCallError,
        SelfRefineError,
        ThreadBusyError,
    )
    from self_refine.graphs import (
        GRAPH_NAME,
        Roles,
        create_refined_chat_graph,
        create_self_refine_graph,
        recursion_limit,
        refine_node,
        reply_from_output,
        task_from_messages,
    )
    from self_refine.models.offline import OfflineModel
    from self_refine.models.resolve import resolve_model
    from self_refine.prompts import (
        PROFILES,
        PromptSet,
        get_profile,
    )
    from self_refine.run import (
        arefine,
        refine,
    )
    from self_refine.settings import RefineContext
    from self_refine.state import (
        Attempt,
        Critique,
        RefineInput,
        RefineOutput,
        RefineState,
        Usage,
    )
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
    from self_refine.training import (
        PolicyChatModel,
        refine_rollout,
        trainable_model,
        verifier_reward,
    )

_MODULE_OF = {
    "BatchResult": "batch.api",
    "arefine_batch": "batch.api",
    "refine_batch": "batch.api",
    "RefineContext": "settings",
    "VERIFIERS": "critics",
    "CombinedCritic": "critics",
    "Critic": "critics",
    "CritiqueRequest": "critics",
    "CritiqueResult": "critics",
    "HumanCritic": "critics",
    "LLMCritic": "critics",
    "NotApplicable": "critics",
    "Verifier": "critics",
    "judge_draft": "critics",
    "SandboxLimits": "critics.sandbox.host",
    "python_tests_verifier": "critics.verifiers",
    "BatchStoppedError": "errors",
    "ConfigError": "errors",
    "ModelCallError": "errors",
    "SelfRefineError": "errors",
    "ThreadBusyError": "errors",
    "GRAPH_NAME": "graphs",
    "Roles": "graphs",
    "create_refined_chat_graph": "graphs",
    "create_self_refine_graph": "graphs",
    "recursion_limit": "graphs",
    "refine_node": "graphs",
    "reply_from_output": "graphs",
    "task_from_messages": "graphs",
    "resolve_model": "models.resolve",
    "OfflineModel": "models.offline",
    "PROFILES": "prompts",
    "PromptSet": "prompts",
    "get_profile": "prompts",
    "arefine": "run",
    "refine": "run",
    "Attempt": "state",
    "Critique": "state",
    "RefineInput": "state",
    "RefineOutput": "state",
    "RefineState": "state",
    "Usage": "state",
    "CriticDone": "stopping",
    "MaxIterations": "stopping",
    "NoImprovement": "stopping",
    "ScoreThreshold": "stopping",
    "StopPolicy": "stopping",
    "StopView": "stopping",
    "TokenBudget": "stopping",
    "Unchanged": "stopping",
    "Verified": "stopping",
    "PolicyChatModel": "training",
    "refine_rollout": "training",
    "trainable_model": "training",
    "verifier_reward": "training",
}
"""Each public name and the module (under self_refine) that defines it."""

__all__ = [
    "GRAPH_NAME",
    "PROFILES",
    "VERIFIERS",
    "Attempt",
    "BatchResult",
    "BatchStoppedError",
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
    "PolicyChatModel",
    "PromptSet",
    "RefineContext",
    "RefineInput",
    "RefineOutput",
    "RefineState",
    "Roles",
    "SandboxLimits",
    "ScoreThreshold",
    "SelfRefineError",
    "StopPolicy",
    "StopView",
    "ThreadBusyError",
    "TokenBudget",
    "Unchanged",
    "Usage",
    "Verified",
    "Verifier",
    "arefine",
    "create_refined_chat_graph",
    "arefine_batch",
    "create_self_refine_graph",
    "get_profile",
    "judge_draft",
    "python_tests_verifier",
    "recursion_limit",
    "refine",
    "refine_node",
    "refine_rollout",
    "reply_from_output",
    "refine_batch",
    "resolve_model",
    "task_from_messages",
    "trainable_model",
    "verifier_reward",
]


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'self_refine' has no attribute {name!r}")
    value = getattr(import_module(f"self_refine.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """List the public names with the module's own."""
    return sorted({*globals(), *__all__})
