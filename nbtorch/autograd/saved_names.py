"""`grad_fn._saved_<name>`: PyTorch's names for what a built-in node saved.

PyTorch's generated nodes expose each saved value as `_saved_<name>`
(MulBackward0._saved_self, PowBackward0._saved_exponent ...). nbtorch's nodes
keep theirs in `ctx._saved` (plus scalars and shapes); this table maps
PyTorch's names onto them, per node name. A saved tensor is read through the
same checks as backward's (freed after backward: PyTorch's RuntimeError).
"""
__all__ = ["saved_attr"]


def _tensor(i):
    """The i-th saved tensor (None where the node did not need it)."""
    def get(node):
        return node.saved_tensors[i]
    return get


def _operand(i):
    """Operand i of a binary elementwise node: the saved tensor, or the Python scalar
    it was given as a 0-d tensor (as PyTorch wraps it), None where it was not saved."""
    def get(node):
        t = node.saved_tensors[i] if node._saved is not None else None
        if t is None:
            scalars = node.__dict__.get("scalars")
            s = scalars[i] if scalars else None
            if s is not None:
                from ..ops.creation import tensor
                return tensor(s)
        return t
    return get


def _exponent(node):
    """pow's exponent: the Python number for a scalar power, else the saved tensor."""
    scalars = node.__dict__.get("scalars")
    if scalars and scalars[1] is not None:
        return scalars[1]
    return node.saved_tensors[1]


def _sizes(i):
    def get(node):
        return tuple(node.shapes[i])
    return get


def _const(value):
    return lambda node: value


def _geom(field):
    def get(node):
        v = getattr(node.geom, field)
        return tuple(v) if isinstance(v, (tuple, list)) else v
    return get


def _mat2_of_linear(node):
    w = node.saved_tensors[1]
    return None if w is None else w.t()


_BINARY = {"self": _operand(0), "other": _operand(1)}
_RESULT = {"result": _tensor(-1)}

TABLE = {
    "MulBackward0": _BINARY,
    "DivBackward0": _BINARY,
    "PowBackward0": {"self": _tensor(0), "exponent": _exponent},
    "MmBackward0": {"self": _tensor(0), "mat2": _tensor(1),
                    "self_sym_sizes": _sizes(0), "mat2_sym_sizes": _sizes(1)},
    "AddmmBackward0": {"mat1": _tensor(0), "mat2": _mat2_of_linear,
                       "alpha": _const(1), "beta": _const(1)},
    "ExpBackward0": _RESULT,
    "TanhBackward0": _RESULT,
    "SigmoidBackward0": _RESULT,
    "ReluBackward0": _RESULT,
    "ConvolutionBackward0": {"input": _tensor(0), "weight": _tensor(1),
                             "stride": _geom("stride"), "padding": _geom("padding"),
                             "dilation": _geom("dilation"), "groups": _geom("groups"),
                             "transposed": _const(False)},
}


# unary elementwise nodes whose saved value differs from PyTorch's (it saves erfinv's
# input; nbtorch its output): no generic name
_NOT_GENERIC = {"ErfinvBackward0"}


def _unary_names(node):
    """The names of a unary elementwise node: its input as `self` where it saved it,
    its output as `result` (PyTorch's names for them, checked for ~30 ops)."""
    from ..ops._elementwise import Binary, Elementwise
    cls = node._forward_cls
    if (cls is None or not issubclass(cls, Elementwise) or issubclass(cls, Binary)
            or type(node).__name__ in _NOT_GENERIC):
        return {}
    save = getattr(cls, "save", "")
    names = {}
    if save in ("x", "x out"):
        names["self"] = _tensor(0)
    if save in ("out", "x out"):
        names["result"] = _tensor(1)
    return names


def saved_attr(node, name):
    """`node._saved_<x>` by PyTorch's name, or PyTorch's AttributeError."""
    names = TABLE.get(type(node).__name__)
    if names is None:
        names = _unary_names(node)
    getter = names.get(name[len("_saved_"):])
    if getter is None or not name.startswith("_saved_"):
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '{name}'")
    return getter(node)
