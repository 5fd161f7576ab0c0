"""Normalisation: one spelling per op, so later passes match on nbtorch functions only.

After `normalize(gm)`:

- ``operator.add(x, y)`` (``x + y``) and the other Python operators on tensors
  are ``torch.add(x, y)``...; a number on the left is moved right where the op
  allows it (``2 * x`` -> ``torch.mul(x, 2)``, ``1 - x`` -> ``torch.rsub(x, 1)``);
- tensor methods with a same-signature function (``x.relu()``, ``x.sum(-1)``)
  are ``call_function`` nodes of that function (``torch.relu(x)``);
- leaf modules become their functional form with their weights read by
  ``get_attr`` nodes: Linear, the activations, Softmax/LogSoftmax, LayerNorm,
  BatchNorm in eval mode (with running statistics), Conv1d/2d (zero padding),
  Embedding, Flatten, Dropout (an identity in eval mode), Identity.

Which values are tensors is read from ``node.meta['tensor_meta']`` (jit.trace
sets it; run `ShapeProp` after symbolic tracing): an operator on Python
numbers (size arithmetic) stays an operator. Modules left as they are: those
with state that changes while they run (BatchNorm in training mode) and
unknown ones. The module keeps its submodules, so `state_dict` is unchanged.

Example:
    >>> from nbtorch.fx.passes.normalize import normalize
    >>> normalize(traced)
    >>> print(traced.code)
"""
import operator

from ..node import Node

__all__ = ["normalize", "normalize_operators", "decompose_modules"]

_OPERATORS = {
    operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.truediv: "div",
    operator.floordiv: "floor_divide", operator.mod: "remainder", operator.pow: "pow",
    operator.matmul: "matmul", operator.neg: "neg", operator.abs: "abs",
    operator.eq: "eq", operator.ne: "ne", operator.lt: "lt", operator.le: "le",
    operator.gt: "gt", operator.ge: "ge", operator.and_: "bitwise_and",
    operator.or_: "bitwise_or", operator.xor: "bitwise_xor", operator.invert: "bitwise_not",
}
# number OP tensor -> the function with the tensor first
_SWAPPED = {"add": "add", "mul": "mul", "eq": "eq", "ne": "ne", "lt": "gt", "gt": "lt",
            "le": "ge", "ge": "le", "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
            "bitwise_xor": "bitwise_xor", "sub": "rsub"}

# Tensor methods whose torch.* function takes the same arguments.
_METHODS = frozenset("""
abs neg exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sigmoid tanh relu sin cos tan asin
acos atan sinh cosh erf erfc erfinv square reciprocal floor ceil trunc frac sign sgn
add sub mul div true_divide pow remainder fmod maximum minimum fmax fmin atan2 hypot
logaddexp xlogy eq ne lt le gt ge logical_and logical_or logical_xor logical_not
bitwise_and bitwise_or bitwise_xor bitwise_not isnan isinf isfinite nan_to_num
matmul mm bmm mv dot outer sum mean amax amin prod logsumexp argmax argmin var std
softmax log_softmax cumsum cumprod transpose t unsqueeze squeeze flatten clamp clamp_min
clamp_max clip masked_fill lerp addcmul addcdiv where
""".split())


def _is_tensor(a):
    from .shape_prop import TensorMetadata
    from ..._tensor import Tensor
    if not isinstance(a, Node):
        return False
    if isinstance(a.meta.get("tensor_meta"), TensorMetadata):
        return True
    return isinstance(a.type, type) and issubclass(a.type, Tensor)


def _torch(name):
    import nbtorch
    return getattr(nbtorch, name)


def normalize_operators(gm):
    """Operators and methods on tensors -> torch.* calls; returns how many nodes changed."""
    graph = getattr(gm, "graph", gm)
    changed = 0
    for node in graph.nodes:
        if node.op == "call_function" and node.target in _OPERATORS and not node.kwargs:
            name = _OPERATORS[node.target]
            args = node.args
            if _is_tensor(args[0]):
                node.target = _torch(name)
            elif len(args) == 2 and _is_tensor(args[1]) and name in _SWAPPED:
                node.target = _torch(_SWAPPED[name])
                node.args = (args[1], args[0])
            elif len(args) == 2 and _is_tensor(args[1]) and name == "pow":
                node.target = _torch("pow")
            else:
                continue
            changed += 1
        elif (node.op == "call_method" and node.target in _METHODS and node.args
              and _is_tensor(node.args[0])):
            node.op = "call_function"
            node.target = _torch(node.target)
            changed += 1
    if changed and hasattr(gm, "recompile"):
        gm.recompile()
    return changed


# ---- leaf modules -> functional calls -------------------------------------------------

def _F(name):
    from ...nn import functional
    return getattr(functional, name)


def _attrs(graph, target, module, *names):
    """get_attr nodes (None for a missing/None attribute) of `module`'s `names`."""
    from .shape_prop import metadata_of
    out = []
    for n in names:
        value = getattr(module, n, None)
        if value is None:
            out.append(None)
            continue
        node = graph.get_attr(f"{target}.{n}")
        meta = metadata_of(value)
        if meta is not None:
            node.meta["tensor_meta"] = meta
        out.append(node)
    return out


def _linear(graph, target, m, x):
    w, b = _attrs(graph, target, m, "weight", "bias")
    return graph.call_function(_F("linear"), (x, w, b))


def _layer_norm(graph, target, m, x):
    w, b = _attrs(graph, target, m, "weight", "bias")
    return graph.call_function(_F("layer_norm"), (x, tuple(m.normalized_shape), w, b, m.eps))


def _batch_norm(graph, target, m, x):
    if m.training or not m.track_running_stats:
        return None                  # updates its statistics, or uses the batch's: keep
    mean, var, w, b = _attrs(graph, target, m, "running_mean", "running_var", "weight",
                             "bias")
    return graph.call_function(_F("batch_norm"), (x, mean, var, w, b, False, 0.0, m.eps))


def _conv(name):
    def make(graph, target, m, x):
        if getattr(m, "padding_mode", "zeros") != "zeros" or isinstance(m.padding, str):
            return None
        w, b = _attrs(graph, target, m, "weight", "bias")
        return graph.call_function(_F(name), (x, w, b, m.stride, m.padding, m.dilation,
                                              m.groups))
    return make


def _embedding(graph, target, m, x):
    if m.max_norm is not None:
        return None                  # renormalises its weight in place: keep
    w, = _attrs(graph, target, m, "weight")
    return graph.call_function(_F("embedding"), (x, w, m.padding_idx))


def _dropout(graph, target, m, x):
    if m.training and m.p > 0:
        return graph.call_function(_F("dropout"), (x, m.p, True))
    return x


def _simple(name, *fields, **fixed):
    def make(graph, target, m, x):
        kwargs = {f: getattr(m, f) for f in fields}
        kwargs.update(fixed)
        return graph.call_function(_F(name), (x,), kwargs)
    return make


_MODULES = {
    "Linear": _linear, "LayerNorm": _layer_norm, "BatchNorm1d": _batch_norm,
    "BatchNorm2d": _batch_norm, "BatchNorm3d": _batch_norm, "Conv1d": _conv("conv1d"),
    "Conv2d": _conv("conv2d"), "Embedding": _embedding, "Dropout": _dropout,
    "Identity": lambda graph, target, m, x: x,
    "ReLU": _simple("relu"), "Sigmoid": _simple("sigmoid"), "Tanh": _simple("tanh"),
    "SiLU": _simple("silu"), "Mish": _simple("mish"), "GELU": _simple("gelu", "approximate"),
    "LeakyReLU": _simple("leaky_relu", "negative_slope"), "ELU": _simple("elu", "alpha"),
    "Softplus": _simple("softplus", "beta", "threshold"),
    "Hardtanh": _simple("hardtanh", "min_val", "max_val"), "ReLU6": _simple("relu6"),
    "Hardswish": _simple("hardswish"), "Hardsigmoid": _simple("hardsigmoid"),
    "Softmax": _simple("softmax", "dim"), "LogSoftmax": _simple("log_softmax", "dim"),
    "Flatten": lambda graph, target, m, x: graph.call_function(
        _torch("flatten"), (x, m.start_dim, m.end_dim)),
}


def decompose_modules(gm):
    """Leaf modules -> functional calls with get_attr weights; returns how many changed."""
    graph = gm.graph
    changed = 0
    for node in list(graph.nodes):
        if node.op != "call_module" or len(node.args) != 1 or node.kwargs:
            continue
        try:
            module = gm.get_submodule(node.target)
        except AttributeError:
            continue
        if getattr(module, "inplace", False):
            continue                 # an in-place activation writes its input: keep
        if type(module).__module__.split(".")[0] != "nbtorch":
            continue                 # a user's module with a familiar name
        make = _MODULES.get(type(module).__name__)
        if make is None:
            continue
        with graph.inserting_before(node):
            new = make(graph, node.target, module, node.args[0])
        if new is None:
            continue
        if isinstance(new, Node) and new is not node.args[0]:
            new.meta = dict(node.meta)
        node.replace_all_uses_with(new)
        graph.erase_node(node)
        changed += 1
    if changed:
        gm.recompile()
    return changed


def normalize(gm):
    """Run `decompose_modules` then `normalize_operators` on GraphModule `gm`; returns gm."""
    decompose_modules(gm)
    normalize_operators(gm)
    return gm
