"""The layout of a new elementwise result: PyTorch's rule, so `x.t() + 1` stays transposed.

PyTorch's TensorIterator does not make every result C-contiguous: a result of inputs of
one shape and one dense layout gets that layout, and otherwise its dimensions are ordered
by the inputs' strides (the first input with an opinion decides, broadcast dimensions
have none) and laid out densely in that order. Code written for PyTorch sees the result
(``is_contiguous()``, ``.view`` refusing it), and speed does too: a transposed operand
read into a C-ordered result is a transposing loop (1024x512 ``x.t() + x.t()``: 2.1 ms
against 60 us for the loop in the inputs' own order).

`output_strides` answers for a new result; `dense_order` gives the dimension order that
makes a dense result C-contiguous, so a kernel can run over views permuted into it.
"""
from .._memory_format import (channels_last, channels_last_3d, is_format,
                              non_overlapping_and_dense, sorted_dims, strides_for,
                              strides_in_order)
from .._tensor import Tensor

__all__ = ["output_strides", "dense_order", "permuted"]


_CHANNELS_LAST = {4: channels_last, 5: channels_last_3d}


def output_strides(shape, operands):
    """Strides of a new result of broadcast `shape` computed from `operands` (tensors and
    numbers, in argument order), or None when they are the contiguous ones."""
    ndim = len(shape)
    if ndim < 2:
        return None
    tensors = [x for x in operands if isinstance(x, Tensor)]
    if len(tensors) == len(operands) and all(t._shape == shape for t in tensors):
        # PyTorch's fast set-up: one shape, one layout
        first = tensors[0]._strides
        if all(is_format(shape, t._strides, None) for t in tensors):
            return None
        fmt = _CHANNELS_LAST.get(ndim)
        if fmt is not None and all(is_format(shape, t._strides, fmt) for t in tensors):
            return strides_for(shape, fmt)
        if non_overlapping_and_dense(shape, first) and all(t._strides == first
                                                            for t in tensors):
            return first
    operand_strides = []
    for t in tensors:
        offset = ndim - len(t._shape)
        full = [0] * ndim
        for i, (n, s) in enumerate(zip(t._shape, t._strides)):
            if not (n == 1 and shape[offset + i] != 1):
                full[offset + i] = s
        operand_strides.append(full)
    perm = sorted_dims(shape, operand_strides)
    if perm == list(range(ndim - 1, -1, -1)):
        return None
    return strides_in_order(shape, perm)


def dense_order(shape, strides):
    """The dim order, slowest first, in which a dense (shape, strides) is C-contiguous."""
    return sorted(range(len(shape)), key=lambda d: (-strides[d], -shape[d]))


def permuted(t, order, ndim):
    """Tensor `t` (a broadcast operand of a rank-`ndim` result) as a view whose dims follow
    `order`: missing leading dims become size-1 ones first. Numbers and 0-d tensors are
    returned as they are (they broadcast in any order)."""
    if not isinstance(t, Tensor) or not t._shape:
        return t
    shape, strides = t._shape, t._strides
    if len(shape) < ndim:
        pad = ndim - len(shape)
        shape, strides = (1,) * pad + shape, (0,) * pad + strides
    return t._view(tuple(shape[d] for d in order), tuple(strides[d] for d in order))
