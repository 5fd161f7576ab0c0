"""Joining, splitting and rearranging: cat, stack, split, chunk, unbind, flip, roll,
repeat, tile, tril, triu, one_hot (h/v/dstack: rearranging.py). Splits are views; joins
copy once into the output.
"""
import numpy as np

from .. import _dtype
from .._capture import refuse_capture
from .._tensor import _LAYOUTS, Storage, Tensor, _layout, empty
from ..autograd import function as _function, grad_mode
from ..autograd.function import APPLY_WRAPPERS, Function, renamed
from .._limited import no_kernel
from ._common import normalize_dim, tensor_method, check_same_device

__all__ = ["cat", "concat", "concatenate", "stack", "split", "chunk",
           "unbind", "flip", "fliplr", "flipud", "roll", "tile", "tril", "triu", "one_hot",
           "repeat_interleave", "tensor_split", "broadcast_tensors", "meshgrid"]


class Cat(Function):
    @staticmethod
    def forward(ctx, dim, dtype, *tensors):
        ctx.dim = dim
        ctx.sizes = [t._shape[dim] if t._shape else 0 for t in tensors]
        ref = next(t for t in tensors if t._shape)
        shape = list(ref._shape)
        shape[dim] = sum(ctx.sizes)
        out = empty(tuple(shape), dtype, ref.device)
        if ref.device.type == "cpu" and not dtype.is_half and all(
                t.dtype is dtype for t in tensors):
            # NumPy's one copy of every piece (no narrow + copy_ per tensor: 26 -> 4 us for
            # two 8x16 tensors); 0-d and 1-D empty pieces were skipped by `_cat` already
            np.concatenate([t._array for t in tensors], axis=dim, out=out._array)
            return out
        start = 0
        for t, n in zip(tensors, ctx.sizes):
            if n:
                out.narrow(dim, start, n).copy_(t)
            start += n
        return out

    @staticmethod
    def backward(ctx, g):
        grads, start = [], 0
        for n in ctx.sizes:
            grads.append(g.narrow(ctx.dim, start, n) if n else None)
            start += n
        return (None, None) + tuple(grads)


def cat(tensors, dim=0, *, out=None):
    """Join tensors along an existing dim (shapes must match elsewhere)."""
    if out is None and not APPLY_WRAPPERS[0]:
        result = _unrecorded_cat(tensors, dim)
        if result is not None:
            return result
    return _cat(tensors, dim, out, Cat)


def _unrecorded_cat(tensors, dim):
    """cat of a list or tuple of plain CPU tensors of one dtype with nothing to record,
    before `_cat`'s layers: the shape checks in the one pass that gathers their arrays,
    then one copy (`_joined`); two 8x16 float32 along dim 0, old and new path alternated
    in one process: 4.2 -> 2.4 us (along dim 1: 4.4 -> 3.4). None where any of that does
    not hold, for a 1-D empty first piece (the legacy rule) and for every error: `_cat`
    checks and raises."""
    if (tensors.__class__ is not list and tensors.__class__ is not tuple) or not tensors \
            or dim.__class__ is not int:
        return None
    first = tensors[0]
    if first.__class__ is not Tensor:
        return None
    shape = first._shape
    nd = len(shape)
    d = dim + nd if dim < 0 else dim
    if not 0 <= d < nd or (nd == 1 and not shape[0]):
        return None
    dtype, device = first.dtype, first.device
    if device.type != "cpu" or dtype.is_half:
        return None
    track = grad_mode.STATE.enabled
    arrays, total = [], 0
    for t in tensors:
        if (t.__class__ is not Tensor or t.dtype is not dtype or t.device is not device
                or (track and t._requires_grad)):
            return None
        s = t._shape
        if s is not shape and s != shape and (
                len(s) != nd or s[:d] != shape[:d] or s[d + 1:] != shape[d + 1:]):
            return None
        total += s[d]
        a = t._arr
        arrays.append(a if a is not None else t._array)
    return _joined(arrays, d, shape[:d] + (total,) + shape[d + 1:], False, dtype, device)


_Stack = renamed(Cat, "StackBackward0")      # PyTorch's node for stack (a cat of unsqueezes)


def _cat(tensors, dim, out, fn):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    check_same_device("cat", *tensors)
    # legacy rule: 1-D empty tensors are skipped
    real = [t for t in tensors if not (len(t._shape) == 1 and t._shape[0] == 0)]
    if not real:
        return tensors[0].clone()
    ref = real[0]
    shape = ref._shape
    if not shape:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = normalize_dim(dim, len(shape))
    for i, t in enumerate(real):
        if t._shape == shape:
            continue
        if t.dim() != ref.dim():
            raise RuntimeError(f"Tensors must have same number of dimensions: got "
                               f"{ref.dim()} and {t.dim()}")
        for k in range(ref.dim()):
            if k != d and t._shape[k] != ref._shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {ref._shape[k]} but got size "
                                   f"{t._shape[k]} for tensor number {i} in the list.")
    if ref.is_quantized:            # first input's qparams, the others requantized
        from .._qtensor import quantized_cat
        return quantized_cat(real, d, out)
    if out is None and fn is Cat and not APPLY_WRAPPERS[0]:
        arrays = _unrecorded_cpu_arrays(real, None)
        if arrays is not None:      # nothing to record: Cat.forward's copy, without apply
            size = shape[:d] + (sum(t._shape[d] for t in real),) + shape[d + 1:]
            return _joined(arrays, d, size, False, ref.dtype, ref.device)
    dtype = _promote_all(real)
    result = fn.apply(d, dtype, *real)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _promote_all(ts):
    d = ts[0].dtype
    for t in ts[1:]:
        d = _dtype.promote_types(d, t.dtype)
    return d


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    """Join same-shape tensors along a new dim."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._shape
    d = normalize_dim(dim, len(shape) + 1)
    if out is None and not APPLY_WRAPPERS[0]:
        arrays = _unrecorded_cpu_arrays(tensors, shape)
        if arrays is not None:
            return _stack_arrays(arrays, d, shape, tensors[0])
    for i, t in enumerate(tensors):
        if t._shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(t.shape)} at entry {i}")
    return _cat([t.unsqueeze(d) for t in tensors], d, out, _Stack)


def _stack_arrays(arrays, d, shape, first):
    """Nothing to record (a DataLoader's collate, inference): one copy into the result
    (`_joined`). Before the last dim a stack is a concatenation along `d` into the result
    viewed with the pieces' dim d joined (the same memory order), which NumPy runs
    without np.stack's expand_dims per piece (64 pieces of 1x28x28, 30 -> 15 us), and
    along the first dim a join of their bytes (-> ~14 us with the checks)."""
    n = len(arrays)
    size = shape[:d] + (n,) + shape[d:]
    if d < len(shape):
        return _joined(arrays, d, size, True, first.dtype, first.device)
    res = empty(size, first.dtype, first.device)
    np.stack(arrays, axis=d, out=res._array)
    return res


_JOIN_BYTES = 1 << 20       # results up to here may be joined buffers (see `_joined`)


def _joined(arrays, d, size, stacked, dtype, device):
    """A new C-contiguous tensor of `size`: the NumPy `arrays` (of `dtype`) concatenated
    along their dim d, which is `size`'s dim d (a cat) or dims d and d + 1 (`stacked`).

    Where every dim before d is 1 (a join along the first dim), the result's bytes are the
    pieces' bytes one after another, which a join of their buffers gives
    (``bytearray().join``: ~50 ns a piece where np.concatenate spends ~150; 64 pieces of
    1x28x28 15 -> 6 us); the joined buffer is the result's storage, malloc'd as NumPy's
    own small buffers are (as the tensors collate's ``np.stack`` makes), up to
    `_JOIN_BYTES` (beyond, the caching allocator's buffer and NumPy's copy). A piece that
    is not C-contiguous makes the join refuse (TypeError): NumPy copies then."""
    layout = _LAYOUTS.get(size) or _layout(size)
    if (d == 0 or _ones(size, d)) and 0 < layout[2] * dtype.np.itemsize <= _JOIN_BYTES:
        try:
            data = np.frombuffer(bytearray().join(arrays), dtype.np)
        except (TypeError, BufferError):    # a piece that is not C-contiguous
            data = None
        if data is not None:
            return Tensor.__new__(Tensor)._init(Storage(data, device), 0, layout[0],
                                                layout[1], dtype,
                                                data if len(size) == 1 else data.reshape(size))
    res = empty(size, dtype, device)
    if not stacked:
        np.concatenate(arrays, axis=d, out=res._array)
    else:
        np.concatenate(arrays, axis=d,
                       out=res._array.reshape(size[:d] + (size[d] * size[d + 1],)
                                              + size[d + 2:]))
    return res


def _ones(size, d):
    """Every dim of `size` before d is 1."""
    for n in size[:d]:
        if n != 1:
            return False
    return True


def _unrecorded_cpu_arrays(tensors, shape):
    """The arrays of plain CPU tensors of one (NumPy) dtype and of `shape` (any shape
    where None), none of which a recorded op would track and none quantized; else None
    (one pass over them)."""
    first = tensors[0]
    dtype, device = first.dtype, first.device
    if device.type != "cpu" or dtype.is_half or first.is_quantized:
        return None
    track = grad_mode.STATE.enabled
    arrays = []
    for t in tensors:
        if (t.__class__ is not Tensor or t.dtype is not dtype or t.device is not device
                or (shape is not None and t._shape is not shape and t._shape != shape)
                or (track and t._requires_grad)):
            return None
        a = t._arr
        arrays.append(a if a is not None else t._array)
    return arrays


class SplitViews(Function):
    """Consecutive views along `dim` in one node: backward is one cat, not n scatters."""

    @staticmethod
    def forward(ctx, x, dim, sizes, squeeze):
        ctx.dim, ctx.squeeze = dim, squeeze
        # each piece a view made directly (no narrow op per piece: chunk in 2 of 4x8x16
        # 10 -> 4 us): x's strides, the offset moved along `dim`
        shape, strides = list(x._shape), list(x._strides)
        step = strides[dim]
        if squeeze:
            del strides[dim]
            piece_strides = tuple(strides)
        outs, offset = [], x._offset
        for n in sizes:
            if squeeze:
                outs.append(x._view(tuple(shape[:dim] + shape[dim + 1:]), piece_strides,
                                    offset))
            else:
                shape[dim] = n
                outs.append(x._view(tuple(shape), x._strides, offset))
            offset += n * step
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        if ctx.squeeze:
            grads = [g.unsqueeze(ctx.dim) for g in grads]
        return cat(grads, ctx.dim), None, None, None


@tensor_method()
def split(self, split_size_or_sections, dim=0):
    """Views of consecutive pieces of size split_size (or the given section sizes)."""
    d = normalize_dim(dim, self.dim())
    n = self._shape[d]
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        if s <= 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {n}")
        sizes = [min(s, n - i) for i in range(0, n, s)] if n else [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got "
                               f"split_sizes={sizes}")
    return renamed(SplitViews, "SplitBackward0").apply(self, d, tuple(sizes), False)


_split = split


def _split_method(self, split_size, dim=0):
    """``Tensor.split(split_size, dim=0)`` (PyTorch's method names its argument so)."""
    return _split(self, split_size, dim)


Tensor.split = _split_method


@tensor_method()
def chunk(self, chunks, dim=0):
    """Split into `chunks` views of (nearly) equal size."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = normalize_dim(dim, self.dim())
    n = self._shape[d]
    size = -(-n // chunks) if n else 0
    return self.split(size, d) if size else (self,)


@tensor_method()
def tensor_split(self, indices_or_sections, dim=0):
    """Views along `dim`: `k` near-equal pieces (an int or a 0-d tensor), or the slices
    x[0:i0], x[i0:i1], ..., x[ik:] of the indices (a list or a 1-D tensor; Python slice
    rules: negative indices count from the end, a decreasing pair gives an empty piece)."""
    d = normalize_dim(dim, self.dim())
    n = self._shape[d]
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections.dtype.is_floating_point or indices_or_sections.dim() > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor of integers")
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        return self.split(sizes, d)

    def clamp(i):
        i = i + n if i < 0 else i
        return min(max(i, 0), n)
    bounds = [0] + [clamp(int(i)) for i in indices_or_sections] + [n]
    return tuple(self.narrow(d, a, max(b - a, 0)) for a, b in zip(bounds, bounds[1:]))


@tensor_method()
def unbind(self, dim=0):
    """All slices along dim, as views."""
    d = normalize_dim(dim, self.dim())
    if self._shape[d] == 0:
        return ()
    return renamed(SplitViews, "UnbindBackward0").apply(self, d, (1,) * self._shape[d], True)


class Flip(Function):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        if x.device.type == "cpu" and x.dtype.np.itemsize in _BITS:
            return _copy_flipped(x, [d in dims for d in range(x.dim())], [0] * x.dim())
        index = tuple(slice(None, None, -1) if d in dims else slice(None)
                      for d in range(x.dim()))
        from .indexing import offsets_at, _take
        return _take(x, offsets_at(x, index))

    @staticmethod
    def backward(ctx, g):
        return g.flip(ctx.dims), None


_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.uint64}


def _copy_flipped(x, flips, shifts):
    """A CPU copy of x with dims reversed (flips) and rotated (shifts, 0 <= s < n), by one
    kernel over bit views (pad_flip.copy_flipped: 1024x512 float32 flip(1) 0.8 ms -> ~40 us,
    roll 90 -> ~60 us); runs of dims alike are merged first."""
    from ..kernels.cpu.pad_flip import copy_flipped
    out = empty(tuple(x._shape), x.dtype, x.device)
    if not out.numel():
        return out
    shape, fl, sh = [], [], []
    for n, f, s in zip(x._shape, flips, shifts):
        if n == 1:
            continue
        if shape and not f and not s and not fl[-1] and not sh[-1]:
            shape[-1] *= n          # two plain dims: one
        elif shape and f and fl[-1]:
            shape[-1] *= n          # two reversed dims: one reversed dim
        else:
            shape.append(n)
            fl.append(bool(f))
            sh.append(int(s))
    isz = x.dtype.np.itemsize
    bits = _BITS[isz]
    if isz == 16:                   # complex128: two uint64 words, a plain last dim
        shape.append(2)
        fl.append(False)
        sh.append(0)
    if not shape:
        shape, fl, sh = [1], [False], [0]
    src = x.contiguous()._array.view(bits).reshape(-1)
    copy_flipped(src, out._array.view(bits).reshape(-1), np.array(shape, np.int64),
                 np.array(fl, np.bool_), np.array(sh, np.int64))
    return out


class Roll(Function):
    """CPU roll of several dims at once: one copy (its backward: the opposite roll)."""

    @staticmethod
    def forward(ctx, x, shifts):
        ctx.shifts = shifts
        return _copy_flipped(x, [False] * x.dim(), shifts)

    @staticmethod
    def backward(ctx, g):
        back = [(-s) % n if n else 0 for s, n in zip(ctx.shifts, g._shape)]
        if g.device.type == "cpu" and g.dtype.np.itemsize in _BITS:
            return Roll.apply(g, back), None
        dims = tuple(range(g.dim()))
        return g.roll(tuple(back), dims), None


@tensor_method()
def flip(self, *dims, **kwargs):
    """A copy with the order of elements reversed along dims: one sequence, or several
    ints as Tensor.flip takes them (``x.flip(0, 1)``)."""
    if self.dtype.limited:
        no_kernel("flip_cpu", self.dtype)
    if kwargs:
        unexpected = [k for k in kwargs if k != "dims"]
        if unexpected:
            raise TypeError(f"flip() got an unexpected keyword argument '{unexpected[0]}'")
        if dims:
            raise TypeError("flip() got multiple values for argument 'dims'")
        dims = (kwargs["dims"],)
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    dims = dims[0] if len(dims) == 1 else dims
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    dims = tuple(normalize_dim(d, self.dim()) for d in dims)
    for i, d in enumerate(dims):
        if d in dims[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    if self.is_quantized:           # on its integers, same qparams
        return self._with_ints(Flip.apply(self._int_tensor(), dims))
    return Flip.apply(self, dims)


@tensor_method()
def fliplr(self):
    return self.flip(1)


@tensor_method()
def flipud(self):
    return self.flip(0)


@tensor_method()
def roll(self, shifts, dims=None):
    """Rotate elements along dims by shifts (flattened first when dims is None)."""
    if dims is None:
        return self.flatten().roll(shifts, 0).view(self.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    if self.device.type == "cpu" and self.dtype.np.itemsize in _BITS and \
            not self.is_quantized and not self.dtype.limited:
        total = [0] * self.dim()
        for s, d in zip(shifts, dims):
            d = normalize_dim(d, self.dim())
            n = self._shape[d]
            total[d] = (total[d] + s) % n if n else 0
        if not any(total):
            return self.clone()
        return renamed(Roll, "RollBackward0").apply(self, total)
    out = self
    for s, d in zip(shifts, dims):
        d = normalize_dim(d, self.dim())
        n = self._shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            out = cat([out.narrow(d, n - s, s), out.narrow(d, 0, n - s)], d)
    return out if out is not self else self.clone()


@tensor_method()
def repeat(self, *sizes):
    """Tile the tensor `sizes` times along each dim (a copy)."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    if len(sizes) < self.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than "
                           "number of dimensions of tensor")
    out = _unrecorded_repeat(self, sizes)
    if out is not None:
        return out
    x = self.reshape((1,) * (len(sizes) - self.dim()) + tuple(self._shape))
    inter, final = [], []
    for r, n in zip(sizes, x._shape):
        inter += [r, n]
        final.append(r * n)
    x = x.reshape(tuple(v for n in x._shape for v in (1, n)))
    return x.expand(tuple(inter)).reshape(tuple(final))


def _unrecorded_repeat(x, sizes):
    """x.repeat(*sizes) of a plain CPU tensor with nothing to record: the copy of x viewed
    as (1, n0, 1, n1, ...) broadcast into the result viewed as (r0, n0, r1, n1, ...), which
    is what the reshape/expand/reshape below computes, in one NumPy copy and without their
    view nodes (8x16 repeat(2, 1) ~15.8 -> ~4 us); None for anything else (negative
    sizes: the general path names them)."""
    if (x.__class__ is not Tensor or x.device.type != "cpu" or APPLY_WRAPPERS[0]
            or _function.TRACE_HOOK[0] is not None
            or (grad_mode.STATE.enabled and x._requires_grad)):
        return None
    shape = (1,) * (len(sizes) - len(x._shape)) + tuple(x._shape)
    inter, final, src = [], [], []
    for r, n in zip(sizes, shape):
        if r.__class__ is not int or r < 0:
            return None
        inter += (r, n)
        src += (1, n)
        final.append(r * n)
    out = empty(tuple(final), x.dtype, x.device)
    if out._arr.size:
        np.copyto(out._arr.reshape(inter), x._array.reshape(src))
    return out


@tensor_method()
def tile(self, *dims):
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    dims = (1,) * (self.dim() - len(dims)) + tuple(dims)
    return self.repeat(dims)


@tensor_method()
def repeat_interleave(self, repeats=None, dim=None, *, output_size=None):
    """Repeat each element `repeats` times (along dim, or of the flattened tensor). With
    one tensor argument, `repeat_interleave(r)` is ``arange(len(r))`` repeated by `r`, as
    PyTorch's; `output_size` (the total) is checked when given."""
    if repeats is None:                             # torch.repeat_interleave(repeats)
        if self.dim() > 1 or self.dtype.is_floating_point:
            raise RuntimeError("repeat_interleave: repeats must be 0-dim or 1-dim tensor of "
                               "integers")
        from .creation import arange
        return arange(self.numel(), device=self.device).repeat_interleave(
            self.reshape(-1), output_size=output_size)
    if output_size is not None:
        total = (int(repeats.sum()) if isinstance(repeats, Tensor) and repeats.numel() > 1
                 else None)
        if total is not None and total != output_size:
            raise RuntimeError(f"allocated size does not match required size: "
                               f"{output_size} vs {total}")
    if isinstance(repeats, Tensor) and repeats.numel() > 1:
        refuse_capture("repeat_interleave() with a tensor of repeats",
                       "has a data-dependent output shape")
    x = self.flatten() if dim is None else self
    d = 0 if dim is None else normalize_dim(dim, x.dim())
    n = x._shape[d]
    reps = repeats.tolist() if isinstance(repeats, Tensor) else repeats
    reps = [reps] * n if isinstance(reps, int) else list(reps)
    from .creation import tensor
    idx = tensor(np.repeat(np.arange(n), reps), device=x.device)
    if x.dtype.limited:                 # PyTorch repeats uint16-64 (no index_select kernel)
        return x[(slice(None),) * d + (idx,)]
    return x.index_select(d, idx)


def _tri_mask(shape, diagonal, lower, device):
    rows, cols = shape[-2], shape[-1]
    i = np.arange(rows)[:, None]
    j = np.arange(cols)[None, :]
    keep = (j - i <= diagonal) if lower else (j - i >= diagonal)
    from .creation import tensor
    return tensor(~keep, device=device)


class Tri(Function):
    """tril/triu on the CPU: one kernel copies the kept side of each row and zeroes the
    rest (index.tri_copy over word views; 1024x512 float32 tril, masked_fill of a mask
    before: 763 -> 55-60 us, PyTorch 158); backward applies the same triangle to g."""

    @staticmethod
    def forward(ctx, x, diagonal, lower):
        ctx.diagonal, ctx.lower = diagonal, lower
        return _tri_cpu(x, diagonal, lower)

    @staticmethod
    def backward(ctx, g):
        return (g.tril(ctx.diagonal) if ctx.lower else g.triu(ctx.diagonal)), None, None


def _tri_cpu(x, diagonal, lower):
    from ..kernels.cpu.index import tri_copy, words
    src = x.contiguous()
    out = empty(tuple(x._shape), x.dtype, x.device)
    if out.numel():
        m, n = x._shape[-2], x._shape[-1]
        width = 2 if x.dtype.np.itemsize == 16 else 1
        a = src._array.reshape(-1, m, n)
        tri_copy(words(a).reshape(-1, m, n * width),
                 words(out._array.reshape(-1, m, n)).reshape(-1, m, n * width),
                 int(diagonal), lower, width)
    return out


def _tri(self, diagonal, lower):
    op = "tril" if lower else "triu"
    if self.dim() < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    if self.dtype.limited:
        no_kernel(op, self.dtype)
    if self.device.type == "cpu" and not self.is_quantized and \
            self.dtype.np.itemsize in _BITS:
        return renamed(Tri, "TrilBackward0" if lower else "TriuBackward0").apply(
            self, diagonal, lower)
    return self.masked_fill(_tri_mask(self._shape, diagonal, lower, self.device), 0)


@tensor_method()
def tril(self, diagonal=0):
    """Zero the elements above the diagonal-th diagonal of the last two dims."""
    return _tri(self, diagonal, True)


@tensor_method()
def triu(self, diagonal=0):
    """Zero the elements below the diagonal-th diagonal of the last two dims."""
    return _tri(self, diagonal, False)


def broadcast_tensors(*tensors):
    """Views of `tensors` expanded to their common broadcast shape."""
    from ._common import broadcast_shapes
    shape = broadcast_shapes(*(t._shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids from 1-D tensors, as expanded views ('ij' or 'xy' indexing)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", "
                           f"but received: {indexing}")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list")
    vecs = [t.reshape(-1) for t in tensors]
    shape = tuple(v._shape[0] for v in vecs)
    grids = []
    for i, v in enumerate(vecs):
        view_shape = [1] * len(vecs)
        view_shape[i] = shape[i]
        grids.append(v.reshape(view_shape).expand(shape))
    if indexing == "xy" and len(vecs) >= 2:      # 'xy': the first two dims swapped
        grids = [g.transpose(0, 1) for g in grids]
    return tuple(grids)


def one_hot(tensor, num_classes=-1):
    """int64 (..., num_classes) with a 1 at each index (num_classes=-1: max + 1)."""
    if tensor.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    vals = tensor._host()
    if vals.size and vals.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        if not vals.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        refuse_capture("one_hot() without num_classes", "has an output shape that depends on "
                       "the data")
        num_classes = int(vals.max()) + 1
    elif vals.size and vals.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    if tensor.device.type == "cpu":
        # one pass writing each row's zeros and its one (index.one_hot_rows), not zeros +
        # scatter_ (a clone and a copy back): 4096 x 100 283 -> 75-78 us, PyTorch 66
        from ..kernels.cpu.index import one_hot_rows
        out = empty(tuple(tensor._shape) + (num_classes,), _dtype.int64, tensor.device)
        if out.numel():
            one_hot_rows(np.ascontiguousarray(vals).reshape(-1),
                         out._array.reshape(-1, num_classes))
        return out
    from .creation import zeros
    out = zeros(tuple(tensor._shape) + (num_classes,), dtype=_dtype.int64,
                device=tensor.device)
    if vals.size:
        out.scatter_(-1, tensor.unsqueeze(-1), 1)
    return out

for _n in ("flip", "roll", "tril", "triu", "split", "chunk", "unbind", "tile",
           "repeat_interleave", "tensor_split"):
    globals()[_n] = getattr(Tensor, _n)
split = _split                  # torch.split(tensor, split_size_or_sections, dim=0)
