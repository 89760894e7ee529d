"""Self-Refine (generate, critique, refine) as a checkpointed LangGraph state machine.

The top level holds the names a user needs first; everything else is imported from its
module (`from self_refine.critics import LLMCritic`). The public names are imported on first
use, so that importing the package (as the `self-refine` program does to print its help)
does not load LangGraph.

The `TYPE_CHECKING` block below is the one list of the public names: type checkers and IDEs
read its imports, and at run time `__getattr__` reads the same block (once, with `ast`) to
learn which module each name comes from and to build `__all__`.
"""

from __future__ import annotations

import warnings
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from self_refine.batch.api import BatchResult as BatchResult
    from self_refine.batch.api import arefine_batch as arefine_batch
    from self_refine.batch.api import refine_batch as refine_batch
    from self_refine.errors import BatchStoppedError as BatchStoppedError
    from self_refine.errors import ConfigError as ConfigError
    from self_refine.errors import ModelCallError as ModelCallError
    from self_refine.errors import SelfRefineError as SelfRefineError
    from self_refine.errors import ThreadBusyError as ThreadBusyError
    from self_refine.graphs import Roles as Roles
    from self_refine.graphs import create_refined_chat_graph as create_refined_chat_graph
    from self_refine.graphs import create_self_refine_graph as create_self_refine_graph
    from self_refine.graphs import refine_node as refine_node
    from self_refine.run import arefine as arefine
    from self_refine.run import refine as refine
    from self_refine.settings import RefineContext as RefineContext
    from self_refine.state import Critique as Critique
    from self_refine.state import RefineInput as RefineInput
    from self_refine.state import RefineOutput as RefineOutput
    from self_refine.state import RefineState as RefineState

_MOVED = {
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
    "GRAPH_NAME": "graphs",
    "recursion_limit": "graphs",
    "reply_from_output": "graphs",
    "task_from_messages": "graphs",
    "OfflineModel": "models.offline",
    "resolve_model": "models.resolve",
    "PROFILES": "prompts",
    "PromptSet": "prompts",
    "get_profile": "prompts",
    "Attempt": "drafts",
    "Usage": "drafts",
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
"""Names the top level held until 0.1 and still answers, with a DeprecationWarning, for one
release: each and the module (under self_refine) to import it from."""

_public: dict[str, str] = {}
"""Each public name and the module that defines it, filled from the TYPE_CHECKING block."""


def _public_names() -> dict[str, str]:
    """The public names and their modules, as the TYPE_CHECKING block above imports them."""
    if not _public:
        import ast
        from pathlib import Path

        tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
        block = next(
            node
            for node in tree.body
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        )
        for node in block.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                _public.update({alias.asname or alias.name: node.module for alias in node.names})
    return _public


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use; a moved one, with a warning."""
    if name == "__all__":
        return sorted(_public_names())
    module = _public_names().get(name)
    if module is not None:
        value = getattr(import_module(module), name)
        globals()[name] = value
        return value
    moved = _MOVED.get(name)
    if moved is None:
        raise AttributeError(f"module 'self_refine' has no attribute {name!r}")
    warnings.warn(
        f"`self_refine.{name}` is deprecated and leaves the top level in the next release: "
        f"import it from its module, `from self_refine.{moved} import {name}`",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(import_module(f"self_refine.{moved}"), name)


def __dir__() -> list[str]:
    """List the public names with the module's own."""
    return sorted({*globals(), *_public_names(), "__all__"})
