"""Scalar bodies of the activations and of their fused first-order gradients.

Same conventions as `scalar.py` (which re-exports every body here, so the elementwise
table finds them by name): plain functions of scalars, constants typed like the operand
with ``c(x, value)``, branch-free `select` where a ternary kept a loop scalar, float32
math that vectorises from `f32math.py`. A fused gradient computes, in one pass, what
its op's differentiable formula computes with several (nbtorch/ops/pointwise_
activation.py), with the same operations in the same order: the same bits.
"""
import math

from numba.extending import register_jitable

from nbtorch.kernels.f32math import (JIT_OPTIONS as _JIT, c, ferfc, fexp, flog1p, flog1pexp,
                                     ftanh, inline_into_loops, select)

__all__ = ["sigmoid", "relu", "hardtanh", "leaky_relu", "gelu", "gelu_tanh", "silu", "mish", "softplus", "elu", "hardsigmoid", "hardswish", "relu_grad", "leaky_relu_grad", "hardtanh_grad", "hardsigmoid_grad", "hardswish_grad", "sigmoid_grad", "tanh_grad", "gelu_grad", "gelu_tanh_grad", "silu_grad"]


# ---- sigmoid ---------------------------------------------------------------------

@register_jitable(**_JIT, inline="always")
def _sigmoid(a):
    e = fexp(-abs(a))                       # never overflows
    s = c(a, 1.0) / (c(a, 1.0) + e)
    return select(a >= 0, s, e * s)


def sigmoid(a):
    return _sigmoid(a)



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


def leaky_relu_grad(g, a, slope):
    return g if a > 0 else g * slope          # where(x > 0, g, g * slope)'s bits


def hardtanh_grad(g, a, lo, hi):
    return select((a > lo) & (a < hi), g, c(g, 0.0))


def hardsigmoid_grad(g, a):
    return select((a > c(a, -3.0)) & (a < c(a, 3.0)), g / c(g, 6.0), c(g, 0.0))


def hardswish_grad(g, a):
    mid = g * (a / c(a, 3.0) + c(a, 0.5))
    return select(a <= c(a, -3.0), c(g, 0.0), select(a < c(a, 3.0), mid, g))


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
