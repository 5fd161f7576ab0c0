"""Scalar bodies of the elementwise math beyond `scalar.py`'s: inverse hyperbolics,
sign and exponent manipulation, heaviside, logaddexp2, sinc, gcd/lcm, bit shifts.

Same conventions as `scalar.py` (which re-exports every body here, so the
elementwise table finds them by name): plain functions of scalars, constants
typed like the operand with ``c(x, value)``, float32 math that vectorises from
`f32math.py`, and plain Python that the CUDA simulator can run (no math domain
errors: NaN and +-inf are returned where Python's `math` would raise).
"""
import math

import numpy as np
from numba.extending import register_jitable

from nbtorch.kernels.f32math import (JIT_OPTIONS as _JIT, c, fasinh, facosh, fatanh, fexp,
                                     flog1p, inline_into_loops)

__all__ = ["asinh", "acosh", "atanh", "copysign", "signbit", "nextafter", "frexp_mantissa",
           "frexp_exponent", "heaviside", "logaddexp2", "sinc", "gcd", "lcm",
           "bitwise_left_shift", "bitwise_right_shift"]


def asinh(a):
    inline_into_loops()
    return fasinh(a)


def acosh(a):
    inline_into_loops()
    return facosh(a)


def atanh(a):
    inline_into_loops()
    return fatanh(a)


def copysign(a, b):
    """|a| with b's sign bit (-0.0 and NaNs with the sign bit set count as negative)."""
    return math.copysign(a, b)


def signbit(a):
    """True where a's sign bit is set (-0.0 included); integers: a < 0."""
    return math.copysign(c(a, 1.0), a) < c(a, 0.0)


def nextafter(a, b):
    """The next representable value after a in b's direction (b itself if equal)."""
    return np.nextafter(a, b)


def frexp_mantissa(a):
    """m of a = m * 2**e, |m| in [0.5, 1) (a itself for 0, inf, NaN)."""
    return math.frexp(a)[0]


def frexp_exponent(a):
    """e of a = m * 2**e (0 for 0, inf, NaN)."""
    return math.frexp(a)[1]


def heaviside(a, v):
    """0 below zero, 1 above, `v` at zero (NaN gives 0, as PyTorch's kernel)."""
    if a == 0:
        return v
    return a > 0


def logaddexp2(a, b):
    """log2(2**a + 2**b) without overflow: max + log1p(2**-|a - b|) / ln 2."""
    inline_into_loops()
    if a == b and (a == math.inf or a == -math.inf):
        return a
    m = max(a, b)
    return m + flog1p(fexp(-abs(a - b) * c(a, 0.6931471805599453))) * c(a, 1.4426950408889634)


def sinc(a):
    """sin(pi a) / (pi a), 1 at 0 (computed as PyTorch's: the product rounded first)."""
    if a == 0:
        return c(a, 1.0)
    p = c(a, math.pi) * a
    if p == math.inf or p == -math.inf:
        return p - p                        # NaN (Python's math.sin would raise)
    return math.sin(p) / p


def gcd(a, b):
    """Greatest common divisor of |a| and |b| (Euclid); gcd(0, 0) = 0."""
    return _gcd(a, b)


@register_jitable(**_JIT)
def _gcd(a, b):
    a = abs(a)
    b = abs(b)
    while b != 0:
        a, b = b, a % b
    return a


def lcm(a, b):
    """|a / gcd(a, b) * b|; 0 when either is 0."""
    g = _gcd(a, b)
    if g == 0:
        return g
    return abs(a // g * b)


def bitwise_left_shift(a, b, bits):
    """a << b, wrapping to a's width (`bits`); 0 for b < 0 or b >= bits (PyTorch)."""
    if b < 0 or b >= bits:
        return a ^ a                        # 0 (and an integer-only body, as a << b)
    return a << b


def bitwise_right_shift(a, b, bits):
    """a >> b (arithmetic for signed a); b < 0 or b >= bits shifts by bits - 1 (PyTorch)."""
    if b < 0 or b >= bits:
        return a >> (bits - 1)
    return a >> b
