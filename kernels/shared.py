"""Small bodies the CPU and CUDA kernels share, written once.

Each is a plain Python function marked ``register_jitable``: Numba compiles it
into whatever calls it, an ``@njit`` loop or a ``@cuda.jit`` kernel (the
simulator runs it as Python), so the two devices cannot drift apart. Larger
per-element algorithms shared the same way live beside their family
(`sampling.py`, the optimizer element functions, `scalar.py`'s elementwise
bodies).
"""
import math

import numpy as np
from numba.extending import register_jitable

__all__ = ["advance_index", "copy_into", "avg_window", "adaptive_window", "norm_term", "norm_finish",
           "group_norm_terms", "group_norm_input_grad", "sorted_runs", "reduce_segment",
           "search_sorted", "log_add_exp", "pair_distance"]


# ---- copies ----------------------------------------------------------------------------

@register_jitable
def advance_index(idx, shape, last):
    """Step the multi-index idx[0..last] to the next position of shape[0..last] in C
    order (an odometer: the strided kernels walk their outer dims with it)."""
    k = last
    while k >= 0:
        idx[k] += 1
        if idx[k] < shape[k]:
            return
        idx[k] = 0
        k -= 1


@register_jitable
def copy_into(dst, src):
    """dst[:] = src for 1-D arrays of one length, as a loop. (Numba's CPU slice
    assignment from an array compiles an error path that formats both shapes with
    f-strings: about 3 s of compile time in each new process; this loop: 0.1 s.)"""
    for j in range(dst.size):
        dst[j] = src[j]


# ---- pooling windows -------------------------------------------------------------------

@register_jitable
def avg_window(o, stride, pad, kernel, size, count_include_pad):
    """Output o's clipped window [lo, hi) and the count PyTorch divides by."""
    start = o * stride - pad
    end = min(start + kernel, size + pad)
    lo, hi = max(start, 0), min(end, size)
    return lo, hi, (end - start) if count_include_pad else hi - lo


@register_jitable
def adaptive_window(i, size, n_out):
    """Adaptive pooling's window i: [floor(i*L/M), ceil((i+1)*L/M))."""
    return (i * size) // n_out, ((i + 1) * size + n_out - 1) // n_out


# ---- vector norms ------------------------------------------------------------------------

@register_jitable
def norm_term(a, p):
    """a^p, the term of a p-norm for a = |v| in the accumulation type (p = 0 counts
    non-zeros)."""
    if p == 2.0:
        return a * a
    if p == 1.0:
        return a
    if p == 0.0:
        return 1.0 if a != 0 else 0.0
    return a ** p


@register_jitable
def norm_finish(s, p):
    """The p-norm from the sum of its terms."""
    if p == 2.0:
        return math.sqrt(s)
    if p == 1.0 or p == 0.0:
        return s
    return s ** (1.0 / p)


# ---- group norm backward -------------------------------------------------------------------

@register_jitable
def group_norm_terms(sum_g, sum_gx, rstd, count):
    """(mean of w*dy, rstd^2 * mean of w*dy*(x-mean)) over one group of `count` elements."""
    return sum_g / count, rstd * rstd * sum_gx / count


@register_jitable
def group_norm_input_grad(dy, x, w, mean, rstd, mg, proj):
    """gx = rstd * (w*dy - mg - (x - mean) * proj) for one element."""
    return rstd * (w * dy - mg - (x - mean) * proj)


# ---- runs of sorted values ---------------------------------------------------------------

@register_jitable
def sorted_runs(values, order, uniques, inverse, counts):
    """Runs of equal sorted `values` (each NaN its own run, as PyTorch): uniques[u] = value
    of run u, counts[u] = its length, inverse[order[i]] = run of element i; returns the
    number of runs."""
    u = -1
    for i in range(values.size):
        v = values[i]
        if i == 0 or v != values[i - 1]:
            u += 1
            uniques[u] = v
            counts[u] = 0
        counts[u] += 1
        inverse[order[i]] = u
    return u + 1


@register_jitable
def search_sorted(seq, v, right):
    """PyTorch's binary search in the sorted row `seq`: the first i with seq[i] >= v
    (> v if right); written as !(seq[mid] >= v) so that NaN (in seq or v) lands where
    PyTorch puts it."""
    lo = 0
    hi = seq.size
    while lo < hi:
        mid = lo + ((hi - lo) >> 1)
        m = seq[mid]
        if not (m > v if right else m >= v):
            lo = mid + 1
        else:
            hi = mid
    return lo


@register_jitable
def log_add_exp(a, b):
    """log(exp(a) + exp(b)) without overflow; NaN propagates, equal infinities stay."""
    if a != a or b != b:
        return a + b
    mx = a if a > b else b
    mn = b if a > b else a
    if mn == mx and (mx == math.inf or mx == -math.inf):
        return mx
    return mx + math.log1p(math.exp(mn - mx))


@register_jitable
def pair_distance(a, b, p):
    """The p-norm distance of rows a and b, accumulated in float64 (p = 0 counts the
    differing coordinates, p = inf takes the largest difference)."""
    acc = 0.0
    for k in range(a.size):
        d = abs(np.float64(a[k]) - np.float64(b[k]))
        if p == math.inf:
            if d > acc or d != d:
                acc = d
        elif p == 0.0:
            if d != 0.0:
                acc += 1.0
        elif p == 1.0:
            acc += d
        elif p == 2.0:
            acc += d * d
        else:
            acc += d ** p
    if p == 2.0:
        return math.sqrt(acc)
    if p == math.inf or p == 0.0 or p == 1.0:
        return acc
    return acc ** (1.0 / p)


# ---- scatter reductions --------------------------------------------------------------------

@register_jitable
def reduce_segment(dst, t, values, lo, hi, mode, include_self):
    """dst[t] = reduce(dst[t] (if include_self), values[lo:hi]) for lo < hi; mode 0 sum,
    1 prod, 2 mean, 3 amax, 4 amin (NaN propagates), 5 mean with floor division (the
    integer mean, as PyTorch)."""
    if include_self:
        acc = dst[t]
    else:
        acc = values[lo]
        lo += 1
    count = 1
    for i in range(lo, hi):
        v = values[i]
        if mode == 1:
            acc *= v
        elif mode == 3:
            if v > acc or v != v:
                acc = v
        elif mode == 4:
            if v < acc or v != v:
                acc = v
        else:
            acc += v
        count += 1
    if mode == 2:
        dst[t] = acc / count
    elif mode == 5:
        dst[t] = acc // count
    else:
        dst[t] = acc
