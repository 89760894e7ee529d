"""Graphs for LangGraph Studio and `langgraph dev`: compiled without a checkpointer.

The server persists every step itself; a graph compiled with its own
checkpointer would stop it from starting.
"""

from __future__ import annotations

import os

from self_refine.context import MAX_ITERATIONS_LIMIT
from self_refine.graphs.self_refine import create_self_refine_graph, recursion_limit

__all__ = ["graph"]

graph = (
    create_self_refine_graph(os.environ.get("SELF_REFINE_MODEL", "offline"))
    .compile(name="self_refine")
    .with_config(recursion_limit=recursion_limit(MAX_ITERATIONS_LIMIT))
)
