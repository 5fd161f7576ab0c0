"""The row kernels of fused scaled-dot-product attention on the CPU (the GEMMs around
them are BLAS calls on strided views: nbtorch/ops/attention.py).

All arrays are (N, H, L, S) float32 or float64: ``s`` the raw products Q K^T, ``mask``
an additive float mask given as a flat array and four element strides (broadcast dims
stride 0: one kernel type for every mask shape), ``noise`` the dropout
draws (0 or 1; a (1, 1, 1, 1) dummy without dropout), ``p`` the probabilities and
``pd`` the probabilities after dropout. Rows whose every score is -inf get zero
probabilities (PyTorch's ``_safe_softmax``); a NaN in a row makes the row NaN.
``nogil`` so that ranges of the batch run on the CPU helper threads.
"""
import numba
import numpy as np

from .cblas import matmul
from .reduce import FM, _block_max, _row_sum
from .softmax import _exp_minus

__all__ = ["attention_probs", "attention_probs_backward", "sdpa", "sdpa_backward"]


@numba.njit(cache=True, fastmath=FM, nogil=True)
def _all_neg_inf(row):
    for j in range(row.size):
        if row[j] != -np.inf:
            return False
    return True


@numba.njit(cache=True, fastmath=FM, nogil=True)
def attention_probs(s, mask, mstrides, has_mask, scale, noise, keep, has_dropout, p, pd,
                    n0, n1):
    """For batches n0:n1: p = safe_softmax(scale * s + mask) along the last dim, and
    pd = p * (noise * keep) when has_dropout (pd may be p itself otherwise)."""
    N, H, L, S = s.shape
    sn, sh, si, sj = mstrides
    tmp = np.empty(S, s.dtype)
    for n in range(n0, n1):
        for h in range(H):
            for i in range(L):
                src = s[n, h, i]
                if has_mask:
                    base = n * sn + h * sh + i * si
                    for j in range(S):
                        tmp[j] = src[j] * scale + mask[base + j * sj]
                else:
                    for j in range(S):
                        tmp[j] = src[j] * scale
                out = p[n, h, i]
                m = _block_max(tmp)            # NaN ignored: a NaN makes the row NaN below
                if m == -np.inf and _all_neg_inf(tmp):
                    out[:] = 0
                    if has_dropout:
                        pd[n, h, i][:] = 0
                    continue
                _exp_minus(tmp, m, out)
                r = out.dtype.type(1.0 / _row_sum(out, 0.0, False))
                if has_dropout:
                    drow = pd[n, h, i]
                    nrow = noise[n, h, i]
                    for j in range(S):
                        v = out[j] * r
                        out[j] = v
                        drow[j] = v * (nrow[j] * keep)
                else:
                    for j in range(S):
                        out[j] *= r


@numba.njit(cache=True, fastmath=FM, nogil=True)
def attention_probs_backward(p, noise, keep, has_dropout, dpd, scale, ds, n0, n1):
    """For batches n0:n1: ds = scale * p * (dp - sum(dp * p)) along the last dim, where
    dp = dpd * noise * keep with dropout (else dpd): the gradient of the raw products
    Q K^T from that of the dropped-out probabilities. ds may be dpd itself."""
    N, H, L, S = p.shape
    dp = np.empty(S, p.dtype)
    for n in range(n0, n1):
        for h in range(H):
            for i in range(L):
                prow = p[n, h, i]
                grow = dpd[n, h, i]
                if has_dropout:
                    nrow = noise[n, h, i]
                    for j in range(S):
                        dp[j] = grow[j] * (nrow[j] * keep)
                else:
                    for j in range(S):
                        dp[j] = grow[j]
                acc = 0.0
                for j in range(S):
                    acc += dp[j] * prow[j]
                dot = p.dtype.type(acc)
                out = ds[n, h, i]
                for j in range(S):
                    out[j] = scale * (prow[j] * (dp[j] - dot))


# ---------------------------------------------------------------- launchers

_DUMMY = {}


def _dummy(dtype):
    """A (1, 1, 1, 1) array standing in for absent noise (one kernel type)."""
    d = _DUMMY.get(dtype)
    if d is None:
        d = _DUMMY[dtype] = np.zeros((1, 1, 1, 1), dtype)
    return d


def _flat_mask(mask, shape, dtype):
    """(flat contiguous array, element strides broadcasting it to `shape`) of a mask of
    at most 4 dims; a one-element zero array without one."""
    if mask is None:
        return _dummy(dtype).reshape(1), (0, 0, 0, 0)
    m = np.ascontiguousarray(mask.reshape((1,) * (4 - mask.ndim) + mask.shape), dtype)
    strides = tuple(0 if m.shape[d] == 1 else m.strides[d] // m.itemsize for d in range(4))
    return m.reshape(-1), strides


def sdpa(q, k, v, mask, scale, noise, keep, out, p, pd):
    """out = dropout(safe_softmax(scale * q @ k^T + mask)) @ v over (N, H, ., .) arrays.

    q (N, H, L, E), k (N, H, S, E), v (N, H, S, Ev) and out (N, H, L, Ev) may be strided
    views (they reach only the BLAS products, `cblas.matmul`); p and pd are C-contiguous (N, H, L, S) outputs: the
    probabilities and the dropped-out ones (pd is p without dropout). mask (additive,
    broadcastable) and noise (0/1 draws, scaled by keep) may be None.
    """
    N = q.shape[0]
    has_mask, has_drop = mask is not None, noise is not None
    mask, mstrides = _flat_mask(mask, p.shape, p.dtype)
    noise = noise if has_drop else _dummy(p.dtype)
    scale, keep = p.dtype.type(scale), p.dtype.type(keep)

    def work(n0, n1):
        matmul(q[n0:n1], k[n0:n1].swapaxes(-1, -2), p[n0:n1])
        attention_probs(p, mask, mstrides, has_mask, scale, noise, keep, has_drop, p, pd,
                        n0, n1)
        matmul(pd[n0:n1], v[n0:n1], out[n0:n1])
    from . import batch_threads        # on use: no kernel here depends on it
    batch_threads.over_ranges(N, work, p.size * (q.shape[-1] + v.shape[-1]))


def sdpa_backward(q, k, v, p, pd, noise, keep, scale, dout, dq, dk, dv):
    """Gradients of `sdpa` from dout (N, H, L, Ev): dq, dk, dv (each None when not
    wanted, else an output array of its input's shape, strided views allowed)."""
    N = q.shape[0]
    has_drop = noise is not None
    noise = noise if has_drop else _dummy(p.dtype)
    scale, keep = p.dtype.type(scale), p.dtype.type(keep)
    ds = np.empty(p.shape, p.dtype)

    def work(n0, n1):
        if dv is not None:
            matmul(pd[n0:n1].swapaxes(-1, -2), dout[n0:n1], dv[n0:n1])
        if dq is None and dk is None:
            return
        matmul(dout[n0:n1], v[n0:n1].swapaxes(-1, -2), ds[n0:n1])
        attention_probs_backward(p, noise, keep, has_drop, ds, scale, ds, n0, n1)
        if dq is not None:
            matmul(ds[n0:n1], k[n0:n1], dq[n0:n1])
        if dk is not None:
            matmul(ds[n0:n1].swapaxes(-1, -2), q[n0:n1], dk[n0:n1])
    from . import batch_threads        # on use: no kernel here depends on it
    batch_threads.over_ranges(N, work, 2 * p.size * (q.shape[-1] + v.shape[-1]))
