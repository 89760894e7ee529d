"""The run's critic as a child run of the node that asks it (critique, candidate)."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda

from self_refine.critics.base import CritiqueRequest, CritiqueResult, RunCritic
from self_refine.nodes.runnable import known_signature, watched

__all__ = ["CriticRun"]


class CriticRun(Runnable[CritiqueRequest, CritiqueResult]):
    """The run's critic as a child run of the critique node, with the run's trace metadata.

    Built once per plan. The child run exists for whoever watches the run (a
    tracer, a stream of messages): when the node's run has no callback handlers
    but the command line's `StopNewCalls` (`watched`), nothing would see it, so
    the critic is called directly, without configuring callbacks for nobody. The
    child run is a `RunnableLambda` of the critic's two methods, each with its
    signature worked out once (`known_signature`), not inspected at every call.
    """

    def __init__(self, critic: RunCritic) -> None:
        self.critic = critic
        self.name = f"{critic.name} critic"
        self.model = getattr(critic.explainer, "model", None)
        self._traced: RunnableLambda[CritiqueRequest, CritiqueResult] = RunnableLambda(
            known_signature(critic.critique), known_signature(critic.acritique), name=self.name
        )

    def invoke(
        self, input: CritiqueRequest, config: RunnableConfig | None = None, **_: Any
    ) -> CritiqueResult:
        """Critique the draft in a child run."""
        if not watched(config):
            return self.critic.critique(input)
        return self._traced.invoke(input, config)

    async def ainvoke(
        self, input: CritiqueRequest, config: RunnableConfig | None = None, **_: Any
    ) -> CritiqueResult:
        """Critique the draft in a child run, without blocking the event loop."""
        if not watched(config):
            return await self.critic.acritique(input)
        return await self._traced.ainvoke(input, config)
