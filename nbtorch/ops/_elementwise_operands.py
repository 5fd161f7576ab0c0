"""The operands of elementwise kernels: each input cast to the compute dtype and moved
to the output's device, and half precision's way - float16 and bfloat16 operands widened
to float32 for the CPU kernels and the result rounded once, as PyTorch's CPU kernels do.
"""
import numpy as np

from .. import _dtype
from .._registry import _KERNELS, get_kernel
from .._scalars import wrap
from .._tensor import Tensor

__all__ = ["operand", "has_half", "HalfParam", "half_params", "half_pointwise"]


def operand(x, dtype, device):
    """`x` (a tensor or a number) as a raw array (or NumPy scalar) of `dtype` on `device`."""
    if x.__class__ is Tensor or isinstance(x, Tensor):
        if x.dtype is not dtype:
            x = x.to(dtype)
        d = x.device
        if d is not device and (d.type != device.type or d.index != device.index):
            x = x.to(device)                # a 0-d CPU tensor meeting a CUDA tensor
        return x._array
    return wrap(x, dtype)


def has_half(compute_dtype, out_dtype):
    """True when a kernel would see a half dtype (float16, bfloat16) on input or output."""
    if compute_dtype.__class__ is tuple:
        return out_dtype.is_half or any(d.is_half for d in compute_dtype)
    return compute_dtype.is_half or out_dtype.is_half


class HalfParam(float):
    """A scalar parameter (a slope, an alpha) of an op on half tensors: it enters the
    float32 kernel unrounded, as PyTorch's "opmath" value, where a number operand
    (``x + 0.1``) is first rounded to the half dtype."""


# Kernels whose Python-number operands PyTorch's CPU kernels read in float32 on half
# tensors (mul and the divisions keep the scalar in opmath; lerp's weight, addcmul's
# value); the other kernels' number operands round to the half dtype first.
_OPMATH_SCALAR_KERNELS = frozenset(("mul", "div", "div_floor", "div_trunc", "lerp",
                                    "addcmul", "addcdiv"))


def half_params(d, params):
    """`params` marked as `HalfParam`s when `d` is a half dtype (see `HalfParam`)."""
    if not d.is_half:
        return params
    return tuple(HalfParam(p) if p.__class__ is float else p for p in params)


def _half_operand(x, d, device, round_scalars):
    """A kernel operand for compute dtype `d`: a half operand is first cast (or rounded,
    for a number operand) to `d`, as PyTorch does, then widened exactly to float32.
    Without `round_scalars`, numbers and 0-d tensors (PyTorch's CPU scalars) are read
    in float32 directly."""
    if not d.is_half:
        return operand(x, d, device)
    if isinstance(x, Tensor):
        if not round_scalars and not x._shape:
            d = d.compute
        return operand(x, d, device).astype(np.float32, copy=False)
    if round_scalars and x.__class__ is not HalfParam:
        x = _dtype.round_scalar(x, d)
    return np.float32(x)


def half_pointwise(op, inputs, compute_dtype, out, device):
    """Run CPU kernel `op` in float32 for half operands and round the result into `out`
    once (PyTorch's CPU kernels compute float16 and bfloat16 in float32 per op)."""
    if compute_dtype.__class__ is not tuple:
        compute_dtype = (compute_dtype,) * len(inputs)
    opmath = op in _OPMATH_SCALAR_KERNELS
    args = [_half_operand(x, d, device, not (opmath and i)) for i, (x, d) in
            enumerate(zip(inputs, compute_dtype))]
    res = np.empty(out._shape, np.float32) if out.dtype.is_half else out._array
    (_KERNELS.get((op, "cpu")) or get_kernel(op, "cpu"))(res, *args)
    if res is not out._array:
        with np.errstate(over="ignore"):     # beyond the half range: inf, as PyTorch
            out._array[...] = res           # float32 -> half: round to nearest even
