"""Scalar bodies of the elementwise ops for complex64/complex128 operands.

An elementwise op keeps its name; when its operands are complex the CPU ufunc
(`cpu/ufuncs.py`) and the CUDA kernel (`cuda/gridstride.py`) run the body
``COMPLEX[name]`` from here instead (bodies the real and complex cases share, such
as add or mul, have no entry). Numba's complex arithmetic widens complex64 to
complex128 in division and in cmath, so every result goes through ``same(a, r)``:
r in a's complex type (complex64 stays complex64 end to end, as PyTorch computes).
Plain Python too (the CUDA simulator runs it); `scalar.py` re-exports these.
"""
import cmath
import math

import numpy as np
from numba import types
from numba.extending import overload

from nbtorch.kernels.f32math import JIT_OPTIONS as _JIT

__all__ = ["cdiv", "creciprocal", "cexp", "cexp2", "cexpm1", "clog", "clog2", "clog10",
           "clog1p", "csqrt", "crsqrt", "csin", "ccos", "ctan", "csinh", "ccosh", "ctanh",
           "casin", "cacos", "catan", "casinh", "cacosh", "catanh", "csigmoid", "cpow",
           "cabs", "cangle", "csgn", "cconj", "cisinf", "cisfinite", "caddcdiv"]


def same(a, r):
    """r as a's (complex) type (plain Python: unchanged)."""
    return r


@overload(same, jit_options=_JIT, inline="always")
def _same_overload(a, r):
    if isinstance(a, types.Complex) and a.bitwidth == 64:
        return lambda a, r: np.complex64(r)
    if isinstance(a, types.Complex):
        return lambda a, r: np.complex128(r)
    if isinstance(a, types.Float) and a.bitwidth == 32:
        return lambda a, r: np.float32(r)
    return lambda a, r: np.float64(r)


def cdiv(a, b):
    """a / b; by 0 each part goes to +-inf (nan for a 0 or nan part), as PyTorch."""
    if b == 0:
        re = math.nan if a.real == 0 or a.real != a.real else math.copysign(math.inf, a.real)
        im = math.nan if a.imag == 0 or a.imag != a.imag else math.copysign(math.inf, a.imag)
        return same(a, complex(re, im))
    return same(a, a / b)


def creciprocal(a):
    if a == 0:
        return same(a, complex(math.inf, math.nan))
    return same(a, 1 / a)


def cexp(a):
    return same(a, cmath.exp(a))


def cexp2(a):
    return same(a, cmath.exp(a * 0.6931471805599453))


def cexpm1(a):
    """exp(a) - 1, accurate near 0: expm1(x) cos y - 2 sin^2(y/2) + i e^x sin y."""
    x = a.real
    y = a.imag
    s = math.sin(0.5 * y)
    re = math.expm1(x) * math.cos(y) - 2.0 * s * s
    return same(a, complex(re, math.exp(x) * math.sin(y)))


def clog(a):
    if a == 0:
        return same(a, complex(-math.inf, 0.0))     # cmath.log(0) raises in Python
    return same(a, cmath.log(a))


def clog2(a):
    if a == 0:
        return same(a, complex(-math.inf, 0.0))
    return same(a, cmath.log(a) * 1.4426950408889634)


def clog10(a):
    if a == 0:
        return same(a, complex(-math.inf, 0.0))
    return same(a, cmath.log(a) * 0.4342944819032518)


def clog1p(a):
    """log(1 + a); for small |a|, log1p(2x + x^2 + y^2)/2 + i atan2(y, 1 + x)."""
    x = a.real
    y = a.imag
    if abs(x) < 0.5 and abs(y) < 0.5:
        return same(a, complex(0.5 * math.log1p(x * (2.0 + x) + y * y),
                               math.atan2(y, 1.0 + x)))
    b = a + 1
    if b == 0:
        return same(a, complex(-math.inf, 0.0))
    return same(a, cmath.log(b))


def csqrt(a):
    return same(a, cmath.sqrt(a))


def crsqrt(a):
    if a == 0:
        return same(a, complex(math.inf, math.nan))
    return same(a, 1 / cmath.sqrt(a))


def csin(a):
    return same(a, cmath.sin(a))


def ccos(a):
    return same(a, cmath.cos(a))


def ctan(a):
    return same(a, cmath.tan(a))


def csinh(a):
    return same(a, cmath.sinh(a))


def ccosh(a):
    return same(a, cmath.cosh(a))


def ctanh(a):
    return same(a, cmath.tanh(a))


def casin(a):
    return same(a, cmath.asin(a))


def cacos(a):
    return same(a, cmath.acos(a))


def catan(a):
    return same(a, cmath.atan(a))


def casinh(a):
    return same(a, cmath.asinh(a))


def cacosh(a):
    return same(a, cmath.acosh(a))


def catanh(a):
    return same(a, cmath.atanh(a))


def csigmoid(a):
    return same(a, 1 / (1 + cmath.exp(-a)))


def cpow(a, b):
    """a ** b (1 for b == 0, as PyTorch; 0 ** b = 0 for Re b > 0)."""
    if b == 0:
        return same(a, a * 0 + 1)
    if a == 0:
        return same(a, a * 0) if b.real > 0 else same(a, complex(math.nan, math.nan))
    return same(a, cmath.exp(b * cmath.log(a)))


def cabs(a):
    """|a| (a real result), without overflow."""
    return math.hypot(a.real, a.imag)


def cangle(a):
    """The argument of a in (-pi, pi] (a real result)."""
    return math.atan2(a.imag, a.real)


def csgn(a):
    """a / |a|, 0 at 0 (torch.sgn)."""
    r = math.hypot(a.real, a.imag)
    if r == 0:
        return same(a, a * 0)
    return same(a, complex(a.real / r, a.imag / r))


def cconj(a):
    return a.conjugate()


def cisinf(a):
    return math.isinf(a.real) or math.isinf(a.imag)


def cisfinite(a):
    return not (math.isinf(a.real) or math.isinf(a.imag) or a.real != a.real
                or a.imag != a.imag)


def caddcdiv(a, t1, t2, value):
    n = value * t1
    if t2 == 0:                         # as cdiv (bodies call no Python helper)
        re = math.nan if n.real == 0 or n.real != n.real else math.copysign(math.inf, n.real)
        im = math.nan if n.imag == 0 or n.imag != n.imag else math.copysign(math.inf, n.imag)
        return same(a, a + complex(re, im))
    return same(a, a + n / t2)


# op name -> its complex body (ops whose body serves both kinds have no entry)
COMPLEX = {"div": "cdiv", "reciprocal": "creciprocal", "exp": "cexp", "exp2": "cexp2",
           "expm1": "cexpm1", "log": "clog", "log2": "clog2", "log10": "clog10",
           "log1p": "clog1p", "sqrt": "csqrt", "rsqrt": "crsqrt", "sin": "csin",
           "cos": "ccos", "tan": "ctan", "sinh": "csinh", "cosh": "ccosh", "tanh": "ctanh",
           "asin": "casin", "acos": "cacos", "atan": "catan", "asinh": "casinh",
           "acosh": "cacosh", "atanh": "catanh", "sigmoid": "csigmoid", "pow_": "cpow",
           "abs_": "cabs", "isinf": "cisinf", "isfinite": "cisfinite", "addcdiv": "caddcdiv"}
# complex bodies with a real result (a float of the operands' precision) or a bool one
REAL_RESULT = {"cabs", "cangle"}
