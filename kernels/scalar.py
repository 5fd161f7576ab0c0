"""Scalar bodies of the elementwise ops, written once for every target.

Each plain function here is the body of one elementwise op: it maps scalars
to a scalar. `cpu/ufuncs.py` turns it into a NumPy ufunc with
``numba.vectorize(cache=True)`` (NumPy's ufunc machinery then handles
strides and broadcasting), and the CUDA side compiles the same function as a
device function (`cuda/scalar_device.py`). Helpers they call are
``register_jitable``/``overload`` so every target can inline them; the float32
math and intrinsics they use live in `kernels/f32math.py`. The costliest
float32 bodies also get a flat loop over contiguous arrays
(`cpu/contiguous.py`).

float32 stays float32: a Python float literal is a float64 in Numba, so
``0.5 * x`` would compute a float32 `x` in float64 (and call the slow double
libm). Constants are therefore written ``c(x, 0.5)``: the literal typed like
`x` (float32 for float32, float64 otherwise).

Parameters of an op (alpha, beta, bounds...) are extra ufunc inputs passed as
0-d values of the compute dtype, so one compiled loop serves every value.

Activations and their fused gradients are in `scalar_activation.py`.

Editing a helper in `f32math.py` invalidates the cached kernels built from these
bodies: their cache stamp covers every module they import
(`kernels/_numba_cache.py`).
"""
import math

import numpy as np
from numba.extending import register_jitable

from nbtorch.kernels.f32math import JIT_OPTIONS as _JIT, c, fexp, flog, flog1p, ftanh, select
# bodies kept in modules of their own, found here by name like every other body
from nbtorch.kernels.scalar_math import *  # noqa: F401,F403
from nbtorch.kernels.scalar_special import *  # noqa: F401,F403
from nbtorch.kernels.scalar_bessel import *  # noqa: F401,F403
from nbtorch.kernels.scalar_polynomials import *  # noqa: F401,F403
from nbtorch.kernels.scalar_complex import *  # noqa: F401,F403
from nbtorch.kernels.scalar_activation import *  # noqa: F401,F403
from nbtorch.kernels.scalar_activation import _sigmoid, _softplus_unit  # noqa: F401
from nbtorch.kernels.scalar_special import _erfinv, _zeta


# ---- arithmetic ----------------------------------------------------------------

def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b


def div(a, b):
    return a / b


def neg(a):
    return -a


def abs_(a):
    return a if a >= 0 else -a


def square(a):
    return a * a


def reciprocal(a):
    return c(a, 1.0) / a


def div_trunc(a, b):
    return np.trunc(a / b)


def div_floor(a, b):
    """Python's floor division for floats (PyTorch's div_floor_floating)."""
    if b == 0:
        return a / b
    mod = np.fmod(a, b)
    q = (a - mod) / b
    if mod != 0 and (b < 0) != (mod < 0):
        q -= c(a, 1.0)
    if q == 0:
        return math.copysign(c(a, 0.0), a / b)
    fq = np.floor(q)
    if q - fq > c(a, 0.5):
        fq += c(a, 1.0)
    return fq


def div_trunc_int(a, b):
    q = a // b
    if q < 0 and q * b != a:
        q += 1
    return q


def div_floor_int(a, b):
    return a // b


def remainder(a, b):
    """Python's modulo for floats: the result takes the divisor's sign."""
    m = np.fmod(a, b)
    if m != 0 and (b < 0) != (m < 0):
        m += b
    return m


def remainder_int(a, b):
    return a % b


def fmod(a, b):
    return np.fmod(a, b)


def fmod_int(a, b):
    m = a % b
    if m != 0 and (a < 0) != (m < 0):
        m -= b
    return m


def pow_(a, b):
    return a ** b


def pow_int(a, b):
    """Integer power by squaring; negative exponents truncate like C (PyTorch)."""
    if b < 0:
        if a == 1:
            return a
        if a == -1:
            return a if b % 2 else -a
        return a * 0
    r = a * 0 + 1
    while b:
        if b & 1:
            r *= a
        a *= a
        b >>= 1
    return r


# ---- rounding, sign --------------------------------------------------------------

def sign(a):
    return int(a > 0) - int(a < 0)          # 0 for NaN, as PyTorch


def floor(a):
    return np.floor(a)


def ceil(a):
    return np.ceil(a)


def trunc(a):
    return np.trunc(a)


def frac(a):
    return a - np.trunc(a)


@register_jitable(**_JIT, inline="always")
def _round_half_even(a):
    r = np.floor(a)
    d = a - r
    odd = r - c(a, 2.0) * np.floor(r * c(a, 0.5)) != 0
    return select((d > c(a, 0.5)) | ((d == c(a, 0.5)) & odd), r + c(a, 1.0), r)


def round_(a):
    return _round_half_even(a)


def round_decimals(a, scale):
    """round(a * 10**d) / 10**d; `scale` = 10**|d|, negative for d < 0."""
    if scale > 0:
        return _round_half_even(a * scale) / scale
    return _round_half_even(a / -scale) * -scale


# ---- exponentials, logs, powers ---------------------------------------------------

def exp(a):
    return fexp(a)


def exp2(a):
    return np.exp2(a)


def log(a):
    return flog(a)


def log2(a):
    return math.log2(a)


def log10(a):
    return math.log10(a)


def log1p(a):
    return flog1p(a)


def expm1(a):
    return math.expm1(a)


def sqrt(a):
    return math.sqrt(a)


def rsqrt(a):
    return c(a, 1.0) / math.sqrt(a)


def xlogy(x, y):
    if y != y:
        return y
    if x == 0:
        return x * 0
    return x * math.log(y)


# ---- trigonometric and hyperbolic ------------------------------------------------

def sin(a):
    return math.sin(a)


def cos(a):
    return math.cos(a)


def tan(a):
    return math.tan(a)


def asin(a):
    return math.asin(a)


def acos(a):
    return math.acos(a)


def atan(a):
    return math.atan(a)


def atan2(a, b):
    return math.atan2(a, b)


def sinh(a):
    return math.sinh(a)


def cosh(a):
    return math.cosh(a)


def tanh(a):
    return ftanh(a)


def erf(a):
    return math.erf(a)


def erfinv(a):
    """Giles' approximation, then Newton steps on erf (`scalar_special._erfinv`)."""
    return _erfinv(a)


def logaddexp(a, b):
    """log(exp(a) + exp(b)) without overflow."""
    if a == b and (a == math.inf or a == -math.inf):
        return a
    m = max(a, b)
    return m + math.log1p(math.exp(-abs(a - b)))


def hypot(a, b):
    return math.hypot(a, b)


def erfc(a):
    return math.erfc(a)


# ---- gamma-function family (computed in float64, rounded once to the output type) ---

def lgamma(a):
    """log|Gamma(a)|: +inf at 0 and the negative integers (where Python's math.lgamma,
    which the simulator runs, would raise)."""
    x = a * 1.0
    if x <= 0 and x == np.floor(x):
        return math.inf
    return math.lgamma(x)


def digamma(a):
    return _digamma(a)


@register_jitable(**_JIT)
def _digamma(a):
    """psi(a) = d/da log Gamma(a): reflection below 0, recurrence up to 10, then the
    asymptotic series ln x - 1/2x - sum B_2k / (2k x^2k). -inf at +0, +inf at -0 and NaN at
    the negative integers, as PyTorch."""
    x = a * 1.0
    if x == 0:
        return -math.copysign(math.inf, x)
    shift = 0.0
    if x < 0:
        if x == np.floor(x):
            return math.nan
        r = x - np.trunc(x)                 # tan(pi r) is exact where tan(pi x) is not
        shift = -math.pi / math.tan(math.pi * r)
        x = 1.0 - x
    while x < 10.0:
        shift -= 1.0 / x
        x += 1.0
    z = 1.0 / (x * x)
    series = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (
        1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12.0))))))
    return shift + math.log(x) - 0.5 / x - series


def polygamma(a, n):
    """The n-th derivative of digamma: (-1)**(n+1) n! zeta(n+1, a) for n >= 1 (the Hurwitz
    zeta of `scalar_special._zeta`)."""
    k = int(n)
    if k == 0:
        return _digamma(a)
    x = a * 1.0
    s = k + 1.0
    if x == math.inf:
        return 0.0
    if x <= 0 and x == np.floor(x):        # poles; -inf: NaN
        return math.nan if x == -math.inf else (math.inf if k % 2 == 1 else -math.inf)
    total = _zeta(s, x)
    fact = 1.0
    for i in range(2, k + 1):
        fact *= i
    return fact * total if k % 2 == 1 else -fact * total


@register_jitable(**_JIT)
def _igamma(a, x, upper):
    """The regularised incomplete gamma P(a, x) (Q = 1 - P with `upper`): its power series
    below x = a + 1, the continued fraction of Q (modified Lentz) above."""
    if not (a >= 0.0 and x >= 0.0) or (a == 0.0 and x == 0.0):
        return math.nan
    if a == 0.0 or x == math.inf:
        return 0.0 if upper else 1.0
    if x == 0.0 or a == math.inf:
        return 1.0 if upper else 0.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1.0:
        term = 1.0 / a
        total = term
        n = 1.0
        while n < 100000.0:
            term *= x / (a + n)
            total += term
            if term < total * 1e-17:
                break
            n += 1.0
        p = total * math.exp(log_front)
        return 1.0 - p if upper else p
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    k = 1.0
    while k < 100000.0:
        an = -k * (k - a)
        b += 2.0
        d = an * d + b
        if abs(d) < tiny:
            d = tiny
        c = b + an / c
        if abs(c) < tiny:
            c = tiny
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
        k += 1.0
    q = math.exp(log_front) * h
    return q if upper else 1.0 - q


def igamma(a, x):
    """P(a, x) = gamma(a, x) / Gamma(a), the regularised lower incomplete gamma."""
    return _igamma(a * 1.0, x * 1.0, False)


def igammac(a, x):
    """Q(a, x) = 1 - P(a, x), the regularised upper incomplete gamma."""
    return _igamma(a * 1.0, x * 1.0, True)


def logit(a, eps):
    """log(a / (1 - a)), with `a` clamped to [eps, 1 - eps] when eps >= 0."""
    if eps >= 0:
        a = min(max(a, eps), c(a, 1.0) - eps)
    return math.log(a / (c(a, 1.0) - a))


# ---- comparisons, selection ------------------------------------------------------

def eq(a, b):
    return a == b


def ne(a, b):
    return a != b


def lt(a, b):
    return a < b


def le(a, b):
    return a <= b


def gt(a, b):
    return a > b


def ge(a, b):
    return a >= b


def maximum(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a > b else b


def minimum(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a < b else b


def fmax(a, b):
    if a != a:
        return b
    if b != b:
        return a
    return a if a > b else b


def fmin(a, b):
    if a != a:
        return b
    if b != b:
        return a
    return a if a < b else b


def clamp(a, lo, hi):
    """min(max(a, lo), hi), NaN in any operand propagating (PyTorch)."""
    if a != a:
        return a
    if lo != lo:
        return lo
    if hi != hi:
        return hi
    r = lo if a < lo else a
    return hi if r > hi else r


def clamp_min(a, lo):
    if a != a:
        return a
    if lo != lo:
        return lo
    return lo if a < lo else a


def clamp_max(a, hi):
    if a != a:
        return a
    if hi != hi:
        return hi
    return hi if a > hi else a


def where(cond, a, b):
    return a if cond else b


def lerp(start, end, weight):
    """start + weight * (end - start), exact at both ends (PyTorch's two-sided form)."""
    d = end - start
    if abs(weight) < 0.5:
        return start + weight * d
    return end - d * (1 - weight)


def addcmul(a, t1, t2, value):
    return a + value * t1 * t2


def addcdiv(a, t1, t2, value):
    return a + value * t1 / t2


# ---- logical, bitwise, classification ----------------------------------------------

def logical_and(a, b):
    return (a != 0) and (b != 0)


def logical_or(a, b):
    return (a != 0) or (b != 0)


def logical_xor(a, b):
    return (a != 0) != (b != 0)


def logical_not(a):
    return a == 0


def bitwise_and(a, b):
    return a & b


def bitwise_or(a, b):
    return a | b


def bitwise_xor(a, b):
    return a ^ b


def bitwise_not(a):
    return ~a


def isnan(a):
    return a != a


def isinf(a):
    return a == math.inf or a == -math.inf


def isfinite(a):
    return a == a and a != math.inf and a != -math.inf


def isposinf(a):
    return a == math.inf


def isneginf(a):
    return a == -math.inf


def nan_to_num(a, nan, posinf, neginf):
    if a != a:
        return nan
    if a == math.inf:
        return posinf
    if a == -math.inf:
        return neginf
    return a


def isclose(a, b, rtol, atol, equal_nan):
    """|a - b| <= atol + rtol * |b| (exact equality covers infinities; an infinity is
    close only to itself)."""
    if a == b:
        return True
    if a != a or b != b:
        return equal_nan and a != a and b != b
    if abs(a) == math.inf or abs(b) == math.inf:
        return False
    return abs(a - b) <= atol + rtol * abs(b)
