"""Which nodes have effects beyond their value: kept by dead-code elimination.

PyTorch fx keeps placeholders, outputs, side-effectful functions and random
ops. nbtorch also keeps in-place calls (``x.add_(1)``, ``torch.relu_(x)``,
``x += 1``, ``x[i] = v``, ``out=``): a traced graph may mutate its inputs, and
removing such a node would change what the program does.
"""
import operator

__all__ = ["node_is_impure", "is_random_node", "RANDOM_FUNCTIONS", "RANDOM_METHODS",
           "alias_root", "mutated_nodes"]

_INPLACE_OPERATORS = {operator.setitem, operator.delitem, operator.iadd, operator.isub,
                      operator.imul, operator.itruediv, operator.ifloordiv, operator.imod,
                      operator.ipow, operator.iand, operator.ior, operator.ixor,
                      operator.ilshift, operator.irshift, operator.imatmul}

RANDOM_FUNCTIONS = ("rand", "randn", "rand_like", "randn_like", "randint", "randint_like",
                    "randperm", "bernoulli", "normal", "multinomial", "dropout", "dropout1d",
                    "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
                    "rrelu", "gumbel_softmax", "bernoulli_noise")
RANDOM_METHODS = ("bernoulli", "bernoulli_", "normal_", "uniform_", "random_",
                  "exponential_", "geometric_", "log_normal_", "cauchy_", "multinomial")
_TRAINING_ARG = {"dropout": (2, True), "dropout1d": (2, True), "dropout2d": (2, True),
                 "dropout3d": (2, True), "alpha_dropout": (2, False),
                 "feature_alpha_dropout": (2, False), "rrelu": (3, False)}
_RANDOM_MODULES = ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                   "FeatureAlphaDropout", "RReLU")


def _nbtorch_function_name(fn):
    """`fn.__name__` when `fn` is an nbtorch function, else None."""
    module = getattr(fn, "__module__", None) or ""
    return fn.__name__ if module.startswith("nbtorch") and hasattr(fn, "__name__") else None


def is_random_node(node, module=None):
    """True for nodes that draw random numbers (a re-run gives a different value)."""
    if node.op == "call_function":
        name = _nbtorch_function_name(node.target)
        if name in _TRAINING_ARG:               # dropout(x, p, training=True): random
            index, default = _TRAINING_ARG[name]  # only while training
            training = node.kwargs.get("training", node.args[index] if len(node.args) > index
                                       else default)
            return training is not False
        return name in RANDOM_FUNCTIONS
    if node.op == "call_method":
        return node.target in RANDOM_METHODS
    if node.op == "call_module" and module is not None:
        try:
            sub = module.get_submodule(node.target)
        except AttributeError:
            return False
        return type(sub).__name__ in _RANDOM_MODULES and sub.training
    return False


def node_is_impure(node):
    """Placeholders, outputs, in-place and random calls, and modules marked `_is_impure`."""
    op = node.op
    if op in ("placeholder", "output"):
        return True
    if op == "call_module":
        owner = node.graph.owning_module
        if owner is None:
            return False
        try:
            return bool(getattr(owner.get_submodule(node.target), "_is_impure", False))
        except AttributeError:
            return False
    if op == "call_function":
        target = node.target
        if target in _INPLACE_OPERATORS or "out" in node.kwargs:
            return True
        name = _nbtorch_function_name(target)
        if name is not None and (name.endswith("_") or name in RANDOM_FUNCTIONS):
            return True
        return bool(getattr(target, "_fx_impure", False))
    if op == "call_method":
        t = node.target
        return ((t.endswith("_") and not t.endswith("__")) or t in RANDOM_METHODS
                or "out" in node.kwargs)
    return False


# Ops whose result shares memory with their first tensor argument (a view): a write
# through the result is a write to the argument.
VIEW_NAMES = frozenset((
    "view", "view_as", "reshape", "reshape_as", "narrow", "select", "t", "transpose",
    "permute", "squeeze", "unsqueeze", "expand", "expand_as", "flatten", "unflatten",
    "diagonal", "as_strided", "split", "chunk", "unbind", "tensor_split", "movedim",
    "moveaxis", "swapaxes", "swapdims", "real", "imag", "view_as_real", "view_as_complex",
    "detach", "unfold", "contiguous", "getitem", "__getitem__", "view_of", "_view"))


def _view_base(node):
    """The node whose memory `node`'s value may share (it is a view of it), or None."""
    if node.op not in ("call_function", "call_method"):
        return None
    target = node.target
    name = target if isinstance(target, str) else getattr(target, "__name__", "")
    if node.meta.get("aliases_input") or name in VIEW_NAMES:
        for a in node.args:
            if hasattr(a, "op") and hasattr(a, "users"):
                return a
    return None


def alias_root(node):
    """The first node of the chain of views `node` belongs to (itself when no view)."""
    seen = set()
    while node not in seen:
        seen.add(node)
        base = _view_base(node)
        if base is None:
            return node
        node = base
    return node


def mutated_nodes(graph):
    """Nodes whose memory an in-place node of `graph` may write, directly or through a
    view: every node in the alias class of a tensor argument of an impure call (the
    conservative reading of "impure": CSE and constant folding must neither merge nor
    freeze such a value, since two fresh ``zeros`` filled through views are two buffers)."""
    roots = set()
    for node in graph.nodes:
        if node.op in ("call_function", "call_method", "call_module") and node.is_impure():
            roots.update(alias_root(n) for n in node.all_input_nodes)
    return {n for n in graph.nodes if alias_root(n) in roots}
