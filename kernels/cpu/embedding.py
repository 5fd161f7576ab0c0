"""Embedding kernels for the CPU: row gather (forward), index-add (backward), renorm.

Raw NumPy arrays in, caller-allocated outputs. Indices are int64 and already
validated to lie in ``[0, V)`` by the op layer (the kernels do no bounds
checks).
"""

import math

import numba
import numpy as np
from ..shared import copy_into
from . import openmp

from nbtorch.kernels.halves import is_half

__all__ = ["embedding_forward", "embedding_backward", "embedding_renorm_", "index_bounds",
           "PARALLEL_MIN_ELEMENTS"]

# Below this many gradient elements the serial variant wins on 2 cores. Measured with
# Numba's workers sleeping between regions (nbtorch/_threads.py), backward serial vs
# parallel: 1024x128 116 vs 401 us, 4096x128 555 vs 1007, 16384x256 3.30 vs 5.27 ms (the
# column blocks read every row in short strided pieces); 65536 was measured spinning.
PARALLEL_MIN_ELEMENTS = 1 << 24


@numba.njit(cache=True)
def index_bounds(indices):
    """(min, max) of a non-empty 1-D integer array in one pass: the op layer's range check
    before a gather (NumPy's min and max: two reductions of ~1.5 us each on a few
    indices)."""
    lo = hi = indices[0]
    for i in range(1, indices.shape[0]):
        v = indices[i]
        if v < lo:
            lo = v
        elif v > hi:
            hi = v
    return lo, hi


@numba.njit(cache=True)
def embedding_forward_serial(weight2, indices, out2):
    """for i: out2[i, :] = weight2[indices[i], :]."""
    for i in range(indices.shape[0]):
        copy_into(out2[i], weight2[indices[i]])


def embedding_forward(weight2, indices, out2):
    """Gather rows ``weight2[indices]`` (V, D) -> ``out2`` (M, D); any 2/4/8-byte dtype.

    The gather only moves bits, so float16 and bfloat16 run through uint16 views.

    Example:
        >>> out = np.empty((2, 3)); embedding_forward(np.eye(3), np.array([2, 0]), out)
    """
    if is_half(weight2.dtype):
        weight2, out2 = weight2.view(np.uint16), out2.view(np.uint16)
    embedding_forward_serial(weight2, indices, out2)


@numba.njit(cache=True)
def _add_rows(grad2, indices, padding_idx, grad_weight, d0, d1):
    """for i: if indices[i] != padding_idx: grad_weight[indices[i], d0:d1] += grad2[i, d0:d1]."""
    for i in range(indices.shape[0]):
        j = indices[i]
        if j == padding_idx:
            continue
        src = grad2[i]
        dst = grad_weight[j]
        for d in range(d0, d1):
            dst[d] += src[d]


@numba.njit(cache=True)
def embedding_backward_serial(grad2, indices, padding_idx, grad_weight):
    """Serial index-add of the rows of ``grad2`` (M, D) into ``grad_weight`` (V, D)."""
    _add_rows(grad2, indices, padding_idx, grad_weight, 0, grad2.shape[1])


@numba.njit(cache=True, parallel=True)
def embedding_backward_parallel(grad2, indices, padding_idx, grad_weight, block):
    """Parallel over column blocks of width ``block``: repeated indices never race."""
    D = grad2.shape[1]
    for b in numba.prange((D + block - 1) // block):
        d0 = b * block
        _add_rows(grad2, indices, padding_idx, grad_weight, d0, min(D, d0 + block))


def embedding_backward(grad2, indices, padding_idx, grad_weight, scale_grad_by_freq=False):
    """Accumulate ``grad2[i]`` into ``grad_weight[indices[i]]``, skipping ``padding_idx``.

    Args:
        grad2: (M, D) gradient of the embedding output, C-contiguous.
        indices: (M,) int64 indices in ``[0, V)``.
        padding_idx: the row never written, or -1 for none.
        grad_weight: (V, D) zeroed output, same dtype as ``grad2``.
        scale_grad_by_freq: divide row j by the count of j in ``indices``.

    Example:
        >>> gw = np.zeros((3, 2))
        >>> embedding_backward(np.ones((4, 2)), np.array([0, 2, 2, 1]), 1, gw)
        >>> gw[:, 0].tolist()
        [1.0, 0.0, 2.0]
    """
    D = grad2.shape[1]
    threads = numba.get_num_threads()
    if grad2.size >= PARALLEL_MIN_ELEMENTS and threads > 1 and D >= 64 and openmp.USABLE:
        block = max(16, -(-D // (2 * threads)))
        embedding_backward_parallel(grad2, indices, padding_idx, grad_weight, block)
    else:
        embedding_backward_serial(grad2, indices, padding_idx, grad_weight)
    if scale_grad_by_freq:
        counts = np.bincount(indices, minlength=grad_weight.shape[0])
        grad_weight /= np.maximum(counts, 1)[:, None].astype(grad_weight.dtype)


@numba.njit(cache=True)
def embedding_renorm_(weight2, indices, max_norm, norm_type):
    """In place: for each referenced row, if ||row||_p > max_norm: row *= max_norm/(norm+1e-7).

    Repeated indices are harmless (a renormed row is below max_norm).
    """
    for i in range(indices.shape[0]):
        row = weight2[indices[i]]
        acc = 0.0
        if norm_type == 2.0:
            for d in range(row.shape[0]):
                acc += row[d] * row[d]
            norm = math.sqrt(acc)
        elif norm_type == 1.0:
            for d in range(row.shape[0]):
                acc += abs(row[d])
            norm = acc
        elif math.isinf(norm_type):
            for d in range(row.shape[0]):
                acc = max(acc, abs(row[d]))
            norm = acc
        else:
            for d in range(row.shape[0]):
                acc += abs(row[d]) ** norm_type
            norm = acc ** (1.0 / norm_type)
        if norm > max_norm:
            scale = max_norm / (norm + 1e-7)
            for d in range(row.shape[0]):
                row[d] *= scale
