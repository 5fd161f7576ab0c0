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
  Embedding, Flatten, Dropout (an identity in eval mode), Identity; LSTM/GRU/RNN on
  batched inputs become ``torch.lstm``/``gru``/``rnn_tanh``/``rnn_relu`` (ATen's
  functional forms: one op over any sequence length).

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


# ---- recurrent layers -> ATen's functional forms -------------------------------------

_RNN_FUNCTIONS = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}


def _rnn(gm, graph, node, m):
    """nn.LSTM / GRU / RNN on a batched input -> ``torch.lstm`` / ``gru`` / ``rnn_tanh`` /
    ``rnn_relu`` (one op over any sequence length), the zero initial state made from the
    input's batch size when none is given; the layer's (output, h_n) or (output, (h_n,
    c_n)) is read item by item. None where it does not apply (projections, an unbatched
    input, a packed sequence)."""
    import inspect
    from ..node import Node
    from .shape_prop import TensorMetadata
    try:
        bound = inspect.signature(m.forward).bind(*node.args, **node.kwargs)
    except TypeError:
        return None
    x, hx = bound.arguments.get("input"), bound.arguments.get("hx")
    meta = x.meta.get("tensor_meta") if isinstance(x, Node) else None
    if m.proj_size or not isinstance(meta, TensorMetadata) or len(meta.shape) != 3:
        return None
    names = {id(p): n for n, p in gm.named_parameters()}
    weights = m._flat_weights
    if any(id(w) not in names for w in weights):
        return None
    params = [graph.get_attr(names[id(w)]) for w in weights]
    states = m.num_layers * (2 if m.bidirectional else 1)

    def zeros():
        n = graph.call_method("size", (x, 0 if m.batch_first else 1))
        return graph.call_method("new_zeros", (x, (states, n, m.hidden_size)))
    lstm = m.mode == "LSTM"
    if hx is None:
        hx = (zeros(), zeros()) if lstm else zeros()
    r = graph.call_function(_torch(_RNN_FUNCTIONS[m.mode]), (
        x, hx, params, m.bias, m.num_layers, m.dropout, m.training, m.bidirectional,
        m.batch_first))
    items = [graph.call_function(operator.getitem, (r, i)) for i in range(3 if lstm else 2)]
    return (items[0], (items[1], items[2])) if lstm else tuple(items)


def replaced(a, node, value):
    """Argument structure `a` with Node `node` replaced by `value` (a structure)."""
    if a is node:
        return value
    if isinstance(a, (tuple, list)):
        return type(a)(replaced(e, node, value) for e in a)
    if isinstance(a, dict):
        return {k: replaced(v, node, value) for k, v in a.items()}
    return a


def substitute(graph, node, value):
    """Make every user of `node` read the structure `value` (tuples of nodes and
    constants) instead; ``value[i]`` reads (getitem nodes, nested too) become the item,
    which takes the read's metadata when it has none."""
    for user in list(node.users):
        if (user.op == "call_function" and user.target is operator.getitem
                and user.args[0] is node and isinstance(user.args[1], int)):
            item = value[user.args[1]]
            if isinstance(item, Node):
                for k, v in user.meta.items():
                    item.meta.setdefault(k, v)
                user.replace_all_uses_with(item)
            else:
                substitute(graph, user, item)
            graph.erase_node(user)
        else:
            user.args = replaced(user.args, node, value)
            user.kwargs = replaced(user.kwargs, node, value)


def _decompose_recurrent(gm):
    from ...nn.modules.rnn import RNNBase
    graph = gm.graph
    changed = 0
    for node in list(graph.nodes):
        if node.op != "call_module":
            continue
        try:
            module = gm.get_submodule(node.target)
        except AttributeError:
            continue
        if type(module).__module__.split(".")[0] != "nbtorch" or \
                not isinstance(module, RNNBase):
            continue
        with graph.inserting_before(node):
            new = _rnn(gm, graph, node, module)
        if new is None:
            continue
        substitute(graph, node, new)
        graph.erase_node(node)
        changed += 1
    return changed


def decompose_modules(gm):
    """Leaf modules -> functional calls with get_attr weights; returns how many changed."""
    graph = gm.graph
    changed = _decompose_recurrent(gm)
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
