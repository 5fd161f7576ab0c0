"""The strided nested layout (``torch.nested.nested_tensor(...)`` without a layout): a
list of components of the same dim, any of whose dims may differ.

PyTorch stores them in one buffer with per-component sizes and strides; nbtorch keeps the
component tensors themselves (detached; `FromComponents` and `Components` bridge the
autograd graph). Ops run per component through ``__torch_function__``: elementwise ops,
``linear``/``matmul``, norms, attention, and the dim-taking ops listed in ``_DIM_ARGS``
(with the dim shifted past the batch dim). Others raise NotImplementedError naming the op
and the layout. PyTorch prefers the jagged layout; so does nbtorch (``_tensor.py``).
"""

from .._tensor import Tensor
from .._torch_function import _ACTIVE, DisableTorchFunctionSubclass, activate
from ..autograd.function import Function
from ..ops._common import normalize_dim
from ._tensor import _NestedStorage, _refuse, nested_error

__all__ = ["NestedStridedTensor", "make_strided", "from_components"]


class _Irregular:
    """The size of a dim whose components differ (compares by the sizes)."""

    __slots__ = ("sizes",)

    def __init__(self, sizes):
        self.sizes = tuple(sizes)

    def __eq__(self, other):
        return isinstance(other, _Irregular) and other.sizes == self.sizes

    def __hash__(self):
        return hash(self.sizes)

    def __repr__(self):
        return "irregular"


class NestedStridedTensor(Tensor):
    """A nested tensor of layout ``torch.strided`` (see the module docstring)."""

    _array = _refuse("_array")
    _strides = _refuse("_strides")
    _offset = _refuse("_offset")
    _arr = _refuse("_arr")
    is_sparse = False
    is_quantized = False
    _sparse_layout = False

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return _torch_function(func, args, kwargs or {})

    @property
    def is_nested(self):
        return True

    @property
    def shape(self):
        raise RuntimeError("Internal error: NestedTensorImpl doesn't support sizes. Please "
                           "file an issue.")

    def size(self, dim=None):
        if dim is None:
            return self.shape
        d = normalize_dim(dim, len(self._shape))
        s = self._shape[d]
        if isinstance(s, _Irregular):
            raise RuntimeError(f"Given dimension {d} is irregular and does not have a size.")
        return s

    def dim(self):
        return len(self._shape)

    def numel(self):
        return sum(c.numel() for c in self._comps)

    def stride(self, dim=None):
        raise RuntimeError("Internal error: NestedTensorImpl doesn't support strides. Please "
                           "file an issue.")

    def is_contiguous(self, memory_format=None):
        return True

    def element_size(self):
        return self._comps[0].element_size() if self._comps else 4

    def __len__(self):
        return self._shape[0]

    def __iter__(self):
        return iter(self.unbind())

    def __bool__(self):
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")

    def __repr__(self, *, tensor_contents=None):
        body = ",\n".join("  " + repr(c).replace("\n", "\n  ") for c in self._comps)
        return f"nested_tensor([\n{body}\n])"

    __str__ = __repr__

    def __format__(self, spec):
        return repr(self)

    def numpy(self, *, force=False):
        raise RuntimeError(".numpy() is not supported for nested tensors: use "
                           "to_padded_tensor() or unbind() first")

    def detach(self):
        return make_strided(list(self._comps))

    @property
    def data(self):
        return self.detach()

    def unbind(self, dim=0):
        if dim != 0:
            raise RuntimeError("unbind(): only supported for NestedTensor on dim=0")
        from ..autograd import grad_mode
        if self._requires_grad and grad_mode.STATE.enabled:
            out = Components.apply(self)
            return out if isinstance(out, tuple) else (out,)
        return tuple(self._comps)

    def to_padded_tensor(self, padding, output_size=None):
        import nbtorch
        import nbtorch.nn.functional as F
        comps = self.unbind()
        target = [max(c._shape[d] for c in comps) for d in range(self.dim() - 1)]
        batch = len(comps)
        if output_size is not None:
            batch, target = output_size[0], list(output_size[1:])
        padded = []
        for c in comps:
            pad = []
            for have, want in zip(reversed(c._shape), reversed(target)):
                pad += [0, want - have]
            padded.append(F.pad(c, pad, value=padding) if any(pad) else c)
        out = nbtorch.stack(padded)
        if batch > len(padded):
            out = F.pad(out, [0, 0] * len(target) + [0, batch - len(padded)], value=padding)
        return out

    def values(self):
        import nbtorch
        return nbtorch.cat([c.reshape(-1) for c in self.unbind()])

    def _bump(self):
        self._storage.version += 1


def make_strided(comps):
    """A strided-layout nested tensor holding `comps` as they are (no autograd)."""
    if not _ACTIVE[0]:
        activate()
    t = Tensor.__new__(NestedStridedTensor)
    dev = comps[0].device if comps else None
    t._storage = _NestedStorage(dev)
    shape = [len(comps)]
    for d in range(comps[0].dim() if comps else 0):
        sizes = [c._shape[d] for c in comps]
        shape.append(sizes[0] if len(set(sizes)) == 1 else _Irregular(sizes))
    t._shape = tuple(shape)
    t.dtype = comps[0].dtype if comps else None
    t.device = dev
    t._requires_grad, t._grad, t.grad_fn = False, None, None
    t._output_nr, t._base, t._hooks = 0, None, None
    t._retains_grad, t._accumulator, t._is_param = False, None, False
    t._comps = tuple(comps)
    return t


class FromComponents(Function):
    _backward_name = "NestedTensorFromTensorListBackward0"

    @staticmethod
    def forward(ctx, *comps):
        return make_strided([c.detach() for c in comps])

    @staticmethod
    def backward(ctx, g):
        return g.unbind()


class Components(Function):
    _backward_name = "UnbindBackward0"

    @staticmethod
    def forward(ctx, nt):
        return tuple(c.detach() for c in nt._comps)

    @staticmethod
    def backward(ctx, *gs):
        return from_components(list(gs))


def from_components(comps):
    """A strided nested tensor of `comps`, recorded when one requires grad."""
    from ..autograd import grad_mode
    if grad_mode.STATE.enabled and any(c._requires_grad for c in comps):
        return FromComponents.apply(*comps)
    return make_strided(comps)


# ---- ops, per component --------------------------------------------------------------

# op -> the (position, keyword) of its dim arguments, shifted past the batch dim
_DIM_ARGS = {"softmax": ((1, "dim"),), "log_softmax": ((1, "dim"),),
             "transpose": ((1, "dim0"), (2, "dim1")), "unsqueeze": ((1, "dim"),),
             "squeeze": ((1, "dim"),), "sum": ((1, "dim"),), "mean": ((1, "dim"),),
             "amax": ((1, "dim"),), "amin": ((1, "dim"),)}
_PER_COMPONENT = frozenset(["linear", "matmul", "__matmul__", "bmm", "layer_norm",
                            "rms_norm", "scaled_dot_product_attention", "to", "clone",
                            "contiguous", "dropout"])


def _shift(nt, name, args, kwargs):
    args, kwargs = list(args), dict(kwargs)
    for pos, key in _DIM_ARGS[name]:
        holder, k = (kwargs, key) if key in kwargs else (args, pos) if len(args) > pos \
            else (None, None)
        if holder is None:
            raise RuntimeError(f"{name}(): a dim is required for nested tensors")
        d = normalize_dim(holder[k], nt.dim() + (name == "unsqueeze"))
        if d == 0:
            raise RuntimeError(f"{name}(): not supported for NestedTensor on dim=0")
        holder[k] = d - 1
    return args, kwargs


def _torch_function(func, args, kwargs):
    from ._dispatch import HANDLERS, op_name, elementwise, _PASSTHROUGH
    name = op_name(func)
    nts = [a for a in list(args) + list(kwargs.values()) if isinstance(a, NestedStridedTensor)]
    if name in _PASSTHROUGH:
        with DisableTorchFunctionSubclass():
            return func(*args, **kwargs)
    if name == "unbind":
        return args[0].unbind(*args[1:], **kwargs)
    if name == "detach":
        return args[0].detach()
    if name in _DIM_ARGS:
        args, kwargs = _shift(nts[0], name, args, kwargs)
    elif name not in _PER_COMPONENT and HANDLERS.get(name) is not elementwise:
        raise nested_error(name.strip("_") if name.startswith("__") else name,
                           "torch.strided")
    if name.endswith("_") and not name.endswith("__"):
        raise nested_error(name, "torch.strided")
    b = nts[0]._shape[0]
    if any(t._shape[0] != b for t in nts):
        raise RuntimeError(f"{name}(): nested tensors of {b} and "
                           f"{[t._shape[0] for t in nts if t._shape[0] != b][0]} components")
    parts = [t.unbind() for t in nts]
    where = {id(t): i for i, t in enumerate(nts)}
    outs = []
    for i in range(b):
        def pick(a):
            return parts[where[id(a)]][i] if isinstance(a, NestedStridedTensor) else a
        outs.append(func(*[pick(a) for a in args], **{k: pick(v) for k, v in kwargs.items()}))
    if all(isinstance(o, Tensor) for o in outs):
        return from_components(outs)
    return outs
