"""Graphs for LangGraph Studio and `langgraph dev`: compiled without a checkpointer.

The server persists every step itself; a graph compiled with its own
checkpointer would stop it from starting. `graph` is the refine loop; `chat`
is an example agent that embeds it as a subgraph to refine each reply.

Both are served: the server's environment holds the keys, so a run's context may only
choose among SELF_REFINE_MODEL and the models and base URLs listed in
SELF_REFINE_ALLOWED_MODELS and SELF_REFINE_ALLOWED_BASE_URLS (`Deployment`), and never
gives an `api_key`.
"""

from __future__ import annotations

import os

from self_refine.graphs.chat import create_refined_chat_graph
from self_refine.graphs.self_refine import create_self_refine_graph
from self_refine.settings.deployment import Deployment

__all__ = ["chat", "graph"]

_MODEL = os.environ.get("SELF_REFINE_MODEL", "offline")

graph = create_self_refine_graph(_MODEL, deployment=Deployment.from_env(_MODEL)).compile(
    name="self_refine"
)

chat = create_refined_chat_graph(_MODEL, refiner=graph).compile(name="chat")
