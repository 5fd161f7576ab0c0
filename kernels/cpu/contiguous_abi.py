"""The contiguous float32 loops of `contiguous.py` behind NumPy's ufunc-loop ABI, so that
`loop_threads.run_loop` can split them over Numba's threads.

    loop(char **args, intp *n, intp *steps, void *data):  args = (inputs..., params..., out)

Each wrapper is a ``numba.cfunc`` compiled (or loaded from the disk cache) on its first
parallel call (`address(name)`); it calls the same ``@njit`` loop the serial path calls,
so both give the same bits. Inputs and the output are contiguous (steps unused);
parameters (softplus's beta and threshold) are 0-d, read once. The wrappers are
written out one per loop, not made by a factory: a cfunc built in a closure or from
`exec`'d source misses Numba's disk cache and recompiles in every process (DESIGN.md).
"""
import numpy as np
from numba import carray
from numba.extending import register_jitable

from nbtorch.kernels.cpu import contiguous as _c, loop_threads

__all__ = ["address"]



@register_jitable
def _f32(pointer, n):
    return carray(pointer, (n,), np.float32)


def _exp(args, n, steps, data):
    _c.exp_loop(_f32(args[1], n[0]), _f32(args[0], n[0]))


def _log(args, n, steps, data):
    _c.log_loop(_f32(args[1], n[0]), _f32(args[0], n[0]))


def _log1p(args, n, steps, data):
    _c.log1p_loop(_f32(args[1], n[0]), _f32(args[0], n[0]))


def _tanh(args, n, steps, data):
    _c.tanh_loop(_f32(args[1], n[0]), _f32(args[0], n[0]))


def _sigmoid(args, n, steps, data):
    _c.sigmoid_loop(_f32(args[1], n[0]), _f32(args[0], n[0]))


def _gelu(args, n, steps, data):
    _c.gelu_loop(_f32(args[1], n[0]), _f32(args[0], n[0]))


def _gelu_tanh(args, n, steps, data):
    _c.gelu_tanh_loop(_f32(args[1], n[0]), _f32(args[0], n[0]))


def _silu(args, n, steps, data):
    _c.silu_loop(_f32(args[1], n[0]), _f32(args[0], n[0]))


def _mish(args, n, steps, data):
    _c.mish_loop(_f32(args[1], n[0]), _f32(args[0], n[0]))


def _softplus(args, n, steps, data):
    _c.softplus_loop(_f32(args[3], n[0]), _f32(args[0], n[0]),
                     _f32(args[1], 1)[0], _f32(args[2], 1)[0])


def _gelu_grad(args, n, steps, data):
    _c.gelu_grad_loop(_f32(args[2], n[0]), _f32(args[0], n[0]), _f32(args[1], n[0]))


def _gelu_tanh_grad(args, n, steps, data):
    _c.gelu_tanh_grad_loop(_f32(args[2], n[0]), _f32(args[0], n[0]), _f32(args[1], n[0]))


def _silu_grad(args, n, steps, data):
    _c.silu_grad_loop(_f32(args[2], n[0]), _f32(args[0], n[0]), _f32(args[1], n[0]))


_WRAPPERS = {"exp": _exp, "log": _log, "log1p": _log1p, "tanh": _tanh, "sigmoid": _sigmoid,
             "gelu": _gelu, "gelu_tanh": _gelu_tanh, "silu": _silu, "mish": _mish,
             "softplus": _softplus, "gelu_grad": _gelu_grad,
             "gelu_tanh_grad": _gelu_tanh_grad, "silu_grad": _silu_grad}
assert _WRAPPERS.keys() == _c.CONTIGUOUS_LOOPS.keys()


def address(name):
    """The C address of body `name`'s contiguous float32 loop (compiled once)."""
    return loop_threads.cfunc_address(_WRAPPERS[name])
