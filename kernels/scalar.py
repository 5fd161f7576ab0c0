"""Scalar bodies of the elementwise ops, written once for every target.

Each plain function here is the body of one elementwise op. `cpu/pointwise.py`
turns it into a NumPy ufunc with ``numba.vectorize(cache=True)`` (NumPy's ufunc
machinery then handles strides and broadcasting at NumPy speed), and the CUDA
side compiles the same function with ``target='cuda'``. Helpers they call are
``register_jitable`` so every target can inline them.
"""
import math

from numba.extending import register_jitable


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


def exp(a):
    return math.exp(a)


def log(a):
    return math.log(a) if a > 0 else (-math.inf if a == 0 else math.nan)


@register_jitable
def _relu(a):
    return a if a > 0 else a * 0


def relu(a):
    return _relu(a)


def relu_grad(g, a):
    return g if a > 0 else g * 0
