"""Row-vector L2 kernels for the CPU: F.normalize and F.cosine_similarity, forward and
backward, one pass over the data each.

Layout: every input is C-contiguous (outer, n, inner) and the vectors run along the
middle axis: x3[o, :, j]. ``inner == 1`` (the reduced dim is the last) walks each row
in memory order; ``inner > 1`` walks the n slices of length ``inner`` in memory order,
accumulating ``inner`` sums at once (columns are never walked). Sums are float64
whatever the dtype (float32 or float64); per-vector statistics and coefficients are
float64 (outer, inner) arrays the op layer allocates. No bounds checks: the op layer
(`nbtorch/ops/normalization_rows.py`, `distance_cosine.py`) validates shapes.

    normalize:  n = |x|, d = max(n, eps), y = x / d
                dx = g / d - x * sum(g x) / (d^2 n)     (second term only where n >= eps)
    cosine:     c_i = max(|x_i|, eps), y = sum(x1 x2) / (c1 c2)
                dx1 = g (x2 / (c1 c2) - x1 sum(x1 x2) / (c1^2 c2 |x1|)), dx2 alike
"""
import math

import numba
import numpy as np

__all__ = ["normalize_forward", "normalize_backward", "cosine_forward", "cosine_backward"]

_FAST = {"reassoc"}      # reassociation alone vectorises the sums; NaN still propagates


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _dot_rows(a3, b3, acc, o):
    """acc[j] = sum_i a3[o, i, j] * b3[o, i, j] (float64), slices walked in memory order."""
    n, inner = a3.shape[1], a3.shape[2]
    a = a3[o].reshape(n * inner)
    b = b3[o].reshape(n * inner)
    if inner == 1:
        s = 0.0
        for k in range(n):
            s += np.float64(a[k]) * np.float64(b[k])
        acc[0] = s
        return
    for j in range(inner):
        acc[j] = 0.0
    for i in range(n):
        sa = a[i * inner:(i + 1) * inner]
        sb = b[i * inner:(i + 1) * inner]
        for j in range(inner):
            acc[j] += np.float64(sa[j]) * np.float64(sb[j])


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _three_dots(a3, b3, st, o):
    """st[0, o, j], st[1, o, j], st[2, o, j] = |a|^2, |b|^2, a.b of the vectors (o, :, j),
    in one float64 pass over both inputs."""
    n, inner = a3.shape[1], a3.shape[2]
    a = a3[o].reshape(n * inner)
    b = b3[o].reshape(n * inner)
    if inner == 1:
        s11 = 0.0
        s22 = 0.0
        s12 = 0.0
        for k in range(n):
            u = np.float64(a[k])
            v = np.float64(b[k])
            s11 += u * u
            s22 += v * v
            s12 += u * v
        st[0, o, 0] = s11
        st[1, o, 0] = s22
        st[2, o, 0] = s12
        return
    aa = st[0, o]
    bb = st[1, o]
    ab = st[2, o]
    for j in range(inner):
        aa[j] = 0.0
        bb[j] = 0.0
        ab[j] = 0.0
    for i in range(n):
        sa = a[i * inner:(i + 1) * inner]
        sb = b[i * inner:(i + 1) * inner]
        for j in range(inner):
            u = np.float64(sa[j])
            v = np.float64(sb[j])
            aa[j] += u * u
            bb[j] += v * v
            ab[j] += u * v


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _combine_rows(a3, b3, ca, cb, out3, o):
    """out3[o, i, j] = a3[o, i, j] * ca[j] - b3[o, i, j] * cb[j] (ca, cb float64)."""
    n, inner = a3.shape[1], a3.shape[2]
    a = a3[o].reshape(n * inner)
    b = b3[o].reshape(n * inner)
    out = out3[o].reshape(n * inner)
    if inner == 1:
        p = ca[0]
        q = cb[0]
        for k in range(n):
            out[k] = a[k] * p - b[k] * q
        return
    for i in range(n):
        sa = a[i * inner:(i + 1) * inner]
        sb = b[i * inner:(i + 1) * inner]
        so = out[i * inner:(i + 1) * inner]
        for j in range(inner):
            so[j] = sa[j] * ca[j] - sb[j] * cb[j]


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def normalize_forward(x3, eps, out3, nrm, den):
    """out3 = x3 / max(|x3[o, :, j]|, eps); float64 norms into nrm (outer, inner); den
    (inner,) in x's dtype is scratch (the clamped norm rounded as the composite's)."""
    outer, n, inner = x3.shape
    for o in range(outer):
        _dot_rows(x3, x3, nrm[o], o)
        for j in range(inner):
            nrm[o, j] = math.sqrt(nrm[o, j])
            den[j] = nrm[o, j]
            if den[j] < eps:
                den[j] = eps
        x = x3[o].reshape(n * inner)
        out = out3[o].reshape(n * inner)
        if inner == 1:
            d = den[0]
            for k in range(n):
                out[k] = x[k] / d
        else:
            for i in range(n):
                sx = x[i * inner:(i + 1) * inner]
                so = out[i * inner:(i + 1) * inner]
                for j in range(inner):
                    so[j] = sx[j] / den[j]


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def normalize_backward(g3, x3, nrm, eps, gx3, coef):
    """gx3 of normalize (see the module docstring); coef: float64 (2, inner) scratch."""
    outer = x3.shape[0]
    ca = coef[0]
    cb = coef[1]
    for o in range(outer):
        _dot_rows(g3, x3, cb, o)
        for j in range(ca.shape[0]):
            nv = nrm[o, j]
            d = max(nv, eps)
            ca[j] = 1.0 / d
            cb[j] = cb[j] / (d * d * nv) if nv >= eps and nv > 0 else 0.0
        _combine_rows(g3, x3, ca, cb, gx3, o)


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def cosine_forward(x1, x2, eps, out2, st):
    """out2[o, j] = cosine similarity of x1[o, :, j] and x2[o, :, j]; float64 sums into
    st (3, outer, inner): |x1|^2, |x2|^2, x1.x2."""
    for o in range(x1.shape[0]):
        _three_dots(x1, x2, st, o)
        for j in range(x1.shape[2]):
            c1 = max(math.sqrt(st[0, o, j]), eps)
            c2 = max(math.sqrt(st[1, o, j]), eps)
            out2[o, j] = st[2, o, j] / (c1 * c2)


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def cosine_backward(g2, x1, x2, st, eps, gx1, gx2, need1, need2, coef):
    """gx1/gx2 of cosine_similarity (see the module docstring); written only where
    need1/need2; coef: float64 (3, inner) scratch."""
    ca = coef[0]
    c1b = coef[1]
    c2b = coef[2]
    for o in range(x1.shape[0]):
        for j in range(x1.shape[2]):
            n1 = math.sqrt(st[0, o, j])
            n2 = math.sqrt(st[1, o, j])
            c1 = max(n1, eps)
            c2 = max(n2, eps)
            g = np.float64(g2[o, j])
            ca[j] = g / (c1 * c2)
            s = g * st[2, o, j] / (c1 * c2)
            c1b[j] = s / (c1 * n1) if n1 > 0 else 0.0
            c2b[j] = s / (c2 * n2) if n2 > 0 else 0.0
        if need1:
            _combine_rows(x2, x1, ca, c1b, gx1, o)
        if need2:
            _combine_rows(x1, x2, ca, c2b, gx2, o)
