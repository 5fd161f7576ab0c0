"""Constant folding: compute once, at compile time, what depends on no input.

A node is constant when every value it reads is constant: a ``get_attr`` of a
tensor the trace captured as a constant (not a parameter or a buffer, unless
asked), a Python value, or another constant node; factory calls with constant
arguments (``torch.ones(3)``) are constant too. Such nodes run once; each
maximal constant value that a non-constant node reads becomes a new attribute
``_folded_constant_<n>`` of the module, read by a ``get_attr`` node, and the
nodes that computed it are removed. Impure and random nodes are never folded.

`fold_parameters` / `fold_buffers` treat parameters / buffers as constants
too (what `nbtorch.jit.freeze` does: the folded values no longer follow later
changes to the weights).

Example:
    >>> from nbtorch.fx.passes.constant_fold import constant_fold
    >>> constant_fold(gm)      # number of values folded
"""
from .._impure import is_random_node, mutated_nodes
from ..node import map_arg

__all__ = ["constant_fold", "is_constant_attr"]


def _fetch(module, target):
    obj = module
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj


def is_constant_attr(module, target, fold_parameters=False, fold_buffers=False):
    """True when get_attr `target` of `module` may be folded under these options."""
    from ...nn import Parameter
    from ..._tensor import Tensor
    try:
        value = _fetch(module, target)
    except AttributeError:
        return False
    if not isinstance(value, Tensor):
        return True
    if isinstance(value, Parameter) or value.requires_grad:
        return fold_parameters
    *prefix, field = target.split(".")
    owner = _fetch(module, ".".join(prefix)) if prefix else module
    if field in getattr(owner, "_buffers", {}):
        return fold_buffers
    return True                      # a tensor constant of the trace


def constant_fold(gm, fold_parameters=False, fold_buffers=False):
    """Fold the constant nodes of GraphModule `gm` in place; returns how many values were
    turned into attributes (the module is recompiled when anything changed)."""
    from ..interpreter import Interpreter
    graph = gm.graph
    constant = {}                    # node -> its value
    runner = Interpreter(gm, garbage_collect_values=False)
    written = mutated_nodes(graph)   # filled in place at run time: not a constant
    for node in graph.nodes:
        if node.op in ("placeholder", "output", "call_module") or node in written:
            continue
        if node.op == "get_attr":
            if is_constant_attr(gm, node.target, fold_parameters, fold_buffers):
                constant[node] = _fetch(gm, node.target)
            continue
        if node.is_impure() or is_random_node(node, gm):
            continue
        if not all(n in constant for n in node.all_input_nodes):
            continue
        args = map_arg(node.args, lambda n: constant[n])
        kwargs = map_arg(node.kwargs, lambda n: constant[n])
        try:
            constant[node] = getattr(runner, node.op)(node.target, args, kwargs)
        except Exception:            # leave it to run time (and its error message)
            continue
    folded = 0
    for node in list(graph.nodes):
        if node not in constant or node.op == "get_attr":
            continue
        if not any(u not in constant for u in node.users):
            continue                 # only read by other constants: they are folded
        value = constant[node]
        if _is_literal(value):       # a Python value: written into its users' arguments
            for user in list(node.users):
                user.args = map_arg(user.args, lambda n: value if n is node else n)
                user.kwargs = map_arg(user.kwargs, lambda n: value if n is node else n)
            folded += 1
            continue
        name = _fresh_name(gm)
        _install(gm, name, constant[node])
        with graph.inserting_before(node):
            attr = graph.get_attr(name)
        attr.meta = dict(node.meta)
        node.replace_all_uses_with(attr)
        folded += 1
    if folded:
        graph.eliminate_dead_code()
        gm.recompile()
    return folded


def _is_literal(value):
    from ..._dtype import dtype
    from ..._device import device
    if value is None or isinstance(value, (bool, int, float, str, dtype, device)):
        return True
    if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
        return all(_is_literal(v) for v in value)
    return False


def _fresh_name(gm):
    i = 0
    while hasattr(gm, f"_folded_constant_{i}"):
        i += 1
    return f"_folded_constant_{i}"


def _install(gm, name, value):
    from ..._tensor import Tensor
    if isinstance(value, Tensor):
        gm.register_buffer(name, value.detach(), persistent=False)
    else:
        object.__setattr__(gm, name, value)
