"""`tensor[index]` and `tensor[index] = value` for ints, slices (with steps), None and `...`.

Basic indexing returns views; an index holding tensors, lists or bools is
advanced indexing and goes to `ops/indexing.py` (a copy, as in PyTorch).
"""
import numpy as np

from .._device import CPU
from .._tensor import Tensor
from .views import _plain, slice_view

__all__ = ["parse_basic", "is_basic", "slice_extent", "slices_and_ints"]


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def is_basic(index):
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, slice) or _is_int(i) or
               (isinstance(i, Tensor) and i.dim() == 0 and not i.dtype.is_floating_point
                and i.dtype.name != "bool") for i in items)


def slice_extent(start, stop, step, n):
    """(first index, length) of start:stop:step (step > 0) over a dim of size n; an empty
    slice starts at 0."""
    start, stop, _ = slice(start, stop, step).indices(n)
    length = max(0, (stop - start + step - 1) // step)
    return (start if length else 0), length


def basic_getitem(x, index):
    items = index if isinstance(index, tuple) else (index,)
    items = tuple(int(i.item()) if isinstance(i, Tensor) else i for i in items)
    n_real = sum(1 for i in items if i is not None and i is not Ellipsis)
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > x.dim():
        raise IndexError(f"too many indices for tensor of dimension {x.dim()}")
    expanded = []
    for i in items:
        if i is Ellipsis:
            expanded.extend([slice(None)] * (x.dim() - n_real))
        else:
            expanded.append(i)
    expanded.extend([slice(None)] * (x.dim() - sum(1 for i in expanded if i is not None)))
    starts, lengths, steps, drop = [], [], [], []
    new_axes = []          # positions (in the result) of None
    out_pos = 0
    d = 0
    for i in expanded:
        if i is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        n = x._shape[d]
        if isinstance(i, slice):
            step = 1 if i.step is None else int(i.step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start, length = slice_extent(i.start, i.stop, step, n)
            starts.append(start)
            lengths.append(length)
            steps.append(step)
            out_pos += 1
        else:
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {d} with size {n}")
            starts.append(i + n if i < 0 else i)
            lengths.append(1)
            steps.append(1)
            drop.append(d)
        d += 1
    v = slice_view(x, starts, lengths, steps, drop) if x.dim() else x.view(())
    for pos in new_axes:
        v = v.unsqueeze(pos)
    return v


def slices_and_ints(x, index):
    """x[index] for the common basic index, a tuple of slices (positive steps) and in-range
    Python ints over leading dims (`x[:, 2:5]`, `x[..., 0]` is not one): the same view
    `basic_getitem` makes, without its general parsing (5.6 -> 3 us); None otherwise."""
    if x.__class__ is Tensor and _plain(x):
        return _plain_view(x, index)
    shape = x._shape
    if len(index) > len(shape):
        return None
    starts, lengths, steps, drop = [], [], [], []
    for d, (i, n) in enumerate(zip(index, shape)):
        c = i.__class__
        if c is slice:
            step = i.step
            if step is None:
                step = 1
            elif step.__class__ is not int or step <= 0:
                return None
            start, length = slice_extent(i.start, i.stop, step, n)
            starts.append(start)
            lengths.append(length)
            steps.append(step)
        elif c is int and -n <= i < n:
            starts.append(i + n if i < 0 else i)
            lengths.append(1)
            steps.append(1)
            drop.append(d)
        else:
            return None
    for n in shape[len(index):]:
        starts.append(0)
        lengths.append(n)
        steps.append(1)
    return slice_view(x, starts, lengths, steps, drop)


def _plain_view(x, index):
    """`slices_and_ints` for a plain tensor with nothing to record or watch: the view
    Slice's forward makes (same storage, offset, shape, strides and `_base`), made here
    without Function.apply and the per-dim lists (8x16 ``x[:, 1:5]`` 4.5 -> 1.8 us,
    ``x[0, 0]`` 4.1 -> 1.2; PyTorch 1.6 and 1.7). On the CPU a non-empty view of one or
    more dims whose slice bounds are ints or None gets NumPy's view of the parent's array,
    as `indexing._select_first` does (~0.2 us, where the view would build it at its first
    use for ~0.6). None for the indices `slices_and_ints` refuses."""
    shape, strides = x._shape, x._strides
    if len(index) > len(shape):
        return None
    offset = x._offset
    out_shape, out_strides = [], []
    plain_bounds = True
    for i, n, st in zip(index, shape, strides):
        c = i.__class__
        if c is slice:
            step, lo, hi = i.step, i.start, i.stop
            if step is None and (lo is None or lo.__class__ is int) and (
                    hi is None or hi.__class__ is int):
                # slice.indices' clipping of a unit step inline (slice_extent ~0.5 us)
                if lo is None:
                    start = 0
                else:
                    start = lo + n if lo < 0 else lo
                    start = 0 if start < 0 else n if start > n else start
                if hi is None:
                    length = n - start
                else:
                    stop = hi + n if hi < 0 else hi
                    length = (n if stop > n else stop) - start
                if length <= 0:
                    start = length = 0
                step = 1
            else:
                if step is None:
                    step = 1
                elif step.__class__ is not int or step <= 0:
                    return None
                start, length = slice_extent(lo, hi, step, n)
                if not ((lo is None or lo.__class__ is int) and
                        (hi is None or hi.__class__ is int)):
                    plain_bounds = False
            offset += start * st
            out_shape.append(length)
            out_strides.append(st * step)
        elif c is int and -n <= i < n:
            offset += (i + n if i < 0 else i) * st
        else:
            return None
    k = len(index)
    if k < len(shape):
        out_shape += shape[k:]
        out_strides += strides[k:]
    v = x._view(out_shape, out_strides, offset)
    a = x._arr
    if a is not None and plain_bounds and out_shape and 0 not in out_shape \
            and x.device is CPU:
        v._arr = a[index]
    return v
