"""PyTorch's refusals to write where a result would depend on the order of the writes:
an output whose elements share memory (an expanded tensor), or an output that partly
overlaps an input (``x[2:].add_(x[:-2])``, ``torch.exp(x[:-1], out=x[1:])``).

`partial_overlap` follows PyTorch's get_overlap_status: two tensors over one storage
overlap fully when they cover the same memory with the same strides (``x.mul_(x)``: fine),
partly when their memory ranges meet otherwise; layouts that are not dense and
non-overlapping (``x[::2]``) are too hard to tell and pass, as in PyTorch.
"""
from ._memory_format import non_overlapping_and_dense

__all__ = ["check_no_internal_overlap", "check_no_partial_overlap", "partial_overlap"]

_PARTIAL = ("unsupported operation: some elements of the input tensor and the written-to "
            "tensor refer to a single memory location. Please clone() the tensor before "
            "performing the operation.")
_INTERNAL = ("unsupported operation: more than one element of the written-to tensor refers "
             "to a single memory location. Please clone() the tensor before performing the "
             "operation.")


def check_no_internal_overlap(out):
    """Refuse to write into a tensor whose elements share memory (a stride 0 over a dim of
    size > 1: an expanded tensor)."""
    for n, s in zip(out._shape, out._strides):
        if s == 0 and n > 1:
            raise RuntimeError(_INTERNAL)


def partial_overlap(a, b):
    """True when tensors `a` and `b` share part of their memory (not all of it with the
    same strides)."""
    if a is b or a._storage is not b._storage:
        return False
    n, m = a.numel(), b.numel()
    if not n or not m or not (non_overlapping_and_dense(a._shape, a._strides)
                              and non_overlapping_and_dense(b._shape, b._strides)):
        return False
    ia, ib = a.dtype.itemsize, b.dtype.itemsize
    a0, b0 = a._offset * ia, b._offset * ib
    a1, b1 = a0 + n * ia, b0 + m * ib
    if a0 == b0 and a1 == b1:
        return tuple(a._strides) != tuple(b._strides)
    return a0 < b1 and b0 < a1


def check_no_partial_overlap(out, inputs):
    """Refuse a write into `out` that partly overlaps one of `inputs` (tensors or not)."""
    storage = out._storage
    for x in inputs:
        if getattr(x, "_storage", None) is storage and partial_overlap(out, x):
            raise RuntimeError(_PARTIAL)
