"""`tensor[index]` and `tensor[index] = value` for ints, slices (with steps), None and `...`.

Basic indexing returns views; an index holding tensors, lists or bools is
advanced indexing and goes to `ops/indexing.py` (a copy, as in PyTorch).
"""
import numpy as np

from .._tensor import Tensor
from .views import slice_view

__all__ = ["parse_basic", "is_basic", "slice_extent"]


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
