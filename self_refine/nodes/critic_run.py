"""The run's critic as a child run of the node that asks it (critique, candidate)."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig

from self_refine.critics import CombinedCritic, CritiqueRequest, CritiqueResult

__all__ = ["CriticRun"]


class CriticRun(Runnable[CritiqueRequest, CritiqueResult]):
    """The run's critic as a child run of the critique node, with the run's trace metadata.

    Built once per plan; unlike a `RunnableLambda`, it does not inspect the
    critic's signature on every call.
    """

    def __init__(self, critic: CombinedCritic) -> None:
        self.critic = critic
        self.name = f"{critic.name} critic"
        self.model = getattr(critic.explainer, "model", None)

    def _critique(self, request: CritiqueRequest) -> CritiqueResult:
        return self.critic.critique(request)

    async def _acritique(self, request: CritiqueRequest) -> CritiqueResult:
        return await self.critic.acritique(request)

    def invoke(
        self, input: CritiqueRequest, config: RunnableConfig | None = None, **_: Any
    ) -> CritiqueResult:
        """Critique the draft in a child run."""
        return self._call_with_config(self._critique, input, config)

    async def ainvoke(
        self, input: CritiqueRequest, config: RunnableConfig | None = None, **_: Any
    ) -> CritiqueResult:
        """Critique the draft in a child run, without blocking the event loop."""
        return await self._acall_with_config(self._acritique, input, config)
