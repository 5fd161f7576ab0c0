"""float32 math that vectorises, and the intrinsics the op bodies build on.

libm's expf/tanhf/erff/logf are scalar calls (Numba has no SVML here), 5-10x
slower than a SIMD loop. For float32, Cephes-style polynomial versions compile
to branch-free vector code; float64 keeps libm. The op bodies of
`kernels/scalar.py` call them through `fexp`, `ftanh`, `ferfc`, `flog`,
`flog1p`, `flog1pexp`, which pick the version from the argument's type, and use
the helpers below:

- ``c(x, value)``: a constant typed like `x` (a Python float literal is a
  float64 in Numba and would drag float32 code into float64);
- ``select(cond, a, b)``: a branch-free select;
- ``inline_into_loops()``: marks a body for LLVM to inline into every loop
  calling it (`alwaysinline`), so big bodies do not keep their loops scalar.

Every one is plain Python too (the simulator and NUMBA_DISABLE_JIT run that),
and the CUDA side compiles the plain versions (`kernels/cuda/scalar_device.py`).
"""
import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload, register_jitable
from numba.np.numpy_support import as_dtype

__all__ = ["JIT_OPTIONS", "c", "select", "inline_into_loops", "fexp", "ftanh", "ferfc",
           "flog", "flog1p", "flog1pexp", "fasinh", "facosh", "fatanh"]

# Helpers compile with NumPy's error model, as the ufunc bodies do (Python's model adds a
# zero-division check and exception path to every `/`). Left to LLVM's judgement, a
# helper with a division stayed an opaque call and the loop ran scalar (tanh: 8x
# slower), so small helpers are inlined in Numba's IR (inline="always"), and the big
# float32 functions below (`_exp_f32`...) compile once each as functions LLVM must
# inline (`inline_into_loops`): inlining their typed IR at every call site cost seconds
# of compile time (mish's ufunc, cold: 9.7 s -> 0.4 s).
JIT_OPTIONS = {"error_model": "numpy"}
_JIT = JIT_OPTIONS


def c(x, value):
    """`value` as a constant of x's float type (plain Python: unchanged)."""
    return value


@overload(c, jit_options=_JIT, inline="always")
def _c_overload(x, value):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x, value: np.float32(value)
    if isinstance(x, types.Integer):
        cast = as_dtype(x).type            # integer bodies get an integer constant
        return lambda x, value: cast(value)
    return lambda x, value: np.float64(value)


def _is_f32(x):
    return isinstance(x, types.Float) and x.bitwidth == 32


# ---- float32 transcendental functions that vectorise -------------------------------
# libm's expf/tanhf/erff/logf are scalar calls (Numba has no SVML here), 5-10x slower
# than a SIMD loop. For float32 these polynomial versions (Cephes expf/tanhf/logf,
# Numerical Recipes' erfc, Kahan's log1p, all within 2.5 float32 ulp) compile to
# branch-free vector code; float64 keeps libm. `fexp(x)` etc. pick the version from
# x's type.

@intrinsic
def _f32_from_bits(typingctx, bits):
    """Reinterpret an int32 bit pattern as a float32."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


def inline_into_loops():
    """Mark the body calling this for LLVM to inline into every loop calling it, the
    ufunc's included: big bodies (gelu_grad, softplus, mish) otherwise stayed calls and
    their loops ran scalar (13-27 ns an element). A no-op in Python and on CUDA."""


@intrinsic
def _mark_alwaysinline(typingctx):
    def codegen(context, builder, signature, args):
        builder.function.attributes.add("alwaysinline")
        return context.get_dummy_value()
    return types.none(), codegen


@overload(inline_into_loops, jit_options=_JIT, inline="always")
def _inline_into_loops_overload():
    return lambda: _mark_alwaysinline()


def select(cond, a, b):
    """`a if cond else b` as one branch-free select (a ternary left branches that kept
    loops such as gelu's from vectorising)."""
    return a if cond else b


@intrinsic
def _select_ir(typingctx, cond, a, b):
    def codegen(context, builder, signature, args):
        flag = context.cast(builder, args[0], signature.args[0], types.boolean)
        return builder.select(flag, args[1], args[2])
    return a(cond, a, b), codegen


@overload(select, jit_options=_JIT, inline="always")
def _select_overload(cond, a, b):
    if a == b:
        return lambda cond, a, b: _select_ir(cond, a, b)
    return lambda cond, a, b: a if cond else b


@register_jitable(**_JIT)
def _exp_f32(x):
    """Cephes expf: e**x = 2**n * p(r), r = x - n ln 2 in [-ln2/2, ln2/2]."""
    inline_into_loops()
    xc = select(x > np.float32(-104.0), x, np.float32(-104.0))     # NaN -> -104
    xc = select(xc < np.float32(89.0), xc, np.float32(89.0))
    n = np.floor(xc * np.float32(1.4426950408889634) + np.float32(0.5))
    r = xc - n * np.float32(0.693359375) - n * np.float32(-2.12194440e-4)
    p = ((((np.float32(1.9875691500e-4) * r + np.float32(1.3981999507e-3)) * r
           + np.float32(8.3334519073e-3)) * r + np.float32(4.1665795894e-2)) * r
         + np.float32(1.6666665459e-1)) * r + np.float32(5.0000001201e-1)
    p = p * (r * r) + r + np.float32(1.0)
    k = np.int32(n)
    h = k >> 1                       # 2**k as two factors: subnormal results stay exact
    p = p * _f32_from_bits(np.int32((h + 127) << 23)) * _f32_from_bits(
        np.int32((k - h + 127) << 23))
    return select(x == x, p, x)


@register_jitable(**_JIT)
def _tanh_f32(x):
    """Cephes tanhf: an odd polynomial below |x| = 0.625, 1 - 2 / (e**2|x| + 1) above."""
    inline_into_loops()
    z = x * x
    small = x * (((((np.float32(-5.70498872745e-3) * z + np.float32(2.06390887954e-2)) * z
                    - np.float32(5.37397155531e-2)) * z + np.float32(1.33314422036e-1)) * z
                  - np.float32(3.33332819422e-1)) * z + np.float32(1.0))
    ax = abs(x)
    big = math.copysign(np.float32(1.0) - np.float32(2.0) / (_exp_f32(ax + ax)
                                                             + np.float32(1.0)), x)
    return select(ax < np.float32(0.625), small, big)


@register_jitable(**_JIT)
def _erfc_f32(x):
    """Numerical Recipes' erfcc (relative error < 1.2e-7 everywhere)."""
    inline_into_loops()
    z = abs(x)
    t = np.float32(1.0) / (np.float32(1.0) + np.float32(0.5) * z)
    q = t * (np.float32(-0.82215223) + t * np.float32(0.17087277))
    q = t * (np.float32(0.27886807) + t * (np.float32(-1.13520398) + t * (
        np.float32(1.48851587) + q)))
    q = np.float32(-1.26551223) + t * (np.float32(1.00002368) + t * (np.float32(
        0.37409196) + t * (np.float32(0.09678418) + t * (np.float32(-0.18628806) + q))))
    r = t * _exp_f32(-z * z + q)
    return select(x >= 0, r, np.float32(2.0) - r)


@intrinsic
def _f32_bits(typingctx, x):
    """The int32 bit pattern of a float32."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(types.float32), codegen


if numba.config.DISABLE_JIT:    # kernels run as Python (NUMBA_DISABLE_JIT=1): no intrinsics
    def _f32_from_bits(bits):
        return np.array(bits, np.int32).view(np.float32)[()]

    def _f32_bits(x):
        return np.array(x, np.float32).view(np.int32)[()]


@register_jitable(**_JIT, inline="always")
def _log_reduced_f32(m, fe):
    """Cephes logf's core: log(1 + m) + fe ln 2 for m in [sqrt(1/2) - 1, sqrt 2 - 1]
    (a polynomial; ln 2 in two parts)."""
    z = m * m
    y = ((((((((np.float32(7.0376836292e-2) * m - np.float32(1.1514610310e-1)) * m
               + np.float32(1.1676998740e-1)) * m - np.float32(1.2420140846e-1)) * m
             + np.float32(1.4249322787e-1)) * m - np.float32(1.6668057665e-1)) * m
           + np.float32(2.0000714765e-1)) * m - np.float32(2.4999993993e-1)) * m
         + np.float32(3.3333331174e-1)) * m * z
    y = y + fe * np.float32(-2.12194440e-4) - np.float32(0.5) * z
    return m + y + fe * np.float32(0.693359375)


@register_jitable(**_JIT)
def _log_f32(x):
    """Cephes logf: x = 2**e (1 + m), m in [sqrt(1/2) - 1, sqrt 2 - 1] from the bits;
    subnormals scaled by 2**25 first."""
    inline_into_loops()
    tiny = x < np.float32(1.17549435e-38)
    bits = _f32_bits(select(tiny, x * np.float32(33554432.0), x))
    # integer arithmetic widens to int64 in Numba (and int64 -> float32 vectorises
    # badly): each result is narrowed back, and the exponent is counted in float32
    m = _f32_from_bits(np.int32(np.int32(bits & np.int32(0x007fffff)) | np.int32(0x3f000000)))
    low = m < np.float32(0.70710678118654752)          # m in [0.5, 1) -> [sqrt(1/2), sqrt 2)
    fe = (np.float32(np.int32(np.int32(bits >> np.int32(23)) & np.int32(0xff)))
          - select(tiny, np.float32(151.0), np.float32(126.0))
          - select(low, np.float32(1.0), np.float32(0.0)))
    r = _log_reduced_f32(select(low, m + m, m) - np.float32(1.0), fe)
    r = select(x > 0, r, select(x == 0, np.float32(-np.inf), np.float32(np.nan)))
    return select(x == np.float32(np.inf), x, r)                   # NaN stays NaN


@register_jitable(**_JIT)
def _softplus_f32(z):
    """log(1 + e**z) as max(z, 0) + log1p(t), t = e**-|z| in (0, 1]: 1 + t needs no bit
    fiddling and no division (t, or (t - 1) / 2 above sqrt 2 - 1, is the reduced
    argument, exact); +inf where e**z overflows float32, as log1p(exp(z)) gives."""
    inline_into_loops()
    t = _exp_f32(-abs(z))
    high = t > np.float32(0.41421356237309503)
    r = _log_reduced_f32(select(high, (t - np.float32(1.0)) * np.float32(0.5), t),
                         select(high, np.float32(1.0), np.float32(0.0)))
    r = select(z > 0, z, np.float32(0.0)) + r
    return select(z > np.float32(88.72283905206835), np.float32(np.inf), r)


@register_jitable(**_JIT)
def _log1p_f32(x):
    """log(1 + x) = log(u) * x / (u - 1) with u = 1 + x rounded (Kahan): exact near 0."""
    inline_into_loops()
    u = x + np.float32(1.0)
    d = u - np.float32(1.0)
    r = _log_f32(u) * (x / select(d == 0, np.float32(1.0), d))
    return select(d == 0, x, select(u == np.float32(np.inf), u, r))


def fexp(x):
    """e**x: vectorisable in float32, libm in float64."""
    return math.exp(x)


def ftanh(x):
    return math.tanh(x)


def ferfc(x):
    return math.erfc(x)


def flog(x):
    return math.log(x)


def flog1p(x):
    return math.log1p(x)


def flog1pexp(x):
    """log1p(exp(x)): the formula PyTorch's softplus uses."""
    return math.log1p(math.exp(x))


@overload(fexp, jit_options=_JIT, inline="always")
def _fexp_overload(x):
    return (lambda x: _exp_f32(x)) if _is_f32(x) else (lambda x: math.exp(x))


@overload(ftanh, jit_options=_JIT, inline="always")
def _ftanh_overload(x):
    return (lambda x: _tanh_f32(x)) if _is_f32(x) else (lambda x: math.tanh(x))


@overload(ferfc, jit_options=_JIT, inline="always")
def _ferfc_overload(x):
    return (lambda x: _erfc_f32(x)) if _is_f32(x) else (lambda x: math.erfc(x))


@overload(flog, jit_options=_JIT, inline="always")
def _flog_overload(x):
    return (lambda x: _log_f32(x)) if _is_f32(x) else (lambda x: math.log(x))


@overload(flog1p, jit_options=_JIT, inline="always")
def _flog1p_overload(x):
    return (lambda x: _log1p_f32(x)) if _is_f32(x) else (lambda x: math.log1p(x))


@overload(flog1pexp, jit_options=_JIT, inline="always")
def _flog1pexp_overload(x):
    return (lambda x: _softplus_f32(x)) if _is_f32(x) else (
        lambda x: math.log1p(math.exp(x)))


# ---- inverse hyperbolic functions (kernels/scalar_math.py) ----------------------------
# Written over the float32 log/log1p above, so their float32 loops vectorise too (libm's
# asinhf & co are scalar calls); within 2.6 float32 ulp of the exact value (most of it the
# float32 log1p's own error, up to 2.2 ulp).

_LN2_F32 = np.float32(0.6931471805599453)


@register_jitable(**_JIT)
def _asinh_f32(x):
    """asinh|x| = log1p(|x| + x**2 / (1 + sqrt(1 + x**2))) (no cancellation near 0), or
    log|x| + ln 2 above 2**12 (where sqrt(1 + x**2) is |x| in float32); sign of x."""
    inline_into_loops()
    ax = abs(x)
    big = ax > np.float32(4096.0)
    s = select(big, np.float32(1.0), ax)            # keeps s * s finite
    small = _log1p_f32(s + s * s / (np.float32(1.0) + math.sqrt(np.float32(1.0) + s * s)))
    return math.copysign(select(big, _log_f32(ax) + _LN2_F32, small), x)


@register_jitable(**_JIT)
def _acosh_f32(x):
    """acosh x = log1p(t + sqrt(t (t + 2))), t = x - 1 (exact), or log x + ln 2 above
    2**12; NaN below 1."""
    inline_into_loops()
    big = x > np.float32(4096.0)
    t = select(big, np.float32(1.0), x - np.float32(1.0))
    r = select(big, _log_f32(x) + _LN2_F32,
               _log1p_f32(t + math.sqrt(t * (t + np.float32(2.0)))))
    return select(x < np.float32(1.0), np.float32(np.nan), r)


@register_jitable(**_JIT)
def _atanh_f32(x):
    """atanh x = log1p(2|x| / (1 - |x|)) / 2 with x's sign: +-inf at +-1, NaN beyond."""
    inline_into_loops()
    ax = abs(x)
    r = np.float32(0.5) * _log1p_f32((ax + ax) / (np.float32(1.0) - ax))
    return math.copysign(select(ax > np.float32(1.0), np.float32(np.nan), r), x)


def fasinh(x):
    return math.asinh(x)


def facosh(x):
    """acosh; NaN below 1 (Python's math.acosh, which the simulator runs, would raise)."""
    return math.acosh(x) if x >= 1 else c(x, math.nan)


def fatanh(x):
    """atanh; +-inf at +-1 and NaN beyond (where Python's math.atanh would raise)."""
    if abs(x) < 1:
        return math.atanh(x)
    return math.copysign(c(x, math.inf), x) if abs(x) == 1 else c(x, math.nan)


@overload(fasinh, jit_options=_JIT, inline="always")
def _fasinh_overload(x):
    return (lambda x: _asinh_f32(x)) if _is_f32(x) else (lambda x: math.asinh(x))


@overload(facosh, jit_options=_JIT, inline="always")
def _facosh_overload(x):
    return (lambda x: _acosh_f32(x)) if _is_f32(x) else (lambda x: math.acosh(x))


@overload(fatanh, jit_options=_JIT, inline="always")
def _fatanh_overload(x):
    return (lambda x: _atanh_f32(x)) if _is_f32(x) else (lambda x: math.atanh(x))
