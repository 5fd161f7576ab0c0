"""F.normalize with p = 2 as one Function on the CPU (float32/float64).

The composite (`x / x.norm(dim, keepdim=True).clamp_min(eps).expand_as(x)`) cost five
op calls forward and more backward; here forward and backward are one kernel each
(`kernels/cpu/norm_rows.py`), over the input viewed as (outer, n, inner) with the
vectors along n. Under create_graph=True the backward is the composite's own vector-
Jacobian product (`_fused_grad.vjp`), so higher-order gradients are the composite's.
Other p, dtypes and devices keep the composite (`normalization.normalize`).
"""
import functools
import math

import numpy as np

from .. import _dtype
from .._tensor import empty
from ..autograd import Function, grad_mode
from ._fused_grad import fused_grad, vjp

__all__ = ["dense_array", "rows_layout", "fits_rows", "normalize_l2"]


def dense_array(t):
    """The C-contiguous raw array of CPU tensor ``t``: itself when contiguous, one NumPy
    fill when it is one value expanded (an output gradient of ``.sum()``: a strided copy
    of it is ~7x slower), else a contiguous copy."""
    if t.is_contiguous():
        return t._array
    a = t._array
    if a.size and not any(a.strides):
        out = np.empty(a.shape, a.dtype)
        out.fill(a.flat[0])
        return out
    return t.contiguous()._array


def rows_layout(shape, dim):
    """(outer, n, inner) of a contiguous tensor of ``shape`` reduced along ``dim``."""
    return math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1:])


def fits_rows(*tensors):
    """Whether the fused row kernels take these tensors: CPU, float32/float64, one dtype,
    at least one dim, no elements missing."""
    t0 = tensors[0]
    return (t0.device.type == "cpu" and t0.dtype in (_dtype.float32, _dtype.float64)
            and t0.dim() > 0 and t0.numel() > 0
            and all(t.dtype is t0.dtype and t.device == t0.device for t in tensors))


class NormalizeL2(Function):
    """y = x / max(|x|_2, eps) along ``dim`` (the vectors of x viewed (outer, n, inner))."""

    _backward_name = "DivBackward0"

    @staticmethod
    def forward(ctx, x, dim, eps):
        from ..kernels.cpu import norm_rows
        outer, n, inner = rows_layout(x._shape, dim)
        a = dense_array(x).reshape(-1)
        out = empty(x._shape, x.dtype, x.device)
        nrm = empty((outer, inner), _dtype.float64, x.device)
        norm_rows.normalize_forward(a, n, inner, eps, out._array.reshape(-1), nrm._array,
                                    np.empty(inner, a.dtype))
        ctx.save_for_backward(x)
        ctx.nrm, ctx.dim, ctx.eps = nrm, dim, eps
        return out

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        params = dict(dim=ctx.dim, eps=ctx.eps)
        if grad_mode.is_grad_enabled():
            gx, = fused_grad(functools.partial(_normalize_grad, **params),
                             functools.partial(_normalize_grad_ops, **params), (x, g),
                             (ctx.nrm,))
        else:
            gx, = _normalize_grad(x, g, ctx.nrm, **params)
        return gx, None, None


def _normalize_grad(x, g, nrm, dim, eps):
    """(dx,) by the backward kernel from the forward's float64 norms ``nrm``."""
    from ..kernels.cpu import norm_rows
    outer, n, inner = rows_layout(x._shape, dim)
    gx = empty(x._shape, x.dtype, x.device)
    norm_rows.normalize_backward(dense_array(g).reshape(-1), dense_array(x).reshape(-1), n,
                                 inner, nrm._array, eps, gx._array.reshape(-1),
                                 np.empty((2, inner)))
    return (gx,)


def _normalize_composite(x, dim, eps):
    denom = x.norm(2.0, dim, keepdim=True).clamp_min(eps).expand_as(x)
    return x / denom


def _normalize_grad_ops(x, g, dim, eps):
    """The composite's gradient as a differentiable vector-Jacobian product."""
    gx, = vjp(lambda t: (_normalize_composite(t, dim, eps),), (x,), (g,))
    return (gx,)


def normalize_l2(x, dim, eps):
    """F.normalize(x, 2, dim, eps) by the fused kernels where they fit, else the composite
    (``dim`` already checked and made non-negative by the caller)."""
    if fits_rows(x):
        return NormalizeL2.apply(x, dim, float(eps))
    return _normalize_composite(x, dim, eps)
