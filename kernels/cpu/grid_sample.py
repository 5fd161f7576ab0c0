"""grid_sample kernels for the CPU: forward and backward, with the per-point bodies of
`kernels/grid_sample.py` (coordinates, taps).

Contracts (raw C-contiguous float32/float64 arrays, outputs allocated by the op layer;
2-D sampling is the D = 1 case)::

    grid_sample_forward(inp (N,C,D*H*W), grid (N,P,nd), W, H, D, mode, padding, align,
                        out (N,C,P))
        for n, p: out[n, :, p] = sum over the point's taps k of w_k * inp[n, :, idx_k]
    grid_sample_backward(gout (N,C,P), inp, grid, W, H, D, mode, padding, align,
                         gin (N,C,D*H*W) zeroed or None, ggrid (N,P,nd))
        gin[n, :, idx_k] += w_k * gout[n, :, p];  ggrid[n, p] = d loss / d grid[n, p]

    Both take kept=None or the tables of `tables(N, P, nd, mode, dtype)` (CPU only): the
    forward fills them, the backward reads them instead of tabulating again.

Per batch element the taps of every point are tabulated first (index, weight, weight
derivatives: scratch the launcher allocates, or the kept tables), then each channel
plane is walked point by point. Walking the channels of one point instead strides by
D*H*W, a power of two for usual images, and the cache sets conflict: 9 ns per
multiply-add against ~1 here. Batch elements are independent: ranges of them run on the
helper threads. 16x32x32x32 bilinear, 32x32 points, float32, one thread: forward 2.8 ->
1.8 ms, backward 4.0 -> ~2.2 (tables kept; tabulating takes ~0.9 of it); same bits.
"""
import numba
import numpy as np

from nbtorch.kernels.grid_sample import n_taps, point_coords, tap

from . import batch_threads

__all__ = ["grid_sample_forward", "grid_sample_backward", "tables"]


@numba.njit(cache=True, nogil=True)
def _tabulate(grid, n, W, H, D, mode, padding, align, idx, wt, dw, mult):
    """Taps of every point of batch element n; returns their count per point."""
    P, nd = grid.shape[1], grid.shape[2]
    K = n_taps(mode, nd)
    for p in range(P):
        gz = grid[n, p, 2] if nd == 3 else 0.0
        ix, iy, iz, mx, my, mz = point_coords(grid[n, p, 0], grid[n, p, 1], gz, W, H, D,
                                              mode, padding, align)
        mult[p, 0], mult[p, 1], mult[p, 2] = mx, my, mz
        for k in range(K):
            i, w, wx, wy, wz = tap(k, ix, iy, iz, W, H, D, mode, padding, align)
            idx[p, k] = i
            wt[p, k] = w
            dw[p, k, 0], dw[p, k, 1], dw[p, k, 2] = wx, wy, wz
    return K


@numba.njit(cache=True, nogil=True)
def _forward(inp, grid, W, H, D, mode, padding, align, out, idx, wt, dw, mult, keep):
    """Tables of element n in idx[n], ... when `keep` (the backward reuses them), else in
    idx[0], ... (scratch). Bilinear 2-D (4 taps) runs its taps unrolled: 1.0 ms -> 0.5 per
    million points, one thread (same operations, same order)."""
    N, C = inp.shape[0], inp.shape[1]
    P, S = grid.shape[1], idx.shape[2]
    for n in range(N):
        t = n if keep else 0
        K = _tabulate(grid, n, W, H, D, mode, padding, align, idx[t], wt[t], dw[t], mult[t])
        idxf, wtf = idx[t].reshape(P * S), wt[t].reshape(P * S)
        for c in range(C):
            src = inp[n, c]
            dst = out[n, c]
            for p in range(P):
                acc = 0.0
                b = p * S
                if K == 4:
                    for k in range(4):
                        i = idxf[np.uint64(b + k)]
                        if i >= 0:
                            acc += wtf[np.uint64(b + k)] * src[np.uint64(i)]
                else:
                    for k in range(K):
                        i = idxf[np.uint64(b + k)]
                        if i >= 0:
                            acc += wtf[np.uint64(b + k)] * src[np.uint64(i)]
                dst[np.uint64(p)] = acc


@numba.njit(cache=True, nogil=True)
def _backward(gout, inp, grid, W, H, D, mode, padding, align, gin, want_input, ggrid,
              idx, wt, dw, mult, acc, tabulated):
    """`tabulated`: idx[n], ... hold element n's taps (the forward kept them); else they
    are tabulated here into idx[0], ... (unrolling the taps here, as in _forward, gained
    only ~10% for its compile time)."""
    N, C = inp.shape[0], inp.shape[1]
    P, nd = grid.shape[1], grid.shape[2]
    S = idx.shape[2]
    accf = acc.reshape(acc.size)
    for n in range(N):
        t = n if tabulated else 0
        if tabulated:
            K = n_taps(mode, nd)
        else:
            K = _tabulate(grid, n, W, H, D, mode, padding, align, idx[0], wt[0], dw[0],
                          mult[0])
        idxf, wtf = idx[t].reshape(P * S), wt[t].reshape(P * S)
        dwt, mt = dw[t], mult[t]
        for j in range(accf.size):
            accf[np.uint64(j)] = 0.0
        for c in range(C):
            src = inp[n, c]
            g = gout[n, c]
            gi = gin[n, c] if want_input else gin[0, 0]
            for p in range(P):
                gp = g[np.uint64(p)]
                b = p * S
                for k in range(K):
                    i = idxf[np.uint64(b + k)]
                    if i >= 0:
                        if want_input:
                            gi[np.uint64(i)] += wtf[np.uint64(b + k)] * gp
                        accf[np.uint64(b + k)] += src[np.uint64(i)] * gp
        for p in range(P):
            ax, ay, az = 0.0, 0.0, 0.0
            for k in range(K):
                ax += dwt[p, k, 0] * acc[p, k]
                ay += dwt[p, k, 1] * acc[p, k]
                az += dwt[p, k, 2] * acc[p, k]
            ggrid[n, p, 0] = ax * mt[p, 0]
            ggrid[n, p, 1] = ay * mt[p, 1]
            if nd == 3:
                ggrid[n, p, 2] = az * mt[p, 2]


_TAPS = {(0, 2): 4, (0, 3): 8, (1, 2): 1, (1, 3): 1, (2, 2): 16}
# Work (points x taps x channels) from which batch elements are split over the helper
# threads (batch_threads.py; each range tabulates its own elements).
SPLIT_MIN_WORK = 1 << 18
# Tables kept from the forward for the backward up to this many bytes (points x taps x
# 24-36 bytes; 16x32x32 points bilinear: 1.6 MB), else the backward tabulates again.
KEEP_MAX_BYTES = 1 << 26


def tables(N, P, nd, mode, dtype):
    """The tap tables of N elements of P points (idx, weight, weight derivatives,
    coordinate multipliers) for grid_sample_forward to fill and grid_sample_backward to
    reuse, or None when they would pass KEEP_MAX_BYTES."""
    K = _TAPS[mode, nd]
    item = np.dtype(dtype).itemsize
    if N * P * (K * (8 + 4 * item) + 3 * item) > KEEP_MAX_BYTES:
        return None
    return _scratch(N, P, K, dtype)


def _scratch(T, P, K, dtype):
    """(idx, weight, weight derivatives, coordinate multipliers) of T elements, K taps."""
    return (np.empty((T, P, K), np.int64), np.empty((T, P, K), dtype),
            np.empty((T, P, K, 3), dtype), np.empty((T, P, 3), dtype))


def _over_elements(N, work, fn):
    """fn(b0, b1) over ranges of batch elements on the helper threads, or fn(0, N)."""
    parts = batch_threads.ranges(N, work, SPLIT_MIN_WORK)
    if parts is None:
        fn(0, N)
    else:
        batch_threads.run(fn, parts, (fn.__code__, work.bit_length()))


def grid_sample_forward(inp, grid, W, H, D, mode, padding, align, out, kept=None):
    """kept: `tables(...)` to fill for the backward (CPU only), or None."""
    N, P, nd = grid.shape
    K = _TAPS[mode, nd]

    def run(b0, b1):
        t = _scratch(1, P, K, inp.dtype) if kept is None else tuple(a[b0:b1] for a in kept)
        _forward(inp[b0:b1], grid[b0:b1], W, H, D, mode, padding, bool(align), out[b0:b1],
                 *t, kept is not None)
    _over_elements(N, out.size * K, run)


def grid_sample_backward(gout, inp, grid, W, H, D, mode, padding, align, gin, ggrid,
                         kept=None):
    """kept: the tables grid_sample_forward filled (CPU only), or None."""
    want = gin is not None
    N, P, nd = grid.shape
    K = _TAPS[mode, nd]
    dummy = np.zeros((1, 1, 1), inp.dtype)

    def run(b0, b1):
        t = _scratch(1, P, K, inp.dtype) if kept is None else tuple(a[b0:b1] for a in kept)
        _backward(gout[b0:b1], inp[b0:b1], grid[b0:b1], W, H, D, mode, padding, bool(align),
                  gin[b0:b1] if want else dummy, want, ggrid[b0:b1], *t,
                  np.empty((P, K), np.float64), kept is not None)
    _over_elements(N, gout.size * K, run)
