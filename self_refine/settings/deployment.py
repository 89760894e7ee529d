"""What a served graph's runs may choose: the models and base URLs its deployment allows.

A graph served to clients (`graphs/studio.py`: `langgraph dev`, Studio, a deployment of
`studio.json`) holds the deployment's keys in its environment. A run's context could
otherwise name any model string or `base_url`, and the server would send its own
`OPENAI_API_KEY` to that address. A `Deployment` given to the factory
(`create_self_refine_graph(..., deployment=...)`) lets a run's context choose only among
the models and base URLs the deployment lists, and never take an `api_key`; anything else
is refused (ConfigError) when the run's plan is made, before any model call. Library and
command-line users, who give their own `base_url` and key, pass no `Deployment`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from self_refine.errors import ConfigError
from self_refine.redact import redact_url, terminal_safe
from self_refine.settings.fields import ROLE_MODEL_FIELDS, RefineContext

__all__ = ["ALLOWED_BASE_URLS_ENV", "ALLOWED_MODELS_ENV", "Deployment"]

ALLOWED_MODELS_ENV = "SELF_REFINE_ALLOWED_MODELS"
"""Model strings (comma-separated) a served graph's runs may name besides its own model."""
ALLOWED_BASE_URLS_ENV = "SELF_REFINE_ALLOWED_BASE_URLS"
"""Base URLs (comma-separated) a served graph's runs may name besides its own endpoint."""


def _listed(value: str | None) -> tuple[str, ...]:
    return tuple(item.strip() for item in (value or "").split(",") if item.strip())


def _same_url(url: str) -> str:
    return url.strip().rstrip("/")


@dataclass(frozen=True)
class Deployment:
    """The models and base URLs a served graph's runs may choose (besides the graph's own)."""

    models: tuple[str, ...] = ()
    """Model strings a run's `model` or role models may name."""
    base_urls: tuple[str, ...] = ()
    """Base URLs a run's `base_url` may name."""

    @classmethod
    def from_env(cls, model: str, environ: Mapping[str, str] | None = None) -> Deployment:
        """The deployment of a graph served with `model`: that model, and the models and
        base URLs listed in SELF_REFINE_ALLOWED_MODELS and SELF_REFINE_ALLOWED_BASE_URLS."""
        environ = os.environ if environ is None else environ
        return cls(
            models=(model, *_listed(environ.get(ALLOWED_MODELS_ENV))),
            base_urls=_listed(environ.get(ALLOWED_BASE_URLS_ENV)),
        )

    def check(self, settings: RefineContext, graph: RefineContext) -> None:
        """Raise ConfigError when `settings` (a run's) name a model, a base URL or a key that
        the deployment does not allow; `graph` holds the graph's own settings, always allowed."""
        url = settings.base_url
        allowed_urls = {_same_url(u) for u in (*self.base_urls, graph.base_url or "") if u}
        if url and _same_url(url) not in allowed_urls:
            raise ConfigError(
                f"base_url {terminal_safe(redact_url(url))!r} is not one this deployment "
                f"allows: leave base_url empty, or list it in {ALLOWED_BASE_URLS_ENV} "
                "(comma-separated) in the server's environment"
            )
        allowed_models = {*self.models, *(m for m in _graph_models(graph) if m)}
        for name in ("model", *ROLE_MODEL_FIELDS):
            model = getattr(settings, name)
            if model is not None and model.strip() not in allowed_models:
                raise ConfigError(
                    f"{name} {terminal_safe(model)!r} is not one this deployment allows "
                    f"(allowed: {', '.join(sorted(allowed_models))}): leave {name} empty, "
                    f"or list it in {ALLOWED_MODELS_ENV} (comma-separated) in the server's "
                    "environment"
                )
        if settings.api_key is not None and settings.api_key != graph.api_key:
            raise ConfigError(
                "a served graph takes no api_key from a run's context: the deployment's "
                "environment holds its keys; leave api_key empty"
            )


def _graph_models(graph: RefineContext) -> tuple[str | None, ...]:
    return tuple(getattr(graph, name) for name in ("model", *ROLE_MODEL_FIELDS))
