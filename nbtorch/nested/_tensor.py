"""`NestedTensor`: the jagged layout (NJT), a `Tensor` subclass over values and offsets.

A nested tensor of B components with one ragged dim (at position ``_ragged_idx`` >= 1) has
shape ``(B, ..., j, ...)``. Its components live in one tensor ``_values``, the components
laid end to end along the ragged dim: ``_values`` has the nested shape without the batch
dim and with the ragged dim of size sum-of-lengths, and component i is
``_values.narrow(r - 1, offsets[i], length_i)`` (``r = _ragged_idx``). ``_offsets`` is an
int64 (B+1) tensor; ``_lengths`` (B), when given, makes components shorter than the gaps
between offsets ("holes", from ``nested_tensor_from_jagged(lengths=...)`` or
``torch.nested.narrow``). A transpose moves the ragged dim by transposing ``_values``.

Autograd: ``_values`` is held detached; `FromValues` (values -> nested) and `Values`
(nested -> values) are the two bridges every op goes through, so a nested tensor has its own
node (hooks, ``retain_grad``, ``autograd.grad`` with respect to it work) and its gradient
is a nested tensor of the same structure. A nested tensor has no strided buffer: what dense
kernels read (``_array``, strides, storage data) raises NotImplementedError naming the op.
"""
import os

from .._calling_op import calling_op
from .._tensor import Tensor, Size
from .._torch_function import _ACTIVE, activate
from ..autograd.function import Function
from ._int import nested_int_for

__all__ = ["NestedTensor", "make_njt", "values_of", "from_values", "nested_error",
           "FromValues", "Values"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _calling_op():
    return calling_op(_HERE)


def nested_error(op, layout="torch.jagged"):
    """NotImplementedError for op `op`, which has no nested-tensor implementation."""
    return NotImplementedError(
        f"aten.{op}.default: '{op}' is not supported for nested tensors (layout {layout}) "
        "in nbtorch; use unbind() to work on the components or to_padded_tensor() to get a "
        "dense tensor")


class _NestedStorage:
    """A nested tensor's storage slot: a version counter and a device, no data."""

    __slots__ = ("device", "version", "__weakref__")

    def __init__(self, device):
        self.device, self.version = device, 0

    @property
    def data(self):
        raise nested_error(_calling_op())

    def nbytes(self):
        return self.data.nbytes


def _refuse(name):
    def get(self):
        raise nested_error(_calling_op(), self.layout)
    get.__name__ = name
    return property(get)


class NestedTensor(Tensor):
    """A jagged nested tensor (see the module docstring); ops reach it through
    ``__torch_function__`` (``_dispatch.py``)."""

    _array = _refuse("_array")
    _strides = _refuse("_strides")
    _offset = _refuse("_offset")
    _arr = _refuse("_arr")
    is_sparse = False
    is_quantized = False
    _sparse_layout = False

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        from ._dispatch import torch_function
        return torch_function(func, types, args, kwargs or {})

    # ---- metadata -------------------------------------------------------------------
    @property
    def is_nested(self):
        return True

    @property
    def layout(self):
        from .._torch_extras import jagged
        return jagged

    def values(self):
        """The components laid end to end (differentiable, shares memory)."""
        return values_of(self)

    def offsets(self):
        return self._offsets

    def lengths(self):
        return self._lengths

    def _lengths_host(self):
        """The components' lengths as a list of ints (cached)."""
        got = self.__dict__.get("_len_list")
        if got is None:
            o = self._offsets.cpu().numpy()
            got = ([int(v) for v in self._lengths.cpu().numpy()] if self._lengths is not None
                   else [int(o[i + 1] - o[i]) for i in range(len(o) - 1)])
            self.__dict__["_len_list"] = got
        return got

    def _starts_host(self):
        return [int(v) for v in self._offsets.cpu().numpy()[:-1]]

    @property
    def _max_seqlen(self):
        m = self.__dict__.get("_max_seqlen_given")
        return m if m is not None else max(self._lengths_host(), default=0)

    @property
    def _min_seqlen(self):
        m = self.__dict__.get("_min_seqlen_given")
        return m if m is not None else min(self._lengths_host(), default=0)

    def numel(self):
        return self._values.numel() if self._lengths is None else \
            sum(self._lengths_host()) * (self._values.numel() //
                                         max(self._values._shape[self._ragged_idx - 1], 1))

    nelement = numel

    def dim(self):
        return len(self._shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._shape)
        from ..ops._common import normalize_dim
        return self._shape[normalize_dim(dim, len(self._shape))]

    def stride(self, dim=None):
        """PyTorch's strides: the batch stride (``3*j1``...) before the values' strides."""
        r = self._ragged_idx
        per_row = self._values.numel() // max(self._values._shape[r - 1], 1)
        s = (self._j * per_row,) + tuple(self._values.stride())
        return s if dim is None else s[dim]

    def is_contiguous(self, memory_format=None):
        return self._lengths is None and self._values.is_contiguous()

    def element_size(self):
        return self._values.element_size()

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def is_complex(self):
        return self.dtype.is_complex

    def __len__(self):
        return self._shape[0]

    def __iter__(self):
        return iter(self.unbind())

    def __bool__(self):
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")

    def __repr__(self, *, tensor_contents=None):
        size = "(" + ", ".join(repr(s) for s in self._shape) + ")"
        extra = ""
        if self.grad_fn is not None:
            extra = f", grad_fn=<{self.grad_fn.name()} object at {hex(id(self.grad_fn))}>"
        elif self._requires_grad:
            extra = ", requires_grad=True"
        return (f"NestedTensor(size={size}, offsets={self._offsets!r}{extra}, "
                f"contiguous={self.is_contiguous()})")

    __str__ = __repr__

    def __format__(self, spec):
        return repr(self)

    def tolist(self):
        raise RuntimeError("tolist() is not supported for nested tensors, got NestedTensor "
                           "(unbind() it first)")

    def numpy(self, *, force=False):
        raise RuntimeError(".numpy() is not supported for nested tensors (layout "
                           "torch.jagged): use to_padded_tensor() or unbind() first")

    def __array__(self, dtype=None, copy=None):
        return self.numpy()

    def data_ptr(self):
        return self._values.data_ptr()

    def storage_offset(self):
        return self._values.storage_offset()

    @property
    def data(self):
        return self.detach()

    def _view(self, shape, strides, offset=None):
        raise nested_error(_calling_op())

    def detach(self):
        return make_njt(self._values, self)

    def _bump(self):
        self._storage.version += 1

    # ---- components -----------------------------------------------------------------
    def unbind(self, dim=0):
        """The B components (differentiable views of the values)."""
        if dim != 0:
            raise RuntimeError("unbind(): only supported for NestedTensor on dim=0")
        v = values_of(self)
        r = self._ragged_idx - 1
        if self._lengths is None:
            return tuple(v.split(self._lengths_host(), r))
        return tuple(v.narrow(r, s, n) for s, n in zip(self._starts_host(),
                                                         self._lengths_host()))

    def to_padded_tensor(self, padding, output_size=None):
        """A dense tensor: the components padded with `padding` to the longest (or to
        `output_size`) and stacked."""
        from ._ops import to_padded
        return to_padded(self, padding, output_size)

    def __getitem__(self, key):
        from ._shape import getitem
        return getitem(self, key)

    def __reduce_ex__(self, proto):
        from ._build import _rebuild_njt
        return (_rebuild_njt, (self._values.detach(), self._offsets, self._lengths,
                               self._ragged_idx, self._requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        t = make_njt(self._values.clone(), self)
        t.requires_grad = self.requires_grad
        memo[id(self)] = t
        return t


def make_njt(values, like=None, offsets=None, lengths=None, ragged_idx=None, storage=None):
    """A nested tensor over `values` (used as given: no copy, no autograd), with the offsets,
    lengths and ragged dim of `like` unless given."""
    if like is not None:
        offsets = like._offsets if offsets is None else offsets
        lengths = like._lengths if lengths is None and offsets is like._offsets else lengths
        ragged_idx = like._ragged_idx if ragged_idx is None else ragged_idx
    ragged_idx = ragged_idx or 1
    if not _ACTIVE[0]:          # switched off since the class was defined (tests do so)
        activate()
    t = Tensor.__new__(NestedTensor)
    t._storage = storage if storage is not None else _NestedStorage(values.device)
    j = nested_int_for(lengths if lengths is not None else offsets)
    vs = tuple(values._shape)
    t._shape = (offsets._shape[0] - 1,) + vs[:ragged_idx - 1] + (j,) + vs[ragged_idx:]
    t.dtype, t.device = values.dtype, values.device
    t._requires_grad, t._grad, t.grad_fn = False, None, None
    t._output_nr, t._base, t._hooks = 0, None, None
    t._retains_grad, t._accumulator, t._is_param = False, None, False
    t._values, t._offsets, t._lengths, t._ragged_idx, t._j = \
        values, offsets, lengths, ragged_idx, j
    if like is not None and like._offsets is offsets and like._lengths is lengths:
        for k in ("_len_list", "_max_seqlen_given", "_min_seqlen_given"):
            if k in like.__dict__:
                t.__dict__[k] = like.__dict__[k]
    return t


class FromValues(Function):
    """values -> nested tensor (a view: the gradient is the nested gradient's values)."""

    _backward_name = "NestedViewFromJaggedBackward0"

    @staticmethod
    def forward(ctx, values, like, offsets, lengths, ragged_idx):
        return make_njt(values.detach(), like, offsets, lengths, ragged_idx)

    @staticmethod
    def backward(ctx, g):
        return (values_of(g) if isinstance(g, NestedTensor) else g), None, None, None, None


class Values(Function):
    """nested tensor -> its values (the gradient: a nested tensor of the same structure)."""

    _backward_name = "NestedGetValuesBackward0"

    @staticmethod
    def forward(ctx, nt):
        ctx.like = make_njt(nt._values, nt)     # the structure (holds no graph)
        return nt._values.detach()

    @staticmethod
    def backward(ctx, g):
        return from_values(g, ctx.like)


def values_of(nt):
    """The values of nested `nt`, recorded (`Values`) when `nt` requires grad."""
    from ..autograd import grad_mode
    if nt._requires_grad and grad_mode.STATE.enabled:
        return Values.apply(nt)
    return nt._values


def from_values(values, like=None, offsets=None, lengths=None, ragged_idx=None):
    """A nested tensor over `values`, recorded (`FromValues`) when they require grad."""
    from ..autograd import grad_mode
    if values._requires_grad and grad_mode.STATE.enabled:
        if like is not None and like._requires_grad:
            like = make_njt(like._values, like)     # its structure only: no edge to it
        return FromValues.apply(values, like, offsets, lengths, ragged_idx)
    return make_njt(values, like, offsets, lengths, ragged_idx)
