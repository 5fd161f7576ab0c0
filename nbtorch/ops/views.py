"""View ops: new (shape, strides, offset) over the same storage, never a copy.

`reshape` copies only when no view exists, exactly as PyTorch. Each view is an
autograd Function whose backward maps the gradient back to the input's shape.
"""
import numpy as np

from .. import _dtype
from .._dtype import type_name
from .._tensor import Storage, Tensor, Size, contiguous_strides, _layout, _LAYOUTS
from ..autograd import function as _function, grad_mode
from ..autograd.function import Function, renamed
from ._common import normalize_dim, sum_to, tensor_method

__all__ = ["as_strided", "reshape", "transpose", "swapaxes", "swapdims", "permute",
           "squeeze", "unsqueeze", "flatten", "unflatten", "narrow", "select", "t",
           "movedim", "moveaxis", "diagonal", "broadcast_to", "expand_copy", "view_as_strided"]


def _view_of(x, shape, strides, offset=None):
    v = x._view(shape, strides, offset)
    return v


def _plain(x):
    """True when a view of `x` needs no autograd node and nothing watches the call (no
    capture, profiler or trace): then the view ops make it directly, as their Function's
    unrecorded forward would (x.t() on 8x16: 2.5 -> ~1 us; PyTorch 0.9). On the CPU, t(),
    transpose and permute also hand the view its array, the parent's array transposed
    (~0.1 us), which the storage would otherwise rebuild at its first use (~1.2 us:
    8x16 x.t().contiguous() 5.5 -> ~4 us)."""
    return (not (x._requires_grad and grad_mode.STATE.enabled)
            and not _function.APPLY_WRAPPERS[0] and _function.TRACE_HOOK[0] is None)


def _infer_size(shape, numel):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def _view_strides(old_shape, old_strides, new_shape):
    """Strides for viewing (old_shape, old_strides) as new_shape, or None if impossible.

    PyTorch's computeStride: split the old dims into contiguous chunks and map
    each chunk onto a run of new dims with the same element count.
    """
    if not old_shape:
        return contiguous_strides(new_shape)
    old, new = _layout(old_shape), _layout(new_shape)
    if new[2] != old[2]:
        return None
    if old[1] == old_strides or old[2] == 0:
        return new[1]                       # contiguous (or empty): the new contiguous ones
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


class View(Function):
    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x._shape
        strides = _view_strides(x._shape, x._strides, shape)
        if strides is None:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least "
                "one dimension spans across two contiguous subspaces). Use .reshape(...) "
                "instead.")
        return _view_of(x, shape, strides)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape), None


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = shape[0]
    return tuple(map(int, shape))


def _target_shape(args, numel):
    """``_infer_size(_shape_args(args), numel)`` with plain Python ints (at most one -1)
    answered in one pass (~0.4 us less per view/reshape); anything else, and every error,
    through those two."""
    shape = args
    if len(args) == 1:
        c = args[0].__class__
        if c is tuple or c is list or c is Size:
            shape = args[0]
    known, neg = 1, -1
    for i, s in enumerate(shape):
        if s.__class__ is not int or s < -1:
            return _infer_size(_shape_args(args), numel)
        if s == -1:
            if neg >= 0:
                return _infer_size(_shape_args(args), numel)
            neg = i
        else:
            known *= s
    if neg < 0:
        if known == numel:
            return tuple(shape)
    elif known and numel % known == 0:
        shape = list(shape)
        shape[neg] = numel // known
        return tuple(shape)
    return _infer_size(_shape_args(args), numel)


@tensor_method()
def view(self, *shape):
    """This tensor's data seen with another shape (no copy); error if no view exists."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int, np.integer)):
        return _view_dtype(self, shape[0])
    shape = _target_shape(shape, (_LAYOUTS.get(self._shape) or _layout(self._shape))[2])
    if _plain(self):
        strides = _view_strides(self._shape, self._strides, shape)
        if strides is not None:
            return self._view(shape, strides)
    return View.apply(self, shape)


def _view_dtype(x, dtype):
    """x's bytes read as `dtype` (PyTorch's `view(dtype)`): no copy, no conversion.

    With a different element size the last dim must be dense and scale; the result
    shares x's memory but gets no gradient (integers and bits have none).
    """
    dtype = _dtype.to_dtype(dtype)
    if dtype is x.dtype:
        return View.apply(x, x._shape)
    old, new = x.dtype.itemsize, dtype.itemsize
    shape, strides, offset = list(x._shape), list(x._strides), x._offset
    if old != new:
        what = (f"to view {type_name(x.dtype)} as {type_name(dtype)} (different element "
                "sizes)")
        if not shape:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if strides[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
        if new > old:
            k = new // old
            if shape[-1] % k:
                raise RuntimeError(f"self.size(-1) must be divisible by {k} {what}, but got "
                                   f"{shape[-1]}")
            if offset % k:
                raise RuntimeError(f"self.storage_offset() must be divisible by {k} {what}, "
                                   f"but got {offset}")
            for i in range(len(strides) - 1):
                if strides[i] % k:
                    raise RuntimeError(f"self.stride({i}) must be divisible by {k} {what}, "
                                       f"but got {strides[i]}")
            shape[-1] //= k
            strides = [s // k for s in strides[:-1]] + [1]
            offset //= k
        else:
            k = old // new
            shape[-1] *= k
            strides = [s * k for s in strides[:-1]] + [1]
            offset *= k
    data = x._storage.data
    whole = (data.size * old // new) * new // old        # old elements that fill whole new ones
    storage = Storage(data[:whole].view(dtype.np), x.device)
    storage.version = x._storage.version
    t = Tensor.__new__(Tensor)._init(storage, offset, Size(shape), tuple(strides), dtype)
    t._base = x if x._base is None else x._base
    return t


@tensor_method()
def view_as(self, other):
    return self.view(other.shape)


@tensor_method()
def reshape(self, *shape):
    """A view with the new shape when possible, else a contiguous copy."""
    shape = _target_shape(shape, (_LAYOUTS.get(self._shape) or _layout(self._shape))[2])
    strides = _view_strides(self._shape, self._strides, shape)
    if strides is not None:
        return self._view(shape, strides) if _plain(self) else View.apply(self, shape)
    return View.apply(self.contiguous(), shape)


@tensor_method()
def reshape_as(self, other):
    return self.reshape(other.shape)


class AsStrided(Function):
    @staticmethod
    def forward(ctx, x, shape, strides, offset):
        ctx.in_geometry = (x._shape, x._strides, x._offset)
        ctx.geometry = (tuple(shape), tuple(strides), offset)
        return _view_of(x, shape, strides, offset)

    @staticmethod
    def backward(ctx, g):
        from .creation import zeros
        in_shape, in_strides, in_off = ctx.in_geometry
        shape, strides, off = ctx.geometry
        from .strided_grad import as_strided_grad, contiguous, no_overlap
        if tuple(in_strides) == contiguous(in_shape) and no_overlap(shape, strides):
            gi = zeros(in_shape, dtype=g.dtype, device=g.device)   # one strided copy
            as_strided(gi, shape, strides, off - in_off).copy_(g)
            return gi, None, None, None
        return as_strided_grad(g, in_shape, in_strides, in_off, shape, strides, off), \
            None, None, None


@tensor_method()
def as_strided(self, size, stride, storage_offset=None):
    """A view with explicit size, stride and storage offset (no bounds beyond the storage)."""
    offset = self._offset if storage_offset is None else storage_offset
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {list(stride)}")
    end = offset + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else offset
    if end >= self._storage.data.size and all(size) or offset < 0:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset} requiring a storage size of "
                           f"{(end + 1) * self.itemsize} are out of bounds for storage of "
                           f"size {self._storage.data.size * self.itemsize}")
    return AsStrided.apply(self, size, stride, offset)


view_as_strided = as_strided


class Permute(Function):
    @staticmethod
    def forward(ctx, x, dims):
        inv = [0] * len(dims)
        for i, d in enumerate(dims):
            inv[d] = i
        ctx.inv = tuple(inv)
        return _view_of(x, tuple(x._shape[d] for d in dims), tuple(x._strides[d] for d in dims))

    @staticmethod
    def backward(ctx, g):
        return g.permute(ctx.inv), None


@tensor_method()
def permute(self, *dims):
    """Reorder dimensions (a view)."""
    dims = _shape_args(dims)
    if len(dims) != self.dim():
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input "
                           f"does not match the length of the desired ordering of dimensions "
                           f"i.e. input.dim() = {self.dim()} is not equal to len(dims) = "
                           f"{len(dims)}")
    ndim = len(dims)
    dims = tuple([normalize_dim(d, ndim) for d in dims])
    if len(set(dims)) != ndim:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    if _plain(self):
        v = self._view(tuple([self._shape[d] for d in dims]),
                       tuple([self._strides[d] for d in dims]))
        arr = self._arr
        if arr is not None and self.device.type == "cpu":
            v._arr = arr.transpose(dims)
        return v
    return Permute.apply(self, dims)


# PyTorch's nodes for these views (same formulas as Permute/View)
_Transpose = renamed(Permute, "TransposeBackward0")
_T = renamed(Permute, "TBackward0")
_Unsqueeze = renamed(View, "UnsqueezeBackward0")
_SQUEEZE = {n: renamed(View, n) for n in ("SqueezeBackward0", "SqueezeBackward1",
                                          "SqueezeBackward2")}


@tensor_method()
def transpose(self, dim0, dim1):
    """Swap two dimensions (a view)."""
    n = self.dim()
    d0, d1 = normalize_dim(dim0, n), normalize_dim(dim1, n)
    if n < 2 or d0 == d1:
        return Permute.apply(self, tuple(range(n))) if n else self.view(())
    dims = list(range(n))
    dims[d0], dims[d1] = d1, d0
    if _plain(self):
        shape, strides = list(self._shape), list(self._strides)
        shape[d0], shape[d1], strides[d0], strides[d1] = shape[d1], shape[d0], \
            strides[d1], strides[d0]
        v = self._view(tuple(shape), tuple(strides))
        arr = self._arr
        if arr is not None and self.device.type == "cpu":
            v._arr = arr.swapaxes(d0, d1)
        return v
    return _Transpose.apply(self, tuple(dims))


swapaxes = swapdims = transpose
Tensor.swapaxes = Tensor.swapdims = transpose


@tensor_method()
def t(self):
    """Transpose a tensor of at most 2 dims."""
    if self.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{self.dim()}D")
    if self.dim() == 2:
        if _plain(self):
            (a, b), (sa, sb) = self._shape, self._strides
            v = self._view((b, a), (sb, sa))
            arr = self._arr
            if arr is not None and self.device.type == "cpu":
                v._arr = arr.T          # its array now, not rebuilt from the storage later
            return v
        return _T.apply(self, (1, 0))
    return View.apply(self, self._shape)


Tensor.T = property(lambda self: self.permute(tuple(range(self.dim() - 1, -1, -1))))
def _matrix_transpose(name):
    def get(self):
        if self.dim() == 0:              # PyTorch returns 0-d tensors as they are
            return self
        if self.dim() < 2:
            raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of "
                               f"matrices. Got {self.dim()}-D tensor.")
        return self.transpose(-2, -1)
    return property(get)


Tensor.mT = _matrix_transpose("mT")
Tensor.H = Tensor.T
Tensor.mH = _matrix_transpose("mH")


@tensor_method()
def movedim(self, source, destination):
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    n = self.dim()
    src = [normalize_dim(s, n) for s in src]
    dst = [normalize_dim(d, n) for d in dst]
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(n) if i not in src)
    order = [o if o is not None else next(rest) for o in order]
    return self.permute(order)


moveaxis = movedim
Tensor.moveaxis = movedim


@tensor_method()
def squeeze(self, dim=None):
    """Remove size-1 dimensions (all, or those in `dim`)."""
    node = "SqueezeBackward0" if dim is None else (       # PyTorch's overloads' nodes
        "SqueezeBackward1" if isinstance(dim, int) else "SqueezeBackward2")
    if dim is None:
        dims = [i for i, s in enumerate(self._shape) if s == 1]
    else:
        dims = [normalize_dim(d, self.dim()) for d in
                ((dim,) if isinstance(dim, int) else dim)]
        dims = [d for d in dims if self.dim() and self._shape[d] == 1]
    keep = [i for i in range(self.dim()) if i not in dims]
    shape = tuple(self._shape[i] for i in keep) if dims else self._shape
    return _SQUEEZE[node].apply(self, shape)


@tensor_method()
def unsqueeze(self, dim):
    """Insert a size-1 dimension at `dim`."""
    d = normalize_dim(dim, self.dim() + 1)
    shape = list(self._shape)
    shape.insert(d, 1)
    shape = tuple(shape)
    if _plain(self):
        return self._view(shape, _view_strides(self._shape, self._strides, shape))
    return _Unsqueeze.apply(self, shape)


@tensor_method()
def flatten(self, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one (a view when possible)."""
    if self.dim() == 0:
        return self.reshape(1)
    s, e = normalize_dim(start_dim, self.dim()), normalize_dim(end_dim, self.dim())
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    n = 1
    for d in self._shape[s:e + 1]:
        n *= d
    return self.reshape(self._shape[:s] + (n,) + self._shape[e + 1:])


@tensor_method()
def unflatten(self, dim, sizes):
    d = normalize_dim(dim, self.dim())
    sizes = tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    try:
        sizes = _infer_size(sizes, self._shape[d])
    except RuntimeError as e:
        if "invalid for input of size" not in str(e):
            raise
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({self._shape[d]}) in the input tensor") from None
    return self.view(self._shape[:d] + sizes + self._shape[d + 1:])


@tensor_method()
def ravel(self):
    return self.reshape(-1)


class Expand(Function):
    @staticmethod
    def forward(ctx, x, shape, strides):
        ctx.in_shape = x._shape
        return _view_of(x, shape, strides)

    @staticmethod
    def backward(ctx, g):
        return sum_to(g, ctx.in_shape), None, None


@tensor_method()
def expand(self, *sizes):
    """Broadcast to a larger shape as a stride-0 view (-1 keeps a dim)."""
    sizes = _shape_args(sizes)
    if len(sizes) < self.dim():
        raise RuntimeError(f"expand({self.type()}{{{list(self.shape)}}}, size={list(sizes)}"
                           f"): the number of sizes provided ({len(sizes)}) must be greater or "
                           f"equal to the number of dimensions in the tensor ({self.dim()})")
    lead = len(sizes) - self.dim()
    shape, strides = [], []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a "
                                   "leading, non-existing dimension 0")
            shape.append(s)
            strides.append(0)
            continue
        n, st = self._shape[i - lead], self._strides[i - lead]
        if s == -1:
            s = n
        if n == s:
            shape.append(n)
            strides.append(st)
        elif n == 1:
            shape.append(s)
            strides.append(0)
        else:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing "
                               f"size ({n}) at non-singleton dimension {i}.  Target sizes: "
                               f"{list(sizes)}.  Tensor sizes: {list(self.shape)}")
    if _plain(self):                # Expand's unrecorded forward, without apply
        return self._view(tuple(shape), tuple(strides))
    return Expand.apply(self, tuple(shape), tuple(strides))


@tensor_method()
def expand_as(self, other):
    return self.expand(other.shape)


def broadcast_to(input, size):
    return input.expand(size)


Tensor.broadcast_to = broadcast_to


def expand_copy(input, size):
    return input.expand(size).clone()


def _slice(x, starts, lengths, steps, drop):
    offset = x._offset + sum(s * st for s, st in zip(starts, x._strides))
    shape, strides = [], []
    for d in range(x.dim()):
        if d not in drop:
            shape.append(lengths[d])
            strides.append(x._strides[d] * steps[d])
    return _view_of(x, tuple(shape), tuple(strides), offset)


class Slice(Function):
    """A strided sub-block: per dim (start, length, step); `drop` removes integer-indexed dims."""

    @staticmethod
    def forward(ctx, x, starts, lengths, steps, drop):
        ctx.in_shape = x._shape
        ctx.args = (starts, lengths, steps, drop)
        return _slice(x, starts, lengths, steps, drop)

    @staticmethod
    def backward(ctx, g):
        from .creation import zeros
        gi = zeros(ctx.in_shape, dtype=g.dtype, device=g.device)
        _slice(gi, *ctx.args).copy_(g)
        return gi, None, None, None, None


# A Slice whose last index (PyTorch applies them left to right) is an integer
Select = renamed(Slice, "SelectBackward0")


def slice_view(x, starts, lengths, steps, drop=()):
    fn = Slice
    if drop:                                     # the node PyTorch's last index makes
        shape = x._shape
        last_cut = max((d for d in range(len(shape)) if d not in drop and (
            starts[d] or lengths[d] != shape[d] or steps[d] != 1)), default=-1)
        fn = Select if max(drop) > last_cut else Slice
    return fn.apply(x, tuple(starts), tuple(lengths), tuple(steps), frozenset(drop))


@tensor_method()
def narrow(self, dim, start, length):
    """The slice [start, start+length) of `dim` (a view)."""
    d = normalize_dim(dim, self.dim())
    n = self._shape[d]
    if isinstance(start, Tensor):
        start = int(start.item())
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but "
                         f"got {start})")
    start = start + n if start < 0 else start
    if length < 0 or start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    starts = [0] * self.dim()
    starts[d] = start
    lengths = list(self._shape)
    lengths[d] = length
    return slice_view(self, starts, lengths, [1] * self.dim())


@tensor_method()
def select(self, dim, index):
    """Index one position of `dim`, removing it (a view)."""
    if self.dim() == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, self.dim())
    n = self._shape[d]
    if not -n <= index < n:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size {n}")
    index = index + n if index < 0 else index
    starts = [0] * self.dim()
    starts[d] = index
    lengths = list(self._shape)
    lengths[d] = 1
    return slice_view(self, starts, lengths, [1] * self.dim(), (d,))


@tensor_method()
def unfold(self, dimension, size, step):
    """All windows of `size` along `dimension` every `step`, as a new last dim (a view)."""
    d = normalize_dim(dimension, self.dim())
    n = self._shape[d] if self.dim() else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    shape = list(self._shape)
    strides = list(self._strides)
    shape[d] = (n - size) // step + 1
    strides[d] = self._strides[d] * step
    return as_strided(self, tuple(shape) + (size,), tuple(strides) + (self._strides[d],),
                      self._offset)


@tensor_method()
def diagonal(self, offset=0, dim1=0, dim2=1):
    """The diagonal of dims (dim1, dim2), shifted by `offset`, as a new last dim (a view)."""
    n = self.dim()
    d1, d2 = normalize_dim(dim1, n), normalize_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if offset >= 0:
        length = max(min(self._shape[d1], self._shape[d2] - offset), 0)
        start = self._offset + offset * self._strides[d2] if length else self._offset
    else:
        length = max(min(self._shape[d1] + offset, self._shape[d2]), 0)
        start = self._offset - offset * self._strides[d1] if length else self._offset
    keep = [i for i in range(n) if i not in (d1, d2)]
    shape = tuple(self._shape[i] for i in keep) + (length,)
    strides = tuple(self._strides[i] for i in keep) + (self._strides[d1] + self._strides[d2],)
    return as_strided(self, shape, strides, start)


reshape = Tensor.reshape
transpose = Tensor.transpose
permute = Tensor.permute
squeeze = Tensor.squeeze
unsqueeze = Tensor.unsqueeze
flatten = Tensor.flatten
unflatten = Tensor.unflatten
narrow = Tensor.narrow
select = Tensor.select
diagonal = Tensor.diagonal
