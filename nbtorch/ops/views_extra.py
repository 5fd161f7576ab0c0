"""The rest of PyTorch's view family: in-place view ops (t_, transpose_, squeeze_, ...),
the *_copy ops (a view, copied: what functionalized graphs call), as_strided_scatter,
split aliases, fill_diagonal_, nonzero_static, unravel_index, isin, trace, renorm,
sum_to_size, and small predicates.

In-place view ops change the tensor's own geometry: `self` takes the view's shape,
strides, offset and autograd node (PyTorch refuses them on leaves that require grad).
"""
import builtins

import numpy as np

from .. import _dtype
from .._overlap import check_no_partial_overlap
from .._tensor import Tensor, Size
from ..autograd import grad_mode
from .._limited import no_kernel
from ._common import normalize_dim, tensor_method
from .diagonal import ViewScatter

__all__ = ["alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy", "narrow_copy",
           "permute_copy", "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy",
           "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy", "unfold_copy",
           "unsqueeze_copy", "view_copy", "as_strided_scatter", "split_with_sizes",
           "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "nonzero_static",
           "unravel_index", "isin", "trace", "renorm", "is_same_size", "is_nonzero",
           "is_signed", "ravel", "detach", "fill", "zero_", "range", "e", "pi", "inf", "nan",
           "newaxis", "typename", "is_storage", "is_complex", "resize_as_"]

e, pi, inf, nan, newaxis = np.e, np.pi, float("inf"), float("nan"), None


def _become(self, view):
    """Give `self` the geometry and history of `view` (a view of self's own storage)."""
    if grad_mode.STATE.enabled and self._requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    self._shape, self._strides, self._offset = view._shape, view._strides, view._offset
    self._arr = None
    if view.grad_fn is not None:
        self.grad_fn, self._output_nr = view.grad_fn, view._output_nr
    return self


def _inplace_view(name):
    def method(self, *args, **kwargs):
        return _become(self, getattr(Tensor, name)(self, *args, **kwargs))
    method.__name__ = name + "_"
    method.__doc__ = f"In place: self becomes self.{name}(...) (same storage)."
    return method


for _n in ("t", "transpose", "squeeze", "unsqueeze", "swapaxes", "swapdims", "as_strided"):
    setattr(Tensor, _n + "_", _inplace_view(_n))


def _copy_of(name):
    def fn(input, *args, **kwargs):
        out = getattr(Tensor, name)(input, *args, **kwargs)
        if isinstance(out, (tuple, list)):
            return type(out)(o.clone() for o in out)
        return out.clone()
    fn.__name__ = name + "_copy"
    fn.__doc__ = f"``input.{name}(...)`` as a new tensor (a copy, not a view)."
    return fn


(as_strided_copy, detach_copy, diagonal_copy, narrow_copy, permute_copy, select_copy,
 split_copy, squeeze_copy, t_copy, transpose_copy, unbind_copy, unfold_copy, unsqueeze_copy,
 view_copy) = (_copy_of(n) for n in (
     "as_strided", "detach", "diagonal", "narrow", "permute", "select", "split", "squeeze",
     "t", "transpose", "unbind", "unfold", "unsqueeze", "view"))


def alias_copy(input):
    """A copy of input (the copy of its alias view)."""
    return input.clone()


split_with_sizes_copy = split_copy
Tensor.narrow_copy = narrow_copy


def slice_copy(input, dim=0, start=None, end=None, step=1):
    """input[start:end:step] along dim, copied."""
    d = normalize_dim(dim, input.dim())
    return input[(slice(None),) * d + (slice(start, end, step),)].clone()


@tensor_method()
def split_with_sizes(self, split_sizes, dim=0):
    """Views of consecutive pieces with the given sizes (they must sum to the dim)."""
    return self.split(list(split_sizes), dim)


unsafe_split = Tensor.unsafe_split = Tensor.split
unsafe_chunk = Tensor.unsafe_chunk = Tensor.chunk
unsafe_split_with_sizes = Tensor.unsafe_split_with_sizes = split_with_sizes


@tensor_method()
def as_strided_scatter(self, src, size, stride, storage_offset=None):
    """A copy of self whose as_strided(size, stride, storage_offset) view is src."""
    shape = self.as_strided(size, stride, storage_offset).shape
    if src.shape != shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(src.shape)}, slice size = {list(shape)}")
    base = self if self.is_contiguous() and self._offset == 0 else self.contiguous()
    return ViewScatter.apply(base, src.to(self.dtype), "as_strided",
                             (tuple(size), tuple(stride), storage_offset))


@tensor_method()
def fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal (all dims equal for 3+ dims; tall matrices restart every
    cols + 1 rows when wrap=True) in place."""
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    n = self._shape[0]
    if self.dim() > 2 and any(s != n for s in self._shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    m = min(self._shape)
    rows = np.arange(m)
    if wrap and self.dim() == 2 and n > self._shape[1] + 1:
        step = self._shape[1] + 1
        rows = np.concatenate([np.arange(s, min(s + m, n)) for s in builtins.range(0, n, step)])
        cols = np.concatenate([np.arange(min(m, n - s)) for s in builtins.range(0, n, step)])
        key = (rows, cols)
    else:
        key = (rows,) * self.dim()
    from .creation import tensor
    return self.index_put_(tuple(tensor(k, device=self.device) for k in key),
                           tensor(fill_value, dtype=self.dtype, device=self.device))


def _inplace_result(name):
    def method(self, *args, **kwargs):
        check_no_partial_overlap(self, (*args, *kwargs.values()))   # x.index_copy_(0, i, x[:3])
        return self.copy_(getattr(Tensor, name)(self, *args, **kwargs))
    method.__name__ = name + "_"
    return method


for _n in ("tril", "triu", "cumsum", "cumprod", "index_copy", "renorm"):
    setattr(Tensor, _n + "_", _inplace_result(_n))


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero padded with `fill_value` rows (or truncated) to exactly `size` rows."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"{size}")
    nz = input.nonzero()
    n = nz._shape[0]
    if n >= size:
        return nz[:size]
    from .creation import full
    from .joining import cat
    return cat([nz, full((size - n, nz._shape[1]), fill_value, dtype=_dtype.int64,
                         device=input.device)], 0)


Tensor.nonzero_static = lambda self, *, size, fill_value=-1: nonzero_static(
    self, size=size, fill_value=fill_value)


def unravel_index(indices, shape):
    """The coordinates in `shape` of flat `indices` (row-major), one tensor per dim."""
    if not isinstance(indices, Tensor):
        from .creation import tensor
        indices = tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype is _dtype.bool:
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"{indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " f"{shape}")
    total = int(np.prod(shape, dtype=np.int64))
    out, rest = [], indices.to(_dtype.int64) % max(total, 1)     # wraps, as PyTorch
    for k in reversed(builtins.range(len(shape))):
        out.append(rest % shape[k])
        rest = rest.div(shape[k], rounding_mode="floor")
    return tuple(reversed(out))


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of `elements` occurs in `test_elements` (NaN never does),
    by a binary search (searchsorted) in the sorted test elements."""
    from .creation import tensor
    like = elements if isinstance(elements, Tensor) else test_elements
    el = elements if isinstance(elements, Tensor) else tensor(elements, device=like.device)
    te = test_elements if isinstance(test_elements, Tensor) else \
        tensor(test_elements, device=like.device)
    common = _dtype.promote_types(el.dtype, te.dtype)
    el, te = el.detach().to(common), te.detach().to(common).reshape(-1)
    if common.is_floating_point:
        te = te[te == te]                    # NaN matches nothing (and would break the search)
    if te.numel() == 0:
        found = el.new_zeros(el.shape, dtype=_dtype.bool)
    else:
        srt = te.sort().values
        from .searching import searchsorted
        pos = searchsorted(srt, el.reshape(-1)).clamp(max=te.numel() - 1)
        found = (srt[pos] == el.reshape(-1)).reshape(el.shape)
    return ~found if invert else found


@tensor_method()
def trace(self):
    """The sum of the main diagonal of a 2-D tensor."""
    if self.dtype.limited:
        no_kernel('trace', self.dtype)
    if self.dim() != 2:
        raise RuntimeError("trace: expected a matrix, but got tensor with dim "
                           f"{self.dim()}")
    d = self.diagonal()
    return d.sum() if self.dtype.is_floating_point or self.dtype.is_complex else \
        d.sum(dtype=_dtype.int64)


@tensor_method()
def renorm(self, p, dim, maxnorm):
    """Each slice along `dim` rescaled to have p-norm at most `maxnorm`."""
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if self.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {self.dim()} "
                           f"dimensions")
    d = normalize_dim(dim, self.dim())
    others = tuple(i for i in builtins.range(self.dim()) if i != d)
    from .reduction_stats import vector_norm
    norm = vector_norm(self, p, others, keepdim=True)
    from .pointwise_select import where
    return self * where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


@tensor_method()
def sum_to_size(self, *size):
    """Sum self down to `size` (a shape self broadcasts from)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = tuple(size[0])
    from ._common import sum_to
    return sum_to(self, tuple(size))


@tensor_method()
def is_same_size(self, other):
    return self._shape == other._shape


@tensor_method()
def is_nonzero(self):
    """The truth of a one-element tensor (RuntimeError otherwise)."""
    if self.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if self.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item())


@tensor_method()
def is_signed(self):
    return self.dtype.is_signed


def is_complex(input):
    return input.is_complex()


def ravel(input):
    return input.reshape(-1)


def detach(input):
    return input.detach()


def fill(input, value):
    """A new tensor like input filled with `value`."""
    return input.clone().fill_(value)


def zero_(input):
    return input.zero_()


def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False,
          out=None, layout=None):
    """Deprecated PyTorch range: like arange but `end` is included."""
    if end is None:
        start, end = 0, start
    from .creation import arange
    n = int(np.floor((end - start) / step)) + 1
    dtype = _dtype.get_default_dtype() if dtype is None else dtype
    return arange(n, dtype=dtype, device=device, requires_grad=False).mul(step).add(
        start).requires_grad_(requires_grad)


def typename(obj):
    """The PyTorch type name of a tensor ('torch.FloatTensor') or an object's class path."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    mod = getattr(cls, "__module__", "") or ""
    return (mod + "." if mod and mod != "builtins" else "") + cls.__qualname__


def is_storage(obj):
    from .._tensor import Storage
    return isinstance(obj, Storage)


@tensor_method()
def resize_(self, *size, memory_format=None):
    """Give self `size` with contiguous strides over its storage, in place: the storage is
    kept while it is big enough, else self moves to a bigger one holding the old
    elements first (views made before keep the old storage)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = tuple(size[0])
    if any(not isinstance(s, (int, np.integer)) or s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(size)}")
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = tuple(int(s) for s in size)
    n = int(np.prod(shape, dtype=np.int64))
    cap = self._storage.data.size
    if self._offset + n > cap:
        from .._tensor import empty
        grown = empty((self._offset + n,), self.dtype, self.device)
        if cap:
            grown.narrow(0, 0, cap).copy_(self._view((cap,), (1,), 0))
        self._storage = grown._storage
    from .._memory_format import strides_for
    self._shape, self._offset = Size(shape), self._offset
    self._strides = strides_for(shape, memory_format)
    self._arr = None
    self._bump()
    return self


@tensor_method()
def resize_as_(self, the_template, memory_format=None):
    return self.resize_(the_template.shape, memory_format=memory_format)
