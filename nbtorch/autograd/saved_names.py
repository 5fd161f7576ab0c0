"""`grad_fn._saved_<name>`: PyTorch's names for what a built-in node saved.

PyTorch's generated nodes expose each saved value as `_saved_<name>`
(MulBackward0._saved_self, PowBackward0._saved_exponent ...). nbtorch's nodes
keep theirs in `ctx._saved` (plus scalars and shapes); this table maps
PyTorch's names onto them, per node name. A saved tensor is read through the
same checks as backward's (freed after backward: PyTorch's RuntimeError).
"""
__all__ = ["saved_attr", "SavedTensor"]


def _tensor(i):
    """The i-th saved tensor (None where the node did not need it)."""
    def get(node):
        return node.saved_tensors[i]
    get.slot = i
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
    get.slot = i
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
    """`node._saved_<x>` / `node._raw_saved_<x>` by PyTorch's name, or PyTorch's
    AttributeError."""
    names = TABLE.get(type(node).__name__)
    if names is None:
        names = _unary_names(node)
    raw = name.startswith("_raw_saved_")
    getter = names.get(name[len("_raw_saved_" if raw else "_saved_"):])
    if getter is None or (raw and not hasattr(getter, "slot")):
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '{name}'")
    return SavedTensor(node, getter.slot) if raw else getter(node)


class SavedTensor:
    """`grad_fn._raw_saved_<x>`: one saved slot of a node, to give it its own pack and
    unpack hooks (PyTorch's torch._C._autograd.SavedTensor)."""

    def __init__(self, node, slot):
        self._node, self._slot = node, slot

    def register_hooks(self, pack_hook, unpack_hook):
        """Replace the saved tensor with `pack_hook(tensor)` now; backward reads
        `unpack_hook(packed)` instead."""
        from .function import _RELEASED
        from .saved_hooks import Packed
        if not (callable(pack_hook) and callable(unpack_hook)):
            raise TypeError("register_hooks(): incompatible function arguments: expected "
                            "two callables")
        saved = self._node._saved
        if saved is _RELEASED:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor after it has been freed. Saved "
                "intermediate values of the graph are freed when you call .backward() or "
                "autograd.grad(). Specify retain_graph=True if you need to backward through "
                "the graph a second time or if you need to access saved variables after "
                "calling backward.")
        slot = self._slot % len(saved) if saved else 0
        s = saved[slot] if saved else None
        if s is None:
            raise RuntimeError("Calling register_hooks on a saved tensor with value None is "
                               "forbidden")
        if s[0].__class__ is Packed:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have "
                               "already been set. Hint: only one pair of hooks is allowed "
                               "at a time.")
        packed = (Packed(pack_hook(s[0]), unpack_hook),) + tuple(s[1:])
        self._node._saved = saved[:slot] + (packed,) + saved[slot + 1:]
