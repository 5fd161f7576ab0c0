"""Common-subexpression elimination: one node per distinct pure computation.

Two nodes are the same computation when they have the same op, target and
arguments (nodes compared by identity after earlier merges, constants by type
and value, so ``x + 1`` and ``x + 1.0`` stay apart). The later one is replaced
by the earlier one. Impure nodes (placeholders, in-place and random calls,
``out=``) and random modules are never merged, nor is a value an in-place node
writes (directly or through a view: two ``zeros`` filled through views are two
buffers), and nothing is merged across an in-place node that could have changed
an input (a node reading a value after ``x.add_(1)`` is not the node that read it
before).

Example:
    >>> from nbtorch.fx.passes.cse import eliminate_common_subexpressions
    >>> eliminate_common_subexpressions(gm)      # number of nodes removed
"""
import math

from .._impure import alias_root, is_random_node, mutated_nodes
from ..node import Node

__all__ = ["eliminate_common_subexpressions", "CSEPass"]


def _key(a):
    """A hashable key of an argument structure: nodes by identity, constants typed."""
    if isinstance(a, Node):
        return ("node", id(a))
    if isinstance(a, (tuple, list)):
        return (type(a).__name__, tuple(_key(e) for e in a))
    if isinstance(a, dict):
        return ("dict", tuple((k, _key(v)) for k, v in a.items()))
    if isinstance(a, slice):
        return ("slice", _key(a.start), _key(a.stop), _key(a.step))
    if isinstance(a, float) and math.isnan(a):
        return ("nan", id(a))                   # NaN never equals: never merged
    try:
        hash(a)
    except TypeError:
        return ("id", id(a))
    return (type(a), a)


def _mutated_inputs(node):
    """The values an impure node may write: its tensor arguments, as their view roots."""
    return [alias_root(n) for n in node.all_input_nodes]


def eliminate_common_subexpressions(gm):
    """Merge identical pure nodes of `gm` (a GraphModule or a Graph) in place.

    Returns the number of nodes removed; a GraphModule is recompiled when
    anything changed.
    """
    graph = getattr(gm, "graph", gm)
    owner = graph.owning_module
    seen = {}
    generation = {}          # node -> how many times it may have been written in place
    removed = 0
    written = mutated_nodes(graph)   # values written in place (through views too)
    for node in list(graph.nodes):
        if node.op in ("placeholder", "output"):
            continue
        if node.is_impure() or is_random_node(node, owner):
            for inp in _mutated_inputs(node):
                generation[inp] = generation.get(inp, 0) + 1
            continue
        if node in written:
            continue
        try:
            key = (node.op, _key(node.target) if node.op == "call_function" else node.target,
                   _key(node.args), _key(node.kwargs),
                   tuple(generation.get(alias_root(n), 0) for n in node.all_input_nodes))
            hash(key)
        except TypeError:
            continue
        first = seen.get(key)
        if first is None:
            seen[key] = node
            continue
        node.replace_all_uses_with(first)
        graph.erase_node(node)
        removed += 1
    if removed and hasattr(gm, "recompile"):
        gm.recompile()
    return removed


class CSEPass:
    """`eliminate_common_subexpressions` as a pass object: ``CSEPass()(gm)`` -> gm."""

    def __call__(self, gm):
        eliminate_common_subexpressions(gm)
        return gm
