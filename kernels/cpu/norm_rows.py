"""Row-vector L2 kernels for the CPU: F.normalize and F.cosine_similarity, forward and
backward, one pass over the data each.

Layout: every input is a flat C-contiguous array holding (outer, n, inner), the vectors
along the middle axis (x[(o*n + i)*inner + j], i = 0..n-1); the kernels take the flat
arrays and the sizes (1-D slices instead of 3-D views and their reshapes compile ~15%
faster). ``inner == 1`` (the reduced dim is the last) walks each row
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
def _dot_rows(a, b, acc, base, n, inner):
    """acc[j] = sum_i a[base + i*inner + j] * b[...] (float64), in memory order."""
    if inner == 1:
        ra = a[base:base + n]
        rb = b[base:base + n]
        s = 0.0
        for k in range(np.uint64(n)):
            s += np.float64(ra[k]) * np.float64(rb[k])
        acc[0] = s
        return
    acc[:] = 0.0
    for i in range(n):
        sa = a[base + i * inner:base + (i + 1) * inner]
        sb = b[base + i * inner:base + (i + 1) * inner]
        for j in range(np.uint64(inner)):
            acc[j] += np.float64(sa[j]) * np.float64(sb[j])


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _three_dots(a, b, aa, bb, ab, base, n, inner):
    """aa[j], bb[j], ab[j] = |a|^2, |b|^2, a.b of the vectors at ``base`` (float64), in
    one pass over both inputs."""
    if inner == 1:
        ra = a[base:base + n]
        rb = b[base:base + n]
        s11 = 0.0
        s22 = 0.0
        s12 = 0.0
        for k in range(np.uint64(n)):
            u = np.float64(ra[k])
            v = np.float64(rb[k])
            s11 += u * u
            s22 += v * v
            s12 += u * v
        aa[0] = s11
        bb[0] = s22
        ab[0] = s12
        return
    aa[:] = 0.0
    bb[:] = 0.0
    ab[:] = 0.0
    for i in range(n):
        sa = a[base + i * inner:base + (i + 1) * inner]
        sb = b[base + i * inner:base + (i + 1) * inner]
        for j in range(np.uint64(inner)):
            u = np.float64(sa[j])
            v = np.float64(sb[j])
            aa[j] += u * u
            bb[j] += v * v
            ab[j] += u * v


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _combine_rows(a, b, ca, cb, out, base, n, inner):
    """out[base + i*inner + j] = a[...] * ca[j] - b[...] * cb[j] (ca, cb float64)."""
    if inner == 1:
        p = ca[0]
        q = cb[0]
        ra = a[base:base + n]
        rb = b[base:base + n]
        ro = out[base:base + n]
        for k in range(np.uint64(n)):
            ro[k] = ra[k] * p - rb[k] * q
        return
    for i in range(n):
        sa = a[base + i * inner:base + (i + 1) * inner]
        sb = b[base + i * inner:base + (i + 1) * inner]
        so = out[base + i * inner:base + (i + 1) * inner]
        for j in range(np.uint64(inner)):
            so[j] = sa[j] * ca[j] - sb[j] * cb[j]


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def normalize_forward(x, n, inner, eps, out, nrm, den):
    """out = x / max(|x[o, :, j]|, eps) over flat (outer, n, inner) arrays; float64 norms
    into nrm (outer, inner); den (inner,) in x's dtype is scratch (the clamped norm
    rounded as the composite's)."""
    outer = nrm.shape[0]
    for o in range(outer):
        base = o * n * inner
        acc = nrm[o]
        _dot_rows(x, x, acc, base, n, inner)
        for j in range(inner):
            acc[j] = math.sqrt(acc[j])
            den[j] = acc[j]
            if den[j] < eps:
                den[j] = eps
        if inner == 1:
            d = den[0]
            rx = x[base:base + n]
            ro = out[base:base + n]
            for k in range(np.uint64(n)):
                ro[k] = rx[k] / d
        else:
            for i in range(n):
                sx = x[base + i * inner:base + (i + 1) * inner]
                so = out[base + i * inner:base + (i + 1) * inner]
                for j in range(np.uint64(inner)):
                    so[j] = sx[j] / den[j]


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def normalize_backward(g, x, n, inner, nrm, eps, gx, coef):
    """gx of normalize (see the module docstring) over flat (outer, n, inner) arrays;
    coef: float64 (2, inner) scratch."""
    ca = coef[0]
    cb = coef[1]
    for o in range(nrm.shape[0]):
        base = o * n * inner
        _dot_rows(g, x, cb, base, n, inner)
        for j in range(inner):
            nv = nrm[o, j]
            d = max(nv, eps)
            ca[j] = 1.0 / d
            cb[j] = cb[j] / (d * d * nv) if nv >= eps and nv > 0 else 0.0
        _combine_rows(g, x, ca, cb, gx, base, n, inner)


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def cosine_forward(x1, x2, n, inner, eps, out2, st):
    """out2[o, j] = cosine similarity of the vectors (o, :, j) of flat x1, x2; float64
    sums into st (3, outer, inner): |x1|^2, |x2|^2, x1.x2."""
    for o in range(out2.shape[0]):
        _three_dots(x1, x2, st[0, o], st[1, o], st[2, o], o * n * inner, n, inner)
        for j in range(inner):
            c1 = max(math.sqrt(st[0, o, j]), eps)
            c2 = max(math.sqrt(st[1, o, j]), eps)
            out2[o, j] = st[2, o, j] / (c1 * c2)


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def cosine_backward(g2, x1, x2, n, inner, st, eps, gx1, gx2, need1, need2, coef):
    """gx1/gx2 of cosine_similarity (see the module docstring) over flat arrays; written
    only where need1/need2; coef: float64 (3, inner) scratch."""
    ca = coef[0]
    c1b = coef[1]
    c2b = coef[2]
    for o in range(g2.shape[0]):
        for j in range(inner):
            n1 = math.sqrt(st[0, o, j])
            n2 = math.sqrt(st[1, o, j])
            c1 = max(n1, eps)
            c2 = max(n2, eps)
            g = np.float64(g2[o, j])
            ca[j] = g / (c1 * c2)
            s = g * st[2, o, j] / (c1 * c2)
            c1b[j] = s / (c1 * n1) if n1 > 0 else 0.0
            c2b[j] = s / (c2 * n2) if n2 > 0 else 0.0
        base = o * n * inner
        if need1:
            _combine_rows(x2, x1, ca, c1b, gx1, base, n, inner)
        if need2:
            _combine_rows(x1, x2, ca, c2b, gx2, base, n, inner)
