"""Graph factories, the adapter that embeds the refine graph, and the graphs served to Studio."""

from self_refine.graphs.adapters import refine_node, reply_from_output, task_from_messages
from self_refine.graphs.chat import create_refined_chat_graph
from self_refine.graphs.checked import recursion_limit
from self_refine.graphs.self_refine import GRAPH_NAME, Roles, create_self_refine_graph

__all__ = [
    "GRAPH_NAME",
    "Roles",
    "create_refined_chat_graph",
    "create_self_refine_graph",
    "recursion_limit",
    "refine_node",
    "reply_from_output",
    "task_from_messages",
]
