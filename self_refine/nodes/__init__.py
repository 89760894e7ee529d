"""The graph's nodes and routing functions."""

from self_refine.nodes.critique import make_critique
from self_refine.nodes.deps import Deps, Role
from self_refine.nodes.finalize import make_finalize, pick_best
from self_refine.nodes.generate import make_generate
from self_refine.nodes.refine import make_refine
from self_refine.nodes.routing import route_after_critique, route_start

__all__ = [
    "Deps",
    "Role",
    "make_critique",
    "make_finalize",
    "make_generate",
    "make_refine",
    "pick_best",
    "route_after_critique",
    "route_start",
]
