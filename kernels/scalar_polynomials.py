"""Scalar bodies of `torch.special` (3/3): the orthogonal polynomials (Chebyshev T, U, V, W
and their shifted forms, Hermite H and He, Laguerre L, Legendre P) of degree n.

PyTorch's special cases and recurrences, with n truncated to an integer (n < 0 gives 0; a
NaN n too, as x86's conversion makes it negative). They recur in float64 (PyTorch's recur
in the input's type, so its float32 values of high degree err more).
"""
import math

from numba.extending import register_jitable

from nbtorch.kernels.f32math import JIT_OPTIONS as _JIT

__all__ = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"]


@register_jitable(**_JIT)
def _order(n):
    """n as an int64 (-1 for NaN, which then gives 0, as x86's conversion does)."""
    return -1 if n != n or n < -1e18 else (int(n) if n < 1e18 else 10 ** 18)


def chebyshev_polynomial_t(a, n):
    return _chebyshev_t(a * 1.0, n)


@register_jitable(**_JIT)
def _chebyshev_t(x, n):
    k = _order(n)
    if k < 0:
        return x * 0
    if abs(x) == 1:
        return x * 0 + 1 if x > 0 or k % 2 == 0 else x * 0 - 1
    if k > 6 and abs(x) < 1:
        return math.cos(k * math.acos(x))
    if k == 0:
        return x * 0 + 1
    p = x * 0 + 1
    q = x
    for _ in range(1, k):
        p, q = q, (x + x) * q - p
    return q


def chebyshev_polynomial_u(a, n):
    return _chebyshev_u(a * 1.0, n)


@register_jitable(**_JIT)
def _chebyshev_u(x, n):
    k = _order(n)
    if k < 0:
        return x * 0
    if abs(x) == 1:
        return x * 0 + (k + 1) if x > 0 or k % 2 == 0 else x * 0 - (k + 1)
    if k > 8 and abs(x) < 1:
        t = math.acos(x)
        if math.sin(t) != 0:
            return math.sin((k + 1) * t) / math.sin(t)
        return (k + 1) * math.cos((k + 1) * t) / x
    if k == 0:
        return x * 0 + 1
    p = x * 0 + 1
    q = x + x
    for _ in range(1, k):
        p, q = q, (x + x) * q - p
    return q


def chebyshev_polynomial_v(a, n):
    return _chebyshev_v(a * 1.0, n)


@register_jitable(**_JIT)
def _chebyshev_v(x, n):
    k = _order(n)
    if k < 0:
        return x * 0
    if abs(x) == 1:
        if x > 0:
            return x * 0 + 1
        return x * 0 + (k + k + 1) if k % 2 == 0 else x * 0 - (k + k + 1)
    if k > 8 and abs(x) < 1:
        t = math.acos(x)
        if math.sin(t / 2) != 1:
            return math.cos((k + 0.5) * t) / math.cos(t / 2)
        return x * 0 + (k + k + 1) if k % 2 == 0 else x * 0 - (k + k + 1)
    if k == 0:
        return x * 0 + 1
    p = x * 0 + 1
    q = x + x - 1
    for _ in range(1, k):
        p, q = q, (x + x) * q - p
    return q


def chebyshev_polynomial_w(a, n):
    return _chebyshev_w(a * 1.0, n)


@register_jitable(**_JIT)
def _chebyshev_w(x, n):
    k = _order(n)
    if k < 0:
        return x * 0
    if abs(x) == 1:
        if x > 0:
            return x * 0 + (k + k + 1)
        return x * 0 + 1 if k % 2 == 0 else x * 0 - 1
    if k > 8 and abs(x) < 1:
        t = math.acos(x)
        if math.cos(t / 2) != 1:
            return math.sin((k + 0.5) * t) / math.sin(t / 2)
        if x > 0:
            return x * 0 + (k + k + 1)
        return x * 0 + 1 if k % 2 == 0 else x * 0 - 1
    if k == 0:
        return x * 0 + 1
    p = x * 0 + 1
    q = x + x + 1
    for _ in range(1, k):
        p, q = q, (x + x) * q - p
    return q


def shifted_chebyshev_polynomial_t(a, n):
    return _chebyshev_t(a * 2.0 - 1.0, n)


def shifted_chebyshev_polynomial_u(a, n):
    return _chebyshev_u(a * 2.0 - 1.0, n)


def shifted_chebyshev_polynomial_v(a, n):
    return _chebyshev_v(a * 2.0 - 1.0, n)


def shifted_chebyshev_polynomial_w(a, n):
    return _chebyshev_w(a * 2.0 - 1.0, n)


def hermite_polynomial_h(a, n):
    """The physicists' Hermite polynomial H_n(x)."""
    x = a * 1.0
    k = _order(n)
    if k < 0:
        return x * 0
    if k == 0:
        return x * 0 + 1
    p = x * 0 + 1
    q = x + x
    for j in range(1, k):
        p, q = q, (x + x) * q - (j + j) * p
    return q


def hermite_polynomial_he(a, n):
    """The probabilists' Hermite polynomial He_n(x)."""
    x = a * 1.0
    k = _order(n)
    if k < 0:
        return x * 0
    if k == 0:
        return x * 0 + 1
    p = x * 0 + 1
    q = x
    for j in range(1, k):
        p, q = q, x * q - j * p
    return q


def laguerre_polynomial_l(a, n):
    x = a * 1.0
    k = _order(n)
    if k < 0:
        return x * 0
    if x == 0 or k == 0:
        return x * 0 + 1
    p = x * 0 + 1
    q = 1 - x
    for j in range(1, k):
        p, q = q, ((j + j + (1 - x)) * q - j * p) / (j + 1)
    return q


def legendre_polynomial_p(a, n):
    x = a * 1.0
    k = _order(n)
    if k < 0:
        return x * 0
    if abs(x) == 1:
        return x * 0 + 1 if x > 0 or k % 2 == 0 else x * 0 - 1
    if k == 0:
        return x * 0 + 1
    p = x * 0 + 1
    q = x
    for j in range(1, k):
        p, q = q, ((j + j + 1) * x * q - j * p) / (j + 1)
    return q
