"""Scalar bodies of `torch.special` (1/3): erfcx, the normal distribution (ndtr, ndtri,
log_ndtr), entr, xlog1py, the Hurwitz zeta function; the Bessel and Airy functions are in
`scalar_bessel.py`, the orthogonal polynomials in `scalar_polynomials.py`.

Conventions of `scalar.py` (which re-exports these): they compute in float64 and round once
to the output type (float32 results are then within an ulp of the exact value), and are
plain Python too: the CUDA simulator runs them, so no `math` call is made where Python's
would raise (overflow, domain errors).
"""
import math

import numpy as np
from numba.extending import register_jitable

from nbtorch.kernels.f32math import JIT_OPTIONS as _JIT, c

__all__ = ["erfcx", "ndtr", "ndtri", "log_ndtr", "entr", "xlog1py", "zeta"]

_INV_SQRT_PI = 0.5641895835477563
_SQRT_2 = 1.4142135623730951
# ---- error function family ---------------------------------------------------------------

@register_jitable(**_JIT)
def _exp_square(x):
    """exp(x**2) with x**2 split exactly (Dekker) into hi + lo: no error from rounding x**2."""
    if abs(x) > 26.64:
        return math.inf
    s = 134217729.0 * x
    hi = s - (s - x)
    lo = x - hi
    return math.exp(hi * hi) * math.exp(lo * (hi + hi + lo))


@register_jitable(**_JIT)
def _erfcx_nonnegative(x):
    """exp(x**2) erfc(x) for x >= 0: that product below 12, above it the asymptotic series
    1/(x sqrt pi) sum (-1)^k (2k-1)!! / (2x**2)^k (15 terms: float64 accuracy)."""
    if x < 12.0:
        return _exp_square(x) * math.erfc(x)
    if x == math.inf:
        return 0.0
    z = 1.0 / (2.0 * x * x)
    term = 1.0
    total = 1.0
    for k in range(1, 16):
        term *= -(2.0 * k - 1.0) * z
        total += term
    return total * _INV_SQRT_PI / x


@register_jitable(**_JIT)
def _erfcx(x):
    """exp(x**2) erfc(x); below 0, 2 exp(x**2) - erfcx(-x) (inf below -26.64)."""
    if x != x:
        return x
    if x < 0:
        if x < -26.64:
            return math.inf
        return 2.0 * _exp_square(x) - _erfcx_nonnegative(-x)
    return _erfcx_nonnegative(x)


def erfcx(a):
    return _erfcx(a * 1.0)


@register_jitable(**_JIT)
def _exp_half_square(x):
    """exp(-x**2 / 2), x**2 split exactly as in `_exp_square` (the halving is exact)."""
    if abs(x) > 38.7:
        return 0.0
    s = 134217729.0 * x
    hi = s - (s - x)
    lo = x - hi
    return math.exp(-0.5 * (hi * hi)) * math.exp(-0.5 * (lo * (hi + hi + lo)))


@register_jitable(**_JIT)
def _ndtr(x):
    """erfc(-x / sqrt 2) / 2; below -1 as erfcx(-x / sqrt 2) exp(-x**2 / 2) / 2, so the
    rounding of x / sqrt 2 is not amplified in the tail."""
    if x < -1.0:
        return 0.5 * _erfcx_nonnegative(-x * 0.7071067811865476) * _exp_half_square(x)
    return 0.5 * math.erfc(-x * 0.7071067811865476)


def ndtr(a):
    """The standard normal CDF, erfc(-a / sqrt 2) / 2."""
    return _ndtr(a * 1.0)


def log_ndtr(a):
    """log(ndtr(a)): through erfcx below -1 (no underflow), log1p(-ndtr(-a)) above."""
    x = a * 1.0
    if x < -1.0:
        return math.log(_erfcx_nonnegative(-x * 0.7071067811865476) * 0.5) - 0.5 * x * x
    return math.log1p(-_ndtr(-x))


@register_jitable(**_JIT)
def _erfinv(a):
    """Giles' approximation ("Approximating the erfinv function", 2010), then Newton steps
    on erf (two: full float64 accuracy). Computes in a's type."""
    if not abs(a) < 1:
        return a / c(a, 0.0) if abs(a) == 1 else (a - a) / c(a, 0.0)     # +-inf, NaN
    w = -math.log((c(a, 1.0) - a) * (c(a, 1.0) + a))
    if w < 5:
        w = w - c(a, 2.5)
        p = c(a, 2.81022636e-08)
        for k in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
            p = c(a, k) + p * w
    else:
        w = math.sqrt(w) - c(a, 3.0)
        p = c(a, -0.000200214257)
        for k in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
            p = c(a, k) + p * w
    r = p * a
    for _ in range(2):
        r -= (math.erf(r) - a) / (c(a, 1.1283791670955126) * math.exp(-r * r))
    return r


@register_jitable(**_JIT)
def _erfcinv_small(y):
    """erfcinv(y) for 0 < y <= 0.1: Newton on log(erfc(x)) = log(erfcx(x)) - x**2 (well
    scaled however small y is), from the asymptote x**2 + log(x sqrt pi) = -log y."""
    target = math.log(y)
    x = math.sqrt(-target)
    x = math.sqrt(max(-target - math.log(x * 1.7724538509055159), 0.5))
    for _ in range(8):
        e = _erfcx(x)
        step = (math.log(e) - x * x - target) * e / (-2.0 * _INV_SQRT_PI)
        x -= step
        if abs(step) <= 1e-16 * x:
            break
    return x


def ndtri(a):
    """The inverse of ndtr: sqrt 2 erfinv(2p - 1) in the middle (2p - 1 is exact there),
    -sqrt 2 erfcinv(2p) in the tails (no cancellation however small p or 1 - p is)."""
    p = a * 1.0
    if not (p > 0.0 and p < 1.0):
        if p == 0.0:
            return -math.inf
        return math.inf if p == 1.0 else math.nan
    if p < 0.05:
        return -_SQRT_2 * _erfcinv_small(2.0 * p)
    if p > 0.95:
        return _SQRT_2 * _erfcinv_small(2.0 * (1.0 - p))
    return _SQRT_2 * _erfinv(2.0 * p - 1.0)


def entr(a):
    """-a log a: 0 at 0, -inf below 0."""
    if a != a:
        return a * 1.0
    if a > 0:
        return -a * math.log(a)
    return 0.0 if a == 0 else -math.inf


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (unless y is NaN)."""
    if y != y:
        return y * 1.0
    if x == 0:
        return x * 0.0
    if y <= -1:
        return x * (-math.inf if y == -1 else math.nan)
    return x * math.log1p(y * 1.0)


@register_jitable(**_JIT)
def _zeta(s, q):
    """Hurwitz zeta sum_k (k + q)**-s (Cephes' domain: inf at s == 1 and at the poles
    q = 0, -1, ...; NaN for s < 1, or q < 0 with s not an integer): summed directly up to
    w >= max(10, 2 s) (or until the rest is negligible), then its Euler-Maclaurin tail."""
    if s != s or q != q:
        return math.nan
    if s == 1.0:
        return math.inf
    if s < 1.0:
        return math.nan
    if q <= 0.0:
        if q == np.floor(q):
            return math.inf
        if s != np.floor(s):
            return math.nan
    if q == math.inf:
        return 0.0
    total = 0.0
    w = q
    while w < 10.0 or w < 2.0 * s:         # the tail's series needs w well above s
        t = math.pow(w, -s)
        total += t
        w += 1.0
        if w > 0 and abs(t) * (1.0 + w / (s - 1.0)) < abs(total) * 1e-17:
            return total                    # what is left is below float64's resolution
    b = math.pow(w, -s)
    total += b * w / (s - 1.0) + 0.5 * b
    term = s * b / w
    j = 0.0
    for coef in (1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160,
                 -691.0 / 1307674368000, 7.0 / 523069747200):
        total += coef * term
        term *= (s + j + 1.0) * (s + j + 2.0) / (w * w)
        j += 2.0
    return total


def zeta(x, q):
    """The Hurwitz zeta function (torch.special.zeta)."""
    return _zeta(x * 1.0, q * 1.0)
