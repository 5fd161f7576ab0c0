"""Embedding backward kernel for the CPU: index-add rows of the output gradient.

Raw NumPy arrays in, caller-allocated (and zeroed) gradient out. Indices
are int64 and already validated to lie in ``[0, V)`` by the op layer.
"""

import numba

__all__ = ["embedding_backward", "PARALLEL_MIN_ELEMENTS"]

# Below this many gradient elements the serial variant wins on 2 cores.
PARALLEL_MIN_ELEMENTS = 65536


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


def embedding_backward(grad2, indices, padding_idx, grad_weight):
    """Accumulate ``grad2[i]`` into ``grad_weight[indices[i]]``, skipping ``padding_idx``.

    Args:
        grad2: (M, D) gradient of the embedding output, C-contiguous.
        indices: (M,) int64 indices in ``[0, V)``.
        padding_idx: the row never written, or -1 for none.
        grad_weight: (V, D) zeroed output, same dtype as ``grad2``.

    Example:
        >>> gw = np.zeros((3, 2))
        >>> embedding_backward(np.ones((4, 2)), np.array([0, 2, 2, 1]), 1, gw)
        >>> gw[:, 0].tolist()
        [1.0, 0.0, 2.0]
    """
    D = grad2.shape[1]
    threads = numba.get_num_threads()
    if grad2.size >= PARALLEL_MIN_ELEMENTS and threads > 1 and D >= 64:
        block = max(16, -(-D // (2 * threads)))
        embedding_backward_parallel(grad2, indices, padding_idx, grad_weight, block)
    else:
        embedding_backward_serial(grad2, indices, padding_idx, grad_weight)

