"""PyTorch's CPU samplers over an MT19937 stream: uniform, integers, Bernoulli,
exponential/geometric/Cauchy, randperm and multinomial with replacement.

Every kernel takes the stream as ``key, pos`` (`kernels/cpu/mt19937.py`), a word
buffer ``buf`` (uint32, any size: words are drawn a buffer at a time) and a flat
C-contiguous ``out``; element i of `out` uses the words PyTorch's serial loop gives
element i. With ``u24(w) = (w & (2**24 - 1)) * 2**-24`` (float32), ``u53(a, b) =
(random64 & (2**53 - 1)) * 2**-53`` (float64, random64 = a << 32 | b)::

    uniform  float32: out[i] = fma(u24(w), to - from, from)        one word (float16,
                      bfloat16: the float32 value, rounded; a value that rounds up to
                      `to` becomes `from`, as PyTorch's)
    uniform  float64: out[i] = fma(u53, to - from, from)           two words
    integers:         out[i] = base + w % range                    one word, or one
                      random64 when the range needs it (>= 2**32 and a 64-bit dtype)
    bernoulli:        out[i] = u24 < p[i] (float p) | u53 < p[i] (double p, or scalar p)
    exponential:      -1 / lambd * log1p(-u53)     geometric: ceil(log(u53) / log1p(-p))
    cauchy:           fma(sigma, tan(pi * (u53 - 0.5)), median)
    randperm (n < 2**32 / 20): r = arange(n); for i < n - 1: swap r[i], r[i + w % (n - i)]
             (larger n): inside-out Fisher-Yates with z = random64 % (i + 1)
    multinomial (with replacement): per row, cumulative sums normalised by their total
             (last set to 1), then per sample the first slot whose sum >= u53

`fma` rounds once, as GCC's contraction does in PyTorch's build (tested value for value).
"""
import math

import numba
import numpy as np

from ..fma import fma
from .mt19937 import fill_words, word64

__all__ = ["uniform_f32", "uniform_f64", "integers", "bernoulli_f32", "bernoulli_f64",
           "bernoulli_scalar", "from_u53", "randperm", "multinomial_replacement",
           "EXPONENTIAL", "GEOMETRIC", "CAUCHY"]

_M53 = np.uint64((1 << 53) - 1)
_M21 = np.uint32((1 << 21) - 1)     # the high word's bits that reach u53
_S32 = np.uint64(32)
_ONE = np.uint64(1)
_S53 = 1.0 / 9007199254740992.0
EXPONENTIAL, GEOMETRIC, CAUCHY = 0, 1, 2


@numba.njit(cache=True)
def _u53(buf, i):
    return np.float64(word64(buf, i) & _M53) * _S53


@numba.njit(cache=True)
def uniform_f32(key, pos, buf, out, lo, span):
    """out[i] = fma(u24(w_i), span, lo) in float32 (span = to - from in float32)."""
    mask = np.uint32(0xFFFFFF)
    scale = np.float32(1.0 / (1 << 24))
    n, b = out.size, buf.size
    for s in range(0, n, b):
        m = min(b, n - s)
        fill_words(key, pos, buf, m)
        for j in range(m):
            out[s + j] = fma(np.float32(buf[j] & mask) * scale, span, lo)


@numba.njit(cache=True)
def uniform_f64(key, pos, buf, out, lo, span):
    """out[i] = fma(u53, span, lo), two words an element."""
    n, b = out.size, buf.size // 2
    for s in range(0, n, b):
        m = min(b, n - s)
        fill_words(key, pos, buf, 2 * m)
        for j in range(m):
            out[s + j] = fma(_u53(buf, 2 * j), span, lo)


@numba.njit(cache=True)
def integers(key, pos, buf, out, rng, base, wide):
    """out[i] = base + (word % rng) (int64), word = random64 if `wide` else one word
    (rng == 0: the random64 itself, as a signed value)."""
    n, w = out.size, 2 if wide else 1
    b = buf.size // w
    if rng == 0:
        for s in range(0, n, b):
            m = min(b, n - s)
            fill_words(key, pos, buf, 2 * m)
            for j in range(m):
                out[s + j] = np.int64(word64(buf, 2 * j))
        return
    r = np.uint64(rng)
    for s in range(0, n, b):
        m = min(b, n - s)
        fill_words(key, pos, buf, w * m)
        if wide:
            for j in range(m):
                out[s + j] = np.int64(word64(buf, 2 * j) % r) + base
        else:
            for j in range(m):
                out[s + j] = np.int64(np.uint64(buf[j]) % r) + base


@numba.njit(cache=True)
def bernoulli_f32(key, pos, buf, out, p):
    """out[i] = u24 < p[i] (p float32, flat, out's order); one word an element."""
    n, b = out.size, buf.size
    scale = np.float32(1.0 / (1 << 24))
    for s in range(0, n, b):
        m = min(b, n - s)
        fill_words(key, pos, buf, m)
        for j in range(m):
            out[s + j] = np.float32(buf[j] & np.uint32(0xFFFFFF)) * scale < p[s + j]


@numba.njit(cache=True)
def bernoulli_f64(key, pos, buf, out, p):
    """out[i] = u53 < p[i] (p float64, flat, out's order); two words an element."""
    n, b = out.size, buf.size // 2
    for s in range(0, n, b):
        m = min(b, n - s)
        fill_words(key, pos, buf, 2 * m)
        for j in range(m):
            out[s + j] = _u53(buf, 2 * j) < p[s + j]


@numba.njit(cache=True)
def bernoulli_scalar(key, pos, buf, out, p):
    """out[i] = u53 < p (PyTorch's scalar-p path without MKL); two words an element.

    For 0 <= p <= 1 as integers: u53 < p exactly when its 53-bit integer x < ceil(p *
    2**53) (scaling by 2**53 is exact), a compare that vectorises (1M draws 2.6 -> 1.6
    ms, the same booleans)."""
    n, b = out.size, buf.size // 2
    exact = 0.0 <= p <= 1.0
    threshold = np.uint64(math.ceil(p * 9007199254740992.0)) if exact else _ONE
    for s in range(0, n, b):
        m = min(b, n - s)
        fill_words(key, pos, buf, 2 * m)
        o = out[s:s + m]
        if exact:
            for j in range(m):
                x = (np.uint64(buf[2 * j] & _M21) << _S32) | np.uint64(buf[2 * j + 1])
                o[j] = x < threshold
        else:
            for j in range(m):
                o[j] = _u53(buf, 2 * j) < p


@numba.njit(cache=True)
def from_u53(key, pos, buf, out, kind, a, b_):
    """out[i] = f(u53) in float64: EXPONENTIAL (a = lambda), GEOMETRIC (a = p) or
    CAUCHY (a = median, b_ = sigma)."""
    n, b = out.size, buf.size // 2
    denom = math.log1p(-a) if kind == GEOMETRIC else 1.0
    for s in range(0, n, b):
        m = min(b, n - s)
        fill_words(key, pos, buf, 2 * m)
        for j in range(m):
            u = _u53(buf, 2 * j)
            if kind == EXPONENTIAL:
                out[s + j] = -1.0 / a * math.log1p(-u)
            elif kind == GEOMETRIC:
                out[s + j] = math.ceil(math.log(u) / denom)
            else:
                out[s + j] = fma(b_, math.tan(math.pi * (u - 0.5)), a)


@numba.njit(cache=True)
def randperm(key, pos, buf, out):
    """A permutation of 0..n-1 in int64 `out`, by PyTorch's two CPU algorithms."""
    n, b = out.size, buf.size
    if n < 4294967295 // 20:
        for i in range(n):
            out[i] = i
        i = 0
        while i < n - 1:
            m = min(b, n - 1 - i)
            fill_words(key, pos, buf, m)
            for j in range(m):
                z = np.int64(np.uint64(buf[j]) % np.uint64(n - i))
                t = out[i]
                out[i] = out[i + z]
                out[i + z] = t
                i += 1
        return
    b //= 2
    i = 0
    while i < n:
        m = min(b, n - i)
        fill_words(key, pos, buf, 2 * m)
        for j in range(m):
            z = np.int64(word64(buf, 2 * j) % np.uint64(i + 1))
            out[i] = out[z]
            out[z] = i
            i += 1


@numba.njit(cache=True)
def multinomial_replacement(key, pos, buf, probs, out, cum):
    """out[r, j] = the category of sample j of row r: the first slot whose normalised
    cumulative probability (summed in probs' dtype, in `cum`) is >= u53."""
    rows, cats = probs.shape
    k, b = out.shape[1], buf.size // 2
    for r in range(rows):
        cum[0] = 0              # `cum` comes uninitialised: a NaN left there made
        total = cum[0]          # `cum[0] * 0` NaN and every sample category 0
        for c in range(cats):
            total += probs[r, c]
            cum[c] = total
        for c in range(cats):
            cum[c] /= total
        cum[cats - 1] = 1
        j = 0
        while j < k:
            m = min(b, k - j)
            fill_words(key, pos, buf, 2 * m)
            for t in range(m):
                u = _u53(buf, 2 * t)
                lo, hi = 0, cats
                while hi > lo:
                    mid = lo + (hi - lo) // 2
                    if cum[mid] < u:
                        lo = mid + 1
                    else:
                        hi = mid
                out[r, j] = lo
                j += 1
