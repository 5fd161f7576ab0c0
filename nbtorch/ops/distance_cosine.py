"""F.cosine_similarity as one Function on the CPU (float32/float64).

The composite (each vector scaled by its clamped norm, then multiplied and summed) cost
about fifteen op calls forward and backward; here each direction is one kernel
(`kernels/cpu/norm_rows.py`) over the inputs viewed as (outer, n, inner), vectors along
n. Broadcast inputs are expanded before the Function, so expand's backward sums their
gradients. Under create_graph=True the backward is the composite's own vector-Jacobian
product (`_fused_grad.vjp`): higher-order gradients are the composite's.
"""
import functools

import numpy as np

from .. import _dtype
from .._tensor import empty
from ..autograd import Function, grad_mode
from ._fused_grad import fused_grad, vjp
from .normalization_rows import dense_array, fits_rows, rows_layout

__all__ = ["cosine_similarity_rows", "cosine_composite"]


class CosineSimilarity(Function):
    """y = x1 . x2 / (max(|x1|, eps) max(|x2|, eps)) along ``dim`` (same shapes)."""

    _backward_name = "SumBackward1"

    @staticmethod
    def forward(ctx, x1, x2, dim, eps):
        from ..kernels.cpu import norm_rows
        outer, n, inner = rows_layout(x1._shape, dim)
        a, b = dense_array(x1).reshape(-1), dense_array(x2).reshape(-1)
        shape = x1._shape[:dim] + x1._shape[dim + 1:]
        out = empty(shape, x1.dtype, x1.device)
        st = empty((3, outer, inner), _dtype.float64, x1.device)
        norm_rows.cosine_forward(a, b, n, inner, eps, out._array.reshape(outer, inner),
                                 st._array)
        ctx.save_for_backward(x1, x2)
        ctx.st, ctx.dim, ctx.eps = st, dim, eps
        return out

    @staticmethod
    def backward(ctx, g):
        x1, x2 = ctx.saved_tensors
        params = dict(dim=ctx.dim, eps=ctx.eps)
        if grad_mode.is_grad_enabled():
            return fused_grad(functools.partial(_cosine_grads, **params),
                              functools.partial(_cosine_grads_ops, **params),
                              (x1, x2, g), (ctx.st,)) + (None, None)
        need = tuple(ctx.needs_input_grad[:2])
        return _cosine_grads(x1, x2, g, ctx.st, need=need, **params) + (None, None)


def _cosine_grads(x1, x2, g, st, dim, eps, need=(True, True)):
    """(dx1, dx2) by the backward kernel from the forward's float64 sums ``st``."""
    from ..kernels.cpu import norm_rows
    outer, n, inner = rows_layout(x1._shape, dim)
    a, b = dense_array(x1).reshape(-1), dense_array(x2).reshape(-1)
    grads = [empty(x1._shape, x1.dtype, x1.device) if w else None for w in need]
    arrays = [a if t is None else t._array.reshape(-1) for t in grads]
    norm_rows.cosine_backward(dense_array(g).reshape(outer, inner), a, b, n, inner,
                              st._array, eps, arrays[0], arrays[1], need[0], need[1],
                              np.empty((3, inner)))
    return tuple(grads)


def cosine_composite(x1, x2, dim, eps):
    """The composite (PyTorch 2.x's): each vector scaled by its norm clamped at eps, the
    clamp invisible to autograd, then the products summed (inputs of one shape)."""
    from .reduction_stats import vector_norm

    def unit(x):
        n = vector_norm(x, 2, dim, keepdim=True)
        return x / (n + (n.detach().clamp(min=eps) - n.detach()))   # clamped value, n's grad
    return (unit(x1) * unit(x2)).sum(dim)


def _cosine_grads_ops(x1, x2, g, dim, eps):
    """The composite's gradients as a differentiable vector-Jacobian product."""
    return vjp(lambda a, b: (cosine_composite(a, b, dim, eps),), (x1, x2), (g,))


def cosine_similarity_rows(x1, x2, dim, eps):
    """Cosine similarity of same-shape x1, x2 along ``dim`` (non-negative, checked by
    the caller): the fused kernels where they fit, else the composite."""
    if fits_rows(x1, x2):
        return CosineSimilarity.apply(x1, x2, dim, float(eps))
    return cosine_composite(x1, x2, dim, eps)
