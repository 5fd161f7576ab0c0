"""Scalar bodies of the elementwise ops, written once for every target.

Each plain function here is the body of one elementwise op: it maps scalars
to a scalar. `cpu/pointwise.py` turns it into a NumPy ufunc with
``numba.vectorize(cache=True)`` (NumPy's ufunc machinery then handles
strides and broadcasting), and the CUDA side compiles the same function with
``target='cuda'``. Helpers they call are ``register_jitable``/``overload`` so
every target can inline them. The costliest float32 bodies also get a flat
loop over contiguous arrays (`CONTIGUOUS_LOOPS`, at the end of this file).

float32 stays float32: a Python float literal is a float64 in Numba, so
``0.5 * x`` would compute a float32 `x` in float64 (and call the slow double
libm). Constants are therefore written ``c(x, 0.5)``: the literal typed like
`x` (float32 for float32, float64 otherwise).

Parameters of an op (alpha, beta, bounds...) are extra ufunc inputs passed as
0-d values of the compute dtype, so one compiled loop serves every value.

The helpers stay in this one file on purpose: Numba's on-disk cache checks only
the timestamp of the file defining a kernel, so a helper edited in another file
would leave stale cached kernels behind.
"""
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload, register_jitable
from numba.np.numpy_support import as_dtype


# Helpers compile with NumPy's error model, as the ufunc bodies do (Python's model adds a
# zero-division check and exception path to every `/`). Left to LLVM's judgement, a
# helper with a division stayed an opaque call and the loop ran scalar (tanh: 8x
# slower), so small helpers are inlined in Numba's IR (inline="always"), and the big
# float32 functions below (`_exp_f32`...) compile once each as functions LLVM must
# inline (`inline_into_loops`): inlining their typed IR at every call site cost seconds
# of compile time (mish's ufunc, cold: 9.7 s -> 0.4 s).
_JIT = {"error_model": "numpy"}


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
    """Giles' approximation ("Approximating the erfinv function", 2010), then Newton steps
    on erf (two: full float64 accuracy)."""
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
    """The n-th derivative of digamma: (-1)**(n+1) n! zeta(n+1, a) for n >= 1 (Hurwitz zeta
    summed directly up to w >= max(10, n + 1), then its Euler-Maclaurin tail)."""
    k = int(n)
    if k == 0:
        return _digamma(a)
    x = a * 1.0
    s = k + 1.0
    if x == math.inf:
        return 0.0
    if x <= 0 and x == np.floor(x):        # poles; -inf: NaN
        return math.nan if x == -math.inf else (math.inf if k % 2 == 1 else -math.inf)
    total = 0.0
    w = x
    while w < 10.0 or w < s:
        total += math.pow(w, -s)
        w += 1.0
    b = math.pow(w, -s)
    total += b * w / (s - 1.0) + 0.5 * b
    term = s * b / w                        # s w**(-s-1), then times (s+1)(s+2)/w**2 ...
    j = 0.0
    for coef in (1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160,
                 -691.0 / 1307674368000, 7.0 / 523069747200):
        total += coef * term
        term *= (s + j + 1.0) * (s + j + 2.0) / (w * w)
        j += 2.0
    fact = 1.0
    for i in range(2, k + 1):
        fact *= i
    return fact * total if k % 2 == 1 else -fact * total


@register_jitable(**_JIT, inline="always")
def _sigmoid(a):
    e = fexp(-abs(a))                       # never overflows
    s = c(a, 1.0) / (c(a, 1.0) + e)
    return select(a >= 0, s, e * s)


def sigmoid(a):
    return _sigmoid(a)


def logit(a, eps):
    """log(a / (1 - a)), with `a` clamped to [eps, 1 - eps] when eps >= 0."""
    if eps >= 0:
        a = min(max(a, eps), c(a, 1.0) - eps)
    return math.log(a / (c(a, 1.0) - a))


# ---- activations ---------------------------------------------------------------

def relu(a):
    return select(a <= 0, c(a, 0), a)       # NaN stays NaN; -inf gives 0


def hardtanh(a, lo, hi):
    return lo if a < lo else (hi if a > hi else a)


def leaky_relu(a, slope):
    return a if a > 0 else a * slope


def gelu(a):
    """a * Phi(a) = a/2 * (1 + erf(a/sqrt 2)) = a/2 * erfc(-a/sqrt 2) (no cancellation)."""
    return c(a, 0.5) * a * ferfc(a * c(a, -0.7071067811865476))


def gelu_tanh(a):
    inner = c(a, 0.7978845608028654) * (a + c(a, 0.044715) * a * a * a)
    return c(a, 0.5) * a * (c(a, 1.0) + ftanh(inner))


def silu(a):
    return a * _sigmoid(a)


@register_jitable(**_JIT, inline="always")
def _softplus1(a):
    """log(1 + exp(a)) without overflow."""
    return max(a, c(a, 0.0)) + flog1p(fexp(-abs(a)))


def mish(a):
    inline_into_loops()
    return a * ftanh(_softplus1(a))


def softplus(a, beta, threshold):
    """PyTorch's: a where a * beta > threshold, else log1p(exp(a * beta)) / beta (both
    sides computed, one selected: exp's argument capped at the threshold)."""
    inline_into_loops()
    z = a * beta
    above = z > threshold
    return select(above, a, flog1pexp(select(above, threshold, z)) / beta)


def _softplus_unit(a, beta, threshold):
    """softplus with beta == 1 (the default): no multiply or divide (both exact at 1)."""
    inline_into_loops()
    above = a > threshold
    return select(above, a, flog1pexp(select(above, threshold, a)))


def elu(a, alpha, scale, input_scale):
    """PyTorch's ELU family: selu and celu are elu with other constants."""
    if a > 0:
        return a * scale
    return math.expm1(a * input_scale) * alpha * scale


def hardsigmoid(a):
    return min(max(a + c(a, 3.0), c(a, 0.0)), c(a, 6.0)) / c(a, 6.0)


def hardswish(a):
    return a * min(max(a + c(a, 3.0), c(a, 0.0)), c(a, 6.0)) / c(a, 6.0)


# ---- fused first-order gradients (used when no double backward is recorded) ------

def relu_grad(g, out):
    return select(out <= 0, c(g, 0.0), g)


def sigmoid_grad(g, out):
    return g * out * (c(out, 1.0) - out)


def tanh_grad(g, out):
    return g * (c(out, 1.0) - out * out)


def gelu_grad(g, a):
    inline_into_loops()
    cdf = c(a, 0.5) * ferfc(a * c(a, -0.7071067811865476))
    pdf = fexp(c(a, -0.5) * a * a) * c(a, 0.3989422804014327)
    return g * (cdf + a * pdf)


def gelu_tanh_grad(g, a):
    k = c(a, 0.7978845608028654)
    t = ftanh(k * (a + c(a, 0.044715) * a * a * a))
    dinner = k * (c(a, 1.0) + c(a, 0.134145) * a * a)
    return g * c(a, 0.5) * (c(a, 1.0) + t + a * (c(a, 1.0) - t * t) * dinner)


def silu_grad(g, a):
    s = _sigmoid(a)
    return g * s * (c(a, 1.0) + a * (c(a, 1.0) - s))


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
    """|a - b| <= atol + rtol * |b| (exact equality covers infinities)."""
    if a == b:
        return True
    if a != a or b != b:
        return equal_nan and a != a and b != b
    return abs(a - b) <= atol + rtol * abs(b)


# ---- contiguous CPU loops: 512-bit SIMD and write prefetching for costly float32 bodies --
# The ufunc loops run at the vector width LLVM prefers for the CPU: 256 bits on Intel
# chips with AVX-512 ("prefer-256-bit" tuning). The bodies below are compute-bound
# there, so `cpu/pointwise.py` runs contiguous float32 operands through these plain
# loops instead: they ask for 512-bit vectors (1.3-1.6x faster in cache) and prefetch
# the output ahead of the writes. A fresh output (every op's `torch.empty`) is not in
# any cache, and a loop this heavy keeps too few of its writes in flight to hide the
# memory latency: tanh on 1e7 floats, one thread, fresh output: 20 ms -> 12.5 ms (a
# copy: 9 ms). They stay in this file so that editing a body also invalidates their
# cached code (Numba checks only the stamp of the file defining a kernel). Each loop
# compiles once, for float32 (float64 bodies call libm: nothing to vectorise).

@intrinsic
def _own_function_with_512bit_vectors(typingctx):
    """Let LLVM vectorise the function being compiled with 512-bit registers where the
    CPU has them (the attribute clang's -mprefer-vector-width=512 sets), and keep it a
    function of its own: inlined into a caller, its loops would take the caller's width."""
    def codegen(context, builder, signature, args):
        attributes = builder.function.attributes
        attributes.add("noinline")
        if isinstance(attributes, set):      # llvmlite's set of keyword attributes: a
            set.add(attributes, '"prefer-vector-width"="512"')   # string one prints alike
        return context.get_dummy_value()
    return types.none(), codegen


@intrinsic
def _prefetch_for_write(typingctx, array, index):
    """Fetch the cache line of array[index] for writing (llvm.prefetch, rw=1); a hint,
    never a fault."""
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        byte_ptr = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fn = builder.module.globals.get("llvm.prefetch.p0") or ir.Function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr.type, i32, i32, i32]),
            "llvm.prefetch.p0")
        builder.call(fn, [byte_ptr, ir.Constant(i32, 1), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return types.none(array, index), codegen


_BLOCK = 512                # elements per inner loop
_AHEAD = 4096               # elements between a block and the one it prefetches (16 KB)


@register_jitable(**_JIT)
def _prefetch_block(out, start):
    """Prefetch out[start + _AHEAD : start + _AHEAD + _BLOCK] for writing (16-float lines)."""
    n = out.shape[0]
    for j in range(min(start + _AHEAD, n), min(start + _AHEAD + _BLOCK, n), 16):
        _prefetch_for_write(out, j)


def _inlined_call(body, body_sig):
    """Codegen of body(*args) with the call marked `alwaysinline`: a body compiled on its
    own is a call LLVM may find too big to inline (gelu_grad), and a loop with a call in
    it does not vectorise. (Numba's inline="always" would inline the typed IR instead:
    the same machine code for 2-3x the compile time.)"""
    def codegen(context, builder, signature, args):
        before = {id(i) for b in builder.function.blocks for i in b.instructions}
        result = context.get_function(body, body_sig)(builder, args[1:])
        for block in builder.function.blocks:
            for instr in block.instructions:
                if isinstance(instr, ir.CallInstr) and id(instr) not in before:
                    instr.attributes.add("alwaysinline")
        return result
    return codegen


@intrinsic
def _inlined1(typingctx, body, a):
    """body(a), inlined by LLVM (see `_inlined_call`)."""
    body_sig = typingctx.resolve_function_type(body, (a,), {})
    return body_sig.return_type(body, a), _inlined_call(body, body_sig)


@intrinsic
def _inlined2(typingctx, body, a, b):
    """body(a, b), inlined by LLVM (see `_inlined_call`)."""
    body_sig = typingctx.resolve_function_type(body, (a, b), {})
    return body_sig.return_type(body, a, b), _inlined_call(body, body_sig)


@intrinsic
def _inlined3(typingctx, body, a, b, c):
    """body(a, b, c), inlined by LLVM (see `_inlined_call`)."""
    body_sig = typingctx.resolve_function_type(body, (a, b, c), {})
    return body_sig.return_type(body, a, b, c), _inlined_call(body, body_sig)


@register_jitable(**_JIT)
def _map1(body, out, a):
    """out[i] = body(a[i]) in blocks: prefetch a later block of out, then a SIMD loop."""
    _own_function_with_512bit_vectors()
    for start in range(0, out.shape[0], _BLOCK):
        _prefetch_block(out, start)
        o, x = out[start:start + _BLOCK], a[start:start + _BLOCK]
        for i in range(o.shape[0]):
            o[i] = _inlined1(body, x[i])


@register_jitable(**_JIT)
def _map2(body, out, a, b):
    """out[i] = body(a[i], b[i]), as `_map1`."""
    _own_function_with_512bit_vectors()
    for start in range(0, out.shape[0], _BLOCK):
        _prefetch_block(out, start)
        o, x, y = out[start:start + _BLOCK], a[start:start + _BLOCK], b[start:start + _BLOCK]
        for i in range(o.shape[0]):
            o[i] = _inlined2(body, x[i], y[i])


@register_jitable(**_JIT)
def _map1_params2(body, out, a, p, q):
    """out[i] = body(a[i], p, q) for scalar parameters p, q, as `_map1`."""
    _own_function_with_512bit_vectors()
    for start in range(0, out.shape[0], _BLOCK):
        _prefetch_block(out, start)
        o, x = out[start:start + _BLOCK], a[start:start + _BLOCK]
        for i in range(o.shape[0]):
            o[i] = _inlined3(body, x[i], p, q)


for _body in (exp, log, log1p, tanh, sigmoid, gelu, gelu_tanh, silu, mish, softplus,
              _softplus_unit, gelu_grad, gelu_tanh_grad, silu_grad):
    register_jitable(**_JIT)(_body)      # callable from the loops below
del _body

_LOOP = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})


@njit(**_LOOP)
def exp_loop(out, a):
    """out[i] = exp(a[i]) over 1-D contiguous float32 arrays (and likewise below)."""
    _map1(exp, out, a)


@njit(**_LOOP)
def log_loop(out, a):
    _map1(log, out, a)


@njit(**_LOOP)
def log1p_loop(out, a):
    _map1(log1p, out, a)


@njit(**_LOOP)
def tanh_loop(out, a):
    _map1(tanh, out, a)


@njit(**_LOOP)
def sigmoid_loop(out, a):
    _map1(sigmoid, out, a)


@njit(**_LOOP)
def gelu_loop(out, a):
    _map1(gelu, out, a)


@njit(**_LOOP)
def gelu_tanh_loop(out, a):
    _map1(gelu_tanh, out, a)


@njit(**_LOOP)
def silu_loop(out, a):
    _map1(silu, out, a)


@njit(**_LOOP)
def mish_loop(out, a):
    _map1(mish, out, a)


@njit(**_LOOP)
def softplus_loop(out, a, beta, threshold):
    """out[i] = softplus(a[i], beta, threshold) for scalar beta, threshold."""
    if beta == 1:            # the default: a loop without the division (same bits)
        _map1_params2(_softplus_unit, out, a, beta, threshold)
    else:
        _map1_params2(softplus, out, a, beta, threshold)


@njit(**_LOOP)
def gelu_grad_loop(out, g, a):
    _map2(gelu_grad, out, g, a)


@njit(**_LOOP)
def gelu_tanh_grad_loop(out, g, a):
    _map2(gelu_tanh_grad, out, g, a)


@njit(**_LOOP)
def silu_grad_loop(out, g, a):
    _map2(silu_grad, out, g, a)


# scalar body name -> its contiguous loop (float32 operands of one shape, no broadcasting)
CONTIGUOUS_LOOPS = {"exp": exp_loop, "log": log_loop, "log1p": log1p_loop, "tanh": tanh_loop,
                    "sigmoid": sigmoid_loop, "gelu": gelu_loop, "gelu_tanh": gelu_tanh_loop,
                    "silu": silu_loop, "mish": mish_loop, "softplus": softplus_loop,
                    "gelu_grad": gelu_grad_loop, "gelu_tanh_grad": gelu_tanh_grad_loop,
                    "silu_grad": silu_grad_loop}
# trailing scalar parameters of a loop (0-d operands of the ufunc: one loop for all values)
LOOP_PARAMETERS = {"softplus": 2}
