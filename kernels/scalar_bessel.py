"""Scalar bodies of `torch.special` (2/3): the Bessel functions J0, J1, Y0, Y1, I0, I1, K0,
K1 (and the exp-scaled I and K), the spherical j0, and Airy's Ai.

They compute in float64 and round once (conventions of `scalar_special.py`). Each is a
Chebyshev series of our own making (`special_tables.py`, written by
scripts/gen_special_tables.py with mpmath at 40 digits) evaluated by Clenshaw's recurrence
on the intervals Cephes uses: a few float64 ulp away from the functions, absolutely near
their zeros (J0, J1, Y0, Y1 and Ai between zeros are accurate to ~1e-16 absolute, as
Cephes' asymptotic forms are).
"""
import math

from numba.extending import register_jitable

from nbtorch.kernels.f32math import JIT_OPTIONS as _JIT
from nbtorch.kernels.special_tables import (AI_MID, AI_NEG_P, AI_NEG_Q, AI_POS, I0E_HIGH,
                                            I0E_LOW, I1E_HIGH, I1E_LOW, J0_LOW, J1_LOW,
                                            K0_LOW, K0E_HIGH, K1_LOW, K1E_HIGH, P0_HIGH,
                                            P1_HIGH, Q0_HIGH, Q1_HIGH, Y0_LOW, Y1_LOW)

__all__ = ["i0", "i0e", "i1", "i1e", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "bessel_j0", "bessel_j1",
           "bessel_y0", "bessel_y1", "spherical_bessel_j0", "airy_ai"]

_INV_SQRT_PI = 0.5641895835477563
_TWO_OVER_PI = 0.6366197723675814


@register_jitable(**_JIT)
def _cheb(coefs, t):
    """sum_j coefs[j] T_j(t) by Clenshaw's recurrence."""
    b1 = 0.0
    b2 = 0.0
    t2 = t + t
    for j in range(len(coefs) - 1, 0, -1):
        b0 = t2 * b1 - b2 + coefs[j]
        b2 = b1
        b1 = b0
    return t * b1 - b2 + coefs[0]



# ---- modified Bessel functions ------------------------------------------------------------

@register_jitable(**_JIT)
def _i0e(x):
    """exp(-x) I0(x) for x >= 0."""
    if x <= 8.0:
        return _cheb(I0E_LOW, 0.25 * x - 1.0)
    return _cheb(I0E_HIGH, 16.0 / x - 1.0) / math.sqrt(x)


@register_jitable(**_JIT)
def _i1e(x):
    """exp(-x) I1(x) for x >= 0."""
    if x <= 8.0:
        return x * _cheb(I1E_LOW, 0.25 * x - 1.0)
    return _cheb(I1E_HIGH, 16.0 / x - 1.0) / math.sqrt(x)


@register_jitable(**_JIT)
def _unscale(r, x):
    """r * exp(x) in two halves (exp(x) alone overflows before I(x) does)."""
    if x > 1420.0:
        return math.inf
    h = math.exp(0.5 * x)
    return r * h * h


def i0(a):
    x = abs(a * 1.0)
    return x if x == math.inf else _unscale(_i0e(x), x)


def i0e(a):
    return _i0e(abs(a * 1.0))


def i1(a):
    x = a * 1.0
    ax = abs(x)
    r = ax if ax == math.inf else _unscale(_i1e(ax), ax)
    return math.copysign(r, x)


def i1e(a):
    x = a * 1.0
    return math.copysign(_i1e(abs(x)), x)


@register_jitable(**_JIT)
def _k0(x, scaled):
    """K0(x) (times exp(x) when `scaled`): inf at 0, NaN below."""
    if x != x or x < 0:
        return math.nan
    if x == 0:
        return math.inf
    if x <= 2.0:
        r = _cheb(K0_LOW, 0.5 * x * x - 1.0) - math.log(0.5 * x) * _unscale(_i0e(x), x)
        return r * math.exp(x) if scaled else r
    if x == math.inf:
        return 0.0
    r = _cheb(K0E_HIGH, 4.0 / x - 1.0) / math.sqrt(x)
    return r if scaled else (0.0 if x > 745.2 else r * math.exp(-x))


@register_jitable(**_JIT)
def _k1(x, scaled):
    """K1(x) (times exp(x) when `scaled`): inf at 0, NaN below."""
    if x != x or x < 0:
        return math.nan
    if x == 0:
        return math.inf
    if x <= 2.0:
        r = (_cheb(K1_LOW, 0.5 * x * x - 1.0)
             + x * math.log(0.5 * x) * _unscale(_i1e(x), x)) / x
        return r * math.exp(x) if scaled else r
    if x == math.inf:
        return 0.0
    r = _cheb(K1E_HIGH, 4.0 / x - 1.0) / math.sqrt(x)
    return r if scaled else (0.0 if x > 745.2 else r * math.exp(-x))


def modified_bessel_k0(a):
    return _k0(a * 1.0, False)


def modified_bessel_k1(a):
    return _k1(a * 1.0, False)


def scaled_modified_bessel_k0(a):
    return _k0(a * 1.0, True)


def scaled_modified_bessel_k1(a):
    return _k1(a * 1.0, True)


# ---- Bessel functions of the first and second kind -------------------------------------

@register_jitable(**_JIT)
def _hankel(x, p, q, nu):
    """(J, Y) of order nu (0 or 1) for x > 8 from the fitted P, Q: J = sqrt(2/(pi x))
    (P cos c - Q sin c), Y = sqrt(2/(pi x)) (P sin c + Q cos c), c = x - (2 nu + 1) pi/4,
    with cos c, sin c from cos x, sin x (their argument reduction is exact)."""
    t = 16.0 / x - 1.0
    pv = _cheb(p, t)
    qv = _cheb(q, t)
    cx = math.cos(x)
    sx = math.sin(x)
    if nu == 0:
        cc = (cx + sx) * 0.7071067811865476
        sc = (sx - cx) * 0.7071067811865476
    else:
        cc = (sx - cx) * 0.7071067811865476
        sc = -(sx + cx) * 0.7071067811865476
    scale = math.sqrt(_TWO_OVER_PI / x)
    return scale * (pv * cc - qv * sc), scale * (pv * sc + qv * cc)


@register_jitable(**_JIT)
def _j0(x):
    x = abs(x)
    if x <= 8.0:
        return _cheb(J0_LOW, x * x / 32.0 - 1.0)
    if x == math.inf:
        return math.nan
    return _hankel(x, P0_HIGH, Q0_HIGH, 0)[0]


@register_jitable(**_JIT)
def _j1(x):
    ax = abs(x)
    if ax <= 8.0:
        return x * _cheb(J1_LOW, ax * ax / 32.0 - 1.0)
    if ax == math.inf:
        return math.nan
    r = _hankel(ax, P1_HIGH, Q1_HIGH, 1)[0]
    return -r if x < 0 else r                # J1 is odd


def bessel_j0(a):
    """J0(a), the Bessel function of the first kind of order 0 (x != x: NaN)."""
    x = a * 1.0
    return x if x != x else _j0(x)


def bessel_j1(a):
    x = a * 1.0
    return x if x != x else _j1(x)


def bessel_y0(a):
    """Y0(a): -inf at 0, NaN below."""
    x = a * 1.0
    if not x > 0:
        return -math.inf if x == 0 else math.nan
    if x <= 8.0:
        return _cheb(Y0_LOW, x * x / 32.0 - 1.0) + _TWO_OVER_PI * math.log(0.5 * x) * _j0(x)
    if x == math.inf:
        return math.nan                     # as PyTorch's (sin(inf) in its asymptotic form)
    return _hankel(x, P0_HIGH, Q0_HIGH, 0)[1]


def bessel_y1(a):
    """Y1(a): -inf at 0, NaN below."""
    x = a * 1.0
    if not x > 0:
        return -math.inf if x == 0 else math.nan
    if x <= 8.0:
        return (_cheb(Y1_LOW, x * x / 32.0 - 1.0)
                + _TWO_OVER_PI * (x * math.log(0.5 * x) * _j1(x) - 1.0)) / x
    if x == math.inf:
        return math.nan
    return _hankel(x, P1_HIGH, Q1_HIGH, 1)[1]


def spherical_bessel_j0(a):
    """sin(a) / a: its Taylor series below 0.5, 0 at +-inf."""
    x = a * 1.0
    if x != x:
        return x
    if abs(x) == math.inf:
        return 0.0
    if abs(x) < 0.5:
        z = x * x
        return 1.0 - z / 6.0 * (1.0 - z / 20.0 * (1.0 - z / 42.0 * (
            1.0 - z / 72.0 * (1.0 - z / 110.0 * (1.0 - z / 156.0)))))
    return math.sin(x) / x


def airy_ai(a):
    """Ai(a): a Chebyshev series on [-8, 2]; beyond, the modulus/phase forms with fitted
    P, Q (x < -8) and the exp(-2/3 x**1.5)-scaled series (x > 2)."""
    x = a * 1.0
    if x != x:
        return x
    if x > 2.0:
        zeta = 2.0 / 3.0 * x * math.sqrt(x)
        if zeta > 745.2:
            return 0.0
        r = _cheb(AI_POS, 3.771236166328254 / zeta - 1.0)
        return r * math.exp(-zeta) * 0.5 * _INV_SQRT_PI / math.sqrt(math.sqrt(x))
    if x >= -8.0:
        return _cheb(AI_MID, (x + 3.0) / 5.0)
    if x == -math.inf:
        return 0.0
    ax = -x
    zeta = 2.0 / 3.0 * ax * math.sqrt(ax)
    t = 30.169889330626027 / zeta - 1.0
    theta = zeta + 0.7853981633974483
    r = math.sin(theta) * _cheb(AI_NEG_P, t) - math.cos(theta) * _cheb(AI_NEG_Q, t)
    return r * _INV_SQRT_PI / math.sqrt(math.sqrt(ax))
