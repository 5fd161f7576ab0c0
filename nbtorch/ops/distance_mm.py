"""cdist's p = 2 distances by the matmul identity as one Function (CPU, float32/float64).

PyTorch's default compute mode ('use_mm_for_euclid_dist_if_necessary') takes this path
when P > 25 or R > 25 ('use_mm_for_euclid_dist' always): |a|^2 - 2 a.b + |b|^2 by one
GEMM, clamped at 0. Composed from ops, forward and backward took ~25 op calls
(4 ms for 128x512 by 128x512); here the forward is two row-norm loops, one GEMM and one
loop (`kernels/cpu/distance_mm.py`), the backward one loop and two GEMMs. Under
create_graph=True the backward is the same formula written with ops (differentiable
again). Other devices and dtypes keep the composite (`distance._euclid_mm`).
"""
import numpy as np

from .. import _dtype
from .._registry import get_kernel
from .._tensor import empty
from ..autograd import Function, grad_mode
from ._fused_grad import fused_grad
from .normalization_rows import dense_array

__all__ = ["euclid_mm"]


def fits(x1, x2):
    """Whether the fused path runs: CPU, float32/float64 (the composite does the rest)."""
    return (x1.device.type == "cpu" and x1.dtype in (_dtype.float32, _dtype.float64)
            and x1.numel() and x2.numel() and x1._shape[-1])


class EuclidMM(Function):
    """out[b, i, j] = |x1[b, i] - x2[b, j]| of x1 (B, P, M), x2 (B, R, M) by one GEMM."""

    _backward_name = "CdistBackward0"

    @staticmethod
    def forward(ctx, x1, x2):
        a, b = dense_array(x1), dense_array(x2)
        B, P, R = a.shape[0], a.shape[1], b.shape[1]
        n1, n2 = np.empty((B, P), a.dtype), np.empty((B, R), a.dtype)
        from ..kernels.cpu import distance_mm as k
        k.row_sq_norms(a, n1)
        k.row_sq_norms(b, n2)
        out = empty((B, P, R), x1.dtype, x1.device)
        get_kernel("matmul", "cpu")(a, b.transpose(0, 2, 1), out._array)
        k.distances_from_gram(n1, n2, out._array)
        ctx.save_for_backward(x1, x2, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x1, x2, out = ctx.saved_tensors
        need = tuple(ctx.needs_input_grad[:2])
        if grad_mode.is_grad_enabled():
            return fused_grad(_grads, _grads_ops, (x1, x2, g), (out,))
        return _grads(x1, x2, g, out, need=need)


def _grads(x1, x2, g, out, need=(True, True)):
    """(dx1, dx2) by the kernels: w = g / out, then x * rowsum(w) - w @ other."""
    from ..kernels.cpu import distance_mm as k
    a, b, o = dense_array(x1), dense_array(x2), out._array
    B, P, R = o.shape
    w = np.empty(o.shape, o.dtype)
    s1, s2 = np.empty((B, P)), np.empty((B, R))
    k.distance_grad_weights(dense_array(g), o, w, s1, s2)
    matmul = get_kernel("matmul", "cpu")
    grads = []
    for want, x, other, s, wt in ((need[0], a, b, s1, w),
                                  (need[1], b, a, s2, w.transpose(0, 2, 1))):
        if not want:
            grads.append(None)
            continue
        gx = empty(x.shape, x1.dtype, x1.device)
        matmul(wt, other, gx._array)
        k.scaled_rows_minus(x, s, gx._array)
        grads.append(gx)
    return tuple(grads)


def _grads_ops(x1, x2, g):
    """`_grads` written with ops on the recomputed composite distances (differentiable)."""
    from .distance import _euclid_mm
    out = _euclid_mm(x1, x2)
    w = (g / out).masked_fill(out == 0, 0)
    g1 = x1 * w.sum(-1, keepdim=True) - w.matmul(x2)
    g2 = x2 * w.sum(-2).unsqueeze(-1) - w.transpose(-1, -2).matmul(x1)
    return g1, g2


def euclid_mm(x1, x2):
    """Distances of x1 (B, P, M) and x2 (B, R, M) rows by the matmul identity: the fused
    Function where it fits, else the composite."""
    if fits(x1, x2):
        return EuclidMM.apply(x1, x2)
    from .distance import _euclid_mm
    return _euclid_mm(x1, x2)
