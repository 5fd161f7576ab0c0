"""Normalisation kernels for the CPU: batch norm here, layer and group norm in
`layer_norm.py` (re-exported, so ``norm.<name>`` reaches every kernel).

Raw NumPy arrays in, caller-allocated arrays out; no bounds checks (the op
layer validates shapes first). Layouts, all C-contiguous:

- batch norm: ``x3`` is the input viewed as ``(N, C, S)`` with ``S`` the
  product of the spatial dims (``S == 1`` for ``(N, C)`` input);
- layer norm: ``x2`` is ``(M, K)`` with ``K`` the product of the normalised
  (last) dims;
- group norm: ``x3`` is ``(N, C, S)``; group ``g`` of sample ``n`` is the
  contiguous block of channels ``g*C/G .. (g+1)*C/G``.

Statistics and weight/bias gradients are float64 arrays whatever the input
dtype (float32 or float64), so each kernel compiles once per input dtype.
Sums are taken in float64 around a per-row shift (the row's first value),
so one pass gives mean and variance without catastrophic cancellation.

Each kernel has a serial and a ``parallel=True`` variant; the Python
function of the same name without suffix picks one by size.
"""
import numba
import numpy as np

__all__ = [
    "batch_norm_forward_train", "batch_norm_forward_eval", "batch_norm_update_running",
    "batch_norm_stats", "channel_affine", "batch_norm_backward",
    "layer_norm_forward", "layer_norm_backward",
    "group_norm_forward", "group_norm_backward",
    "PARALLEL_MIN_ELEMENTS",
]

from .norm_common import FAST as _FAST, PARALLEL_MIN_ELEMENTS, use_parallel as _use_parallel


def _channel_block(C, S):
    """Channels per parallel task: one per task for images, blocks for (N, C) rows."""
    if S > 1:
        return 1
    return max(1, -(-C // (4 * numba.get_num_threads())))


# --------------------------------------------------------------------------
# batch norm: statistics
# --------------------------------------------------------------------------

@numba.njit(cache=True, fastmath=_FAST)
def _bn_stats_channels(x3, c0, c1, mean, var):
    """Per-channel mean and biased variance of ``x3[:, c0:c1, :]`` (one pass).

    for c: d = x3[n, c, s] - x3[0, c, 0]; mean[c] = shift + sum(d)/M;
    var[c] = sum(d*d)/M - (sum(d)/M)**2, with M = N*S. ``S == 1`` walks
    rows ``x3[n, c0:c1, 0]`` in memory order, using mean/var as accumulators.
    """
    N, _, S = x3.shape
    count = N * S
    if S == 1:
        for c in range(c0, c1):
            mean[c] = 0.0
            var[c] = 0.0
        for n in range(N):
            for c in range(c0, c1):
                d = np.float64(x3[n, c, 0]) - np.float64(x3[0, c, 0])
                mean[c] += d
                var[c] += d * d
        for c in range(c0, c1):
            m = mean[c] / count
            mean[c] = np.float64(x3[0, c, 0]) + m
            var[c] = max(var[c] / count - m * m, 0.0)
        return
    for c in range(c0, c1):
        shift = np.float64(x3[0, c, 0])
        s1 = 0.0
        s2 = 0.0
        for n in range(N):
            row = x3[n, c]
            for s in range(S):
                d = np.float64(row[s]) - shift
                s1 += d
                s2 += d * d
        m = s1 / count
        mean[c] = shift + m
        var[c] = max(s2 / count - m * m, 0.0)


@numba.njit(cache=True)
def batch_norm_stats_serial(x3, mean, var):
    """Serial: ``mean[c], var[c]`` (float64, biased) over dims N and S of ``x3``."""
    _bn_stats_channels(x3, 0, x3.shape[1], mean, var)


@numba.njit(cache=True, parallel=True)
def batch_norm_stats_parallel(x3, mean, var, block):
    """Parallel over blocks of ``block`` channels: same result as the serial kernel."""
    C = x3.shape[1]
    for b in numba.prange((C + block - 1) // block):
        c0 = b * block
        _bn_stats_channels(x3, c0, min(C, c0 + block), mean, var)


def batch_norm_stats(x3, mean, var):
    """Fill float64 ``mean``/``var`` (biased) of shape (C,) from ``x3`` (N, C, S), N*S >= 1.

    Example:
        >>> x = np.random.rand(4, 3, 5).astype(np.float32)
        >>> m, v = np.empty(3), np.empty(3)
        >>> batch_norm_stats(x, m, v)
    """
    N, C, S = x3.shape
    if _use_parallel(x3.size, C):
        batch_norm_stats_parallel(x3, mean, var, _channel_block(C, S))
    else:
        batch_norm_stats_serial(x3, mean, var)


# --------------------------------------------------------------------------
# batch norm: per-channel affine (training and eval forward)
# --------------------------------------------------------------------------

@numba.njit(cache=True)
def _affine_sample(x3, scale, shift, out3, n):
    """out3[n, c, s] = x3[n, c, s] * scale[c] + shift[c] for one sample n."""
    C = x3.shape[1]
    S = x3.shape[2]
    if S == 1:
        for c in range(C):
            out3[n, c, 0] = x3[n, c, 0] * scale[c] + shift[c]
        return
    for c in range(C):
        a = scale[c]
        b = shift[c]
        xr = x3[n, c]
        orow = out3[n, c]
        for s in range(S):
            orow[s] = xr[s] * a + b


@numba.njit(cache=True)
def channel_affine_serial(x3, scale, shift, out3):
    """Serial: ``out3[n, c, s] = x3[n, c, s] * scale[c] + shift[c]`` (scale/shift float64)."""
    for n in range(x3.shape[0]):
        _affine_sample(x3, scale, shift, out3, n)


@numba.njit(cache=True, parallel=True)
def channel_affine_parallel(x3, scale, shift, out3):
    """Parallel over samples n: same result as the serial kernel."""
    for n in numba.prange(x3.shape[0]):
        _affine_sample(x3, scale, shift, out3, n)


def channel_affine(x3, scale, shift, out3):
    """``out3 = x3 * scale[c] + shift[c]``: batch norm's forward once the stats are known.

    Training: ``scale = w * invstd``, ``shift = b - mean * scale``; eval: the
    same with the running statistics.

    Example:
        >>> x = np.ones((2, 3, 4)); out = np.empty_like(x)
        >>> channel_affine(x, np.full(3, 2.0), np.zeros(3), out)  # out == 2
    """
    if _use_parallel(x3.size, x3.shape[0]):
        channel_affine_parallel(x3, scale, shift, out3)
    else:
        channel_affine_serial(x3, scale, shift, out3)


# --------------------------------------------------------------------------
# batch norm: forward as the op layer calls it
# --------------------------------------------------------------------------

def batch_norm_forward_train(x3, weight, bias, eps, out3, mean, var, invstd):
    """Training forward: batch stats into float64 ``mean``/``var``/``invstd`` (C,), then affine.

    ``weight``/``bias`` are (C,) arrays (ones/zeros when the layer has none);
    ``var`` is the biased variance (the caller derives the unbiased one for
    the running statistics).

    Example:
        >>> x = np.random.rand(4, 3, 5); out = np.empty_like(x)
        >>> m, v, r = np.empty(3), np.empty(3), np.empty(3)
        >>> batch_norm_forward_train(x, np.ones(3), np.zeros(3), 1e-5, out, m, v, r)
    """
    batch_norm_stats(x3, mean, var)
    np.divide(1.0, np.sqrt(var + eps), out=invstd)
    scale = weight * invstd
    channel_affine(x3, scale, bias - mean * scale, out3)


def batch_norm_forward_eval(x3, weight, bias, running_mean, running_var, eps, out3,
                            mean, invstd):
    """Eval forward with the running stats (any float dtype), saved as float64 ``mean``/``invstd``.

    Example:
        >>> x = np.random.rand(4, 3, 5); out = np.empty_like(x)
        >>> batch_norm_forward_eval(x, np.ones(3), np.zeros(3), np.zeros(3), np.ones(3),
        ...                         1e-5, out, np.empty(3), np.empty(3))
    """
    mean[:] = running_mean
    np.divide(1.0, np.sqrt(running_var.astype(np.float64) + eps), out=invstd)
    scale = weight * invstd
    channel_affine(x3, scale, bias - mean * scale, out3)


def batch_norm_update_running(running_mean, running_var, mean, var, momentum, count):
    """In place: running = (1 - momentum) * running + momentum * batch stat.

    The variance enters unbiased (``var * count / (count - 1)``), as in
    PyTorch. Either running array may be None (then it is skipped).

    Example:
        >>> rm, rv = np.zeros(3), np.ones(3)
        >>> batch_norm_update_running(rm, rv, np.ones(3), np.ones(3), 0.1, 4)
    """
    if running_mean is not None:
        running_mean *= 1.0 - momentum
        running_mean += (momentum * mean).astype(running_mean.dtype)
    if running_var is not None:
        unbiased = var * (count / max(count - 1, 1))
        running_var *= 1.0 - momentum
        running_var += (momentum * unbiased).astype(running_var.dtype)


# --------------------------------------------------------------------------
# batch norm: backward
# --------------------------------------------------------------------------

@numba.njit(cache=True, fastmath=_FAST)
def _bn_backward_channels(dy3, x3, mean, invstd, weight, gx3, gw, gb,
                          c0, c1, batch_stats, compute_gx):
    """Batch norm backward for channels c0..c1.

    gb[c] = sum(dy); gw[c] = sum(dy * (x - mean)) * invstd;
    gx = w*invstd * (dy - gb/M - (x - mean) * invstd**2 * sum(dy*(x-mean))/M)
    when the batch statistics were used (training), else gx = w*invstd*dy.
    """
    N, _, S = x3.shape
    count = N * S
    if S == 1:
        for c in range(c0, c1):
            gb[c] = 0.0
            gw[c] = 0.0
        for n in range(N):
            for c in range(c0, c1):
                g = np.float64(dy3[n, c, 0])
                gb[c] += g
                gw[c] += g * (x3[n, c, 0] - mean[c])
        if compute_gx:
            for n in range(N):
                for c in range(c0, c1):
                    r = invstd[c]
                    k = weight[c] * r
                    g = np.float64(dy3[n, c, 0])
                    if batch_stats:
                        g -= gb[c] / count + (x3[n, c, 0] - mean[c]) * (r * r * gw[c] / count)
                    gx3[n, c, 0] = k * g
        for c in range(c0, c1):
            gw[c] *= invstd[c]
        return
    for c in range(c0, c1):
        mu = mean[c]
        sdy = 0.0
        sdyx = 0.0
        for n in range(N):
            gr = dy3[n, c]
            xr = x3[n, c]
            for s in range(S):
                g = np.float64(gr[s])
                sdy += g
                sdyx += g * (xr[s] - mu)
        r = invstd[c]
        gb[c] = sdy
        gw[c] = sdyx * r
        if compute_gx:
            k = weight[c] * r
            if batch_stats:
                mdy = sdy / count
                proj = r * r * sdyx / count
            else:
                mdy = 0.0
                proj = 0.0
            for n in range(N):
                gr = dy3[n, c]
                xr = x3[n, c]
                outr = gx3[n, c]
                for s in range(S):
                    outr[s] = k * (gr[s] - mdy - (xr[s] - mu) * proj)


@numba.njit(cache=True)
def batch_norm_backward_serial(dy3, x3, mean, invstd, weight, gx3, gw, gb,
                               batch_stats, compute_gx):
    """Serial batch norm backward over all channels (see ``_bn_backward_channels``)."""
    _bn_backward_channels(dy3, x3, mean, invstd, weight, gx3, gw, gb,
                          0, x3.shape[1], batch_stats, compute_gx)


@numba.njit(cache=True, parallel=True)
def batch_norm_backward_parallel(dy3, x3, mean, invstd, weight, gx3, gw, gb,
                                 batch_stats, compute_gx, block):
    """Parallel over blocks of ``block`` channels: same result as the serial kernel."""
    C = x3.shape[1]
    for b in numba.prange((C + block - 1) // block):
        c0 = b * block
        _bn_backward_channels(dy3, x3, mean, invstd, weight, gx3, gw, gb,
                              c0, min(C, c0 + block), batch_stats, compute_gx)


def batch_norm_backward(dy3, x3, mean, invstd, weight, gx3, gw, gb,
                        batch_stats=True, compute_gx=True):
    """Batch norm gradients in one kernel: ``gx3`` (like x3), float64 ``gw``/``gb`` (C,).

    ``mean``/``invstd`` (float64, C) are the statistics the forward used:
    the batch's when ``batch_stats`` (training), else the running ones (then
    gx = w * invstd * dy). ``weight`` is the (C,) affine weight (ones when
    the layer has none). ``gx3`` is not written when ``compute_gx`` is False.

    Example:
        >>> dy = np.ones((4, 3, 5)); x = np.random.rand(4, 3, 5)
        >>> gx = np.empty_like(x); gw, gb = np.empty(3), np.empty(3)
        >>> batch_norm_backward(dy, x, x.mean((0, 2)), np.ones(3), np.ones(3), gx, gw, gb)
    """
    N, C, S = x3.shape
    if _use_parallel(x3.size, C):
        batch_norm_backward_parallel(dy3, x3, mean, invstd, weight, gx3, gw, gb,
                                     batch_stats, compute_gx, _channel_block(C, S))
    else:
        batch_norm_backward_serial(dy3, x3, mean, invstd, weight, gx3, gw, gb,
                                   batch_stats, compute_gx)


from .layer_norm import (  # noqa: E402,F401  (one namespace for the op layer and tests)
    group_norm_backward, group_norm_backward_serial, group_norm_backward_parallel,
    group_norm_forward, group_norm_forward_serial, group_norm_forward_parallel,
    layer_norm_backward, layer_norm_backward_serial, layer_norm_backward_parallel,
    layer_norm_forward, layer_norm_forward_serial, layer_norm_forward_parallel)
