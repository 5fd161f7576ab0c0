"""Filters of more than two taps for `interpolate`: bicubic (A = -0.75, edge pixels
repeated) and the antialiased filters (bilinear, bicubic with A = -0.5, Lanczos-3) whose
support widens with the downscale factor, as PyTorch's CPU kernels compute them.

Each axis gets a tap table, index (out, K) and weight (out, K), applied as a sum of
two-tap linear gathers (`resampling.LerpAxisFn`: its adjoint is its backward, so the
gradients, and their gradients, are exact).
"""
import math

import numpy as np

__all__ = ["cubic_taps", "antialias_taps", "apply_taps"]


def _cubic_weights(t, A):
    """The 4 weights (offsets -1, 0, 1, 2) of Keys' cubic convolution at fraction t."""
    def near(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], -1)


def _align_scale(in_size, out_size, ftype):
    return ftype(in_size - 1) / ftype(out_size - 1) if out_size > 1 else ftype(0)


def cubic_taps(in_size, out_size, scale, align_corners, ftype):
    """(index, weight) tables of bicubic interpolation along one axis."""
    from .resampling import _scale
    dst = np.arange(out_size).astype(ftype)
    if align_corners:
        src = _align_scale(in_size, out_size, ftype) * dst
    else:
        src = _scale(in_size, out_size, scale, ftype) * (dst + ftype(0.5)) - ftype(0.5)
    base = np.floor(src)
    w = _cubic_weights((src - base).astype(ftype), ftype(-0.75)).astype(ftype)
    idx = np.clip(base.astype(np.int64)[:, None] + np.arange(-1, 3), 0, in_size - 1)
    return idx, w


def _linear_filter(x):
    x = np.abs(x)
    return np.where(x < 1, 1 - x, 0)


def _cubic_filter(x):
    x, a = np.abs(x), -0.5
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, 0))


def _lanczos_filter(x):
    x = np.asarray(x, np.float64)
    return np.where(np.abs(x) < 3, np.sinc(x) * np.sinc(x / 3), 0)


_FILTERS = {"bilinear": (2, _linear_filter), "bicubic": (4, _cubic_filter),
            "lanczos": (6, _lanczos_filter)}


def antialias_taps(in_size, out_size, scale, align_corners, mode, ftype):
    """(index, weight) tables of an antialiased resize along one axis: each output pixel
    averages the input under the filter stretched by the downscale factor, normalised."""
    from .resampling import _scale
    interp_size, filt = _FILTERS[mode]
    s = _align_scale(in_size, out_size, ftype) if align_corners \
        else _scale(in_size, out_size, scale, ftype)
    support = interp_size * 0.5 * s if s >= 1 else interp_size * 0.5
    invscale = 1.0 / s if s >= 1 else 1.0
    K = int(math.ceil(support)) * 2 + 1
    idx = np.zeros((out_size, K), np.int64)
    w = np.zeros((out_size, K), ftype)
    for i in range(out_size):
        center = s * (i + ftype(0.5))
        lo = max(int(center - support + 0.5), 0)
        n = min(int(center + support + 0.5), in_size) - lo
        wi = filt((np.arange(n) + lo - center + 0.5) * invscale).astype(ftype)
        total = wi.sum()
        idx[i, :n] = np.arange(lo, lo + n)
        w[i, :n] = wi / total if total != 0 else wi
    return idx, w


def apply_taps(x, dim, idx, w):
    """out[..., m, ...] = sum_k w[m, k] * x[..., idx[m, k], ...] along `dim`."""
    from .resampling import LerpAxisFn
    K = idx.shape[1]
    if K % 2:
        idx = np.concatenate([idx, np.zeros_like(idx[:, :1])], 1)
        w = np.concatenate([w, np.zeros_like(w[:, :1])], 1)
    out = None
    for k in range(0, idx.shape[1], 2):
        if k and not (w[:, k:k + 2] != 0).any():
            continue
        part = LerpAxisFn.apply(x, dim, (np.ascontiguousarray(idx[:, k]),
                                         np.ascontiguousarray(idx[:, k + 1]),
                                         np.ascontiguousarray(w[:, k]),
                                         np.ascontiguousarray(w[:, k + 1])))
        out = part if out is None else out + part
    return out
