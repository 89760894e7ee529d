"""The run's critic as a child run of the node that asks it (critique, candidate)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config

from self_refine.critics.base import CritiqueRequest, CritiqueResult, RunCritic
from self_refine.models.cancel import StopNewCalls

__all__ = ["CriticRun"]


class CriticRun(Runnable[CritiqueRequest, CritiqueResult]):
    """The run's critic as a child run of the critique node, with the run's trace metadata.

    Built once per plan. The child run exists for whoever watches the run (a
    tracer, a stream of messages): when the node's run has no callback handlers
    but the command line's `StopNewCalls` (`_watched`), nothing would see it, so
    the critic is called directly, without configuring callbacks for nobody. Its
    signature is worked out once, not inspected at every call as
    `_call_with_config` would.
    """

    def __init__(self, critic: RunCritic) -> None:
        self.critic = critic
        self.name = f"{critic.name} critic"
        self.model = getattr(critic.explainer, "model", None)
        self._critique = _known_signature(critic.critique)
        self._acritique = _known_signature(critic.acritique)

    def invoke(
        self, input: CritiqueRequest, config: RunnableConfig | None = None, **_: Any
    ) -> CritiqueResult:
        """Critique the draft in a child run."""
        if not _watched(config):
            return self.critic.critique(input)
        return self._call_with_config(self._critique, input, config)

    async def ainvoke(
        self, input: CritiqueRequest, config: RunnableConfig | None = None, **_: Any
    ) -> CritiqueResult:
        """Critique the draft in a child run, without blocking the event loop."""
        if not _watched(config):
            return await self.critic.acritique(input)
        return await self._acall_with_config(self._acritique, input, config)


def _known_signature(method: Callable[[CritiqueRequest], Any]) -> Callable[..., Any]:
    """`method` as a function whose signature inspection finds at once (`__signature__`)."""

    def call(request: CritiqueRequest) -> Any:
        return method(request)

    call.__signature__ = inspect.signature(call)  # type: ignore[attr-defined]
    return call


def _watched(config: RunnableConfig | None) -> bool:
    """Whether a child run of this call would be seen: a callback handler on its run
    other than `StopNewCalls`.

    Inside a graph the callbacks are the node's, which carry every handler the
    run was configured with (a LangSmith tracer when tracing is on, LangGraph's
    stream handlers); outside one (no callbacks yet), configuring decides. The
    command line's `StopNewCalls` takes model starts only, which reach it from the
    node's callbacks with or without the child run: it watches no run.
    """
    callbacks = ensure_config(config).get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        handlers = [*callbacks.handlers, *callbacks.inheritable_handlers]
        return any(not isinstance(handler, StopNewCalls) for handler in handlers)
    return True
