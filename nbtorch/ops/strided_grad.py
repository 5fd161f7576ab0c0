"""as_strided's backward over storage offsets (PyTorch's as_strided_backward): the
gradient of a strided view is summed into the storage positions it viewed, so
overlapping windows (unfold, as_strided with small strides) accumulate, then read back
through the input's own geometry."""
import numpy as np

__all__ = ["as_strided_grad", "contiguous", "no_overlap", "storage_offsets"]


def contiguous(shape):
    from .._tensor import contiguous_strides
    return tuple(contiguous_strides(shape))


def no_overlap(shape, strides):
    """True when no two elements of (shape, strides) share a storage offset."""
    extent = 0
    for s, n in sorted((s, n) for n, s in zip(shape, strides) if n > 1):
        if s <= extent:
            return False
        extent += (n - 1) * s
    return True


def storage_offsets(shape, strides, base):
    off = np.full(tuple(shape), base, np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        view = [1] * len(shape)
        view[d] = n
        off += (np.arange(n, dtype=np.int64) * s).reshape(view)
    return off.reshape(-1)


def as_strided_grad(g, in_shape, in_strides, in_off, shape, strides, off):
    """PyTorch's as_strided backward over storage offsets: the output's gradient is
    summed into the storage positions it viewed (overlapping windows accumulate, as
    unfold's do), then read back through the input's geometry (an input whose elements
    share storage gets each share divided by their count)."""
    from .creation import zeros, tensor
    from .indexing import index_put
    out_offs = storage_offsets(shape, strides, off)
    in_offs = storage_offsets(in_shape, in_strides, in_off)
    lo = int(min(out_offs.min(initial=off), in_offs.min(initial=in_off)))
    hi = int(max(out_offs.max(initial=off), in_offs.max(initial=in_off)))
    flat = zeros(hi - lo + 1, dtype=g.dtype, device=g.device)
    if out_offs.size:
        flat = index_put(flat, (tensor(out_offs - lo, device=g.device),), g.reshape(-1),
                         accumulate=True)
    gi = flat[tensor(in_offs - lo, device=g.device)]
    counts = np.bincount(in_offs - lo, minlength=hi - lo + 1)[in_offs - lo] if in_offs.size \
        else in_offs
    if in_offs.size and counts.max() > 1:
        gi = gi / tensor(counts.astype(np.float64), dtype=g.dtype, device=g.device)
    return gi.reshape(in_shape)
