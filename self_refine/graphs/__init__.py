"""Graph factories and the graphs served to LangGraph Studio."""

from self_refine.graphs.self_refine import GRAPH_NAME, create_self_refine_graph, recursion_limit

__all__ = ["GRAPH_NAME", "create_self_refine_graph", "recursion_limit"]
