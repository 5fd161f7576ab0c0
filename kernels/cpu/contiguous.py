"""Contiguous float32 loops of the costliest elementwise bodies (the fast path of
`cpu/ufuncs.py`).

For exp, log, log1p, tanh, sigmoid, the GELUs, SiLU, Mish, softplus and the
GELU/SiLU gradients, contiguous float32 operands of one shape run these flat
``@njit`` loops instead of the ufunc: ``out[i] = scalar.<body>(a[i], ...)`` with
512-bit vectors and output prefetching (`cpu/simd.py`). Each loop compiles once,
for float32 (float64 bodies call libm: nothing to vectorise). Editing a body in
`kernels/scalar.py` (or the float32 math it calls) invalidates these cached
loops too: their cache stamp covers the modules they import.
"""
from numba import njit
from numba.extending import register_jitable

from nbtorch.kernels.cpu.simd import map1 as _map1, map1_params2 as _map1_params2, map2 as _map2
from nbtorch.kernels.f32math import JIT_OPTIONS as _JIT
from nbtorch.kernels.scalar import (_softplus_unit, exp, gelu, gelu_grad, gelu_tanh,
                                    gelu_tanh_grad, log, log1p, mish, sigmoid, silu,
                                    silu_grad, softplus, tanh)

__all__ = ["CONTIGUOUS_LOOPS", "LOOP_PARAMETERS"]

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
