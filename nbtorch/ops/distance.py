"""Distances: cdist (batched pairwise p-norm distances), pdist (its upper triangle for one
set of rows) and dist (the p-norm of a difference).

cdist's forward is a Numba kernel (kernels/{cpu,cuda}/distance.py): composing it from a
broadcast difference would materialise a (B, P, R, M) tensor. For p = 2 on larger
inputs it follows PyTorch's default compute mode and uses one matmul instead
(|a|^2 + |b|^2 - 2 a.b, clamped at 0: faster, slightly less exact). The backward is
written with ops: matmuls for p = 2, the broadcast difference otherwise.
"""
import math

from .._tensor import empty
from .._registry import get_kernel
from ..autograd.function import Function
from ._common import tensor_method

__all__ = ["cdist", "pdist", "dist"]

_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
          "donot_use_mm_for_euclid_dist")


class CDist(Function):
    """out[b, i, j] = ||x1[b, i] - x2[b, j]||_p by the distance kernel."""

    @staticmethod
    def forward(ctx, x1, x2, p):
        a, b = x1.contiguous(), x2.contiguous()
        out = empty((a._shape[0], a._shape[1], b._shape[1]), a.dtype, a.device)
        if out.numel():
            if a._shape[2] == 0:
                out.fill_(0)
            else:
                get_kernel("cdist", a.device.type)(a._array, b._array, out._array, p)
        ctx.p = p
        ctx.save_for_backward(x1, x2, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x1, x2, out = ctx.saved_tensors
        p = ctx.p
        if p == 2.0:
            w = (g / out).masked_fill(out == 0, 0)
            g1 = x1 * w.sum(-1, keepdim=True) - w.matmul(x2)
            g2 = x2 * w.sum(-2).unsqueeze(-1) - w.transpose(-1, -2).matmul(x1)
            return g1, g2, None
        diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)            # (B, P, R, M)
        d = out.unsqueeze(-1)
        if p == 0.0:
            gd = diff * 0
        elif p == 1.0:
            gd = diff.sign()
        elif p == math.inf:
            gd = diff.sign() * (diff.abs() == d).to(diff.dtype)
        else:
            gd = diff * diff.abs().pow(p - 2) / d.pow(p - 1)
            gd = gd.masked_fill(d == 0, 0)
            if p < 1:
                gd = gd.masked_fill(diff == 0, 0)
        gd = gd * g.unsqueeze(-1)
        return gd.sum(-2), -gd.sum(-3), None


def _euclid_mm(x1, x2):
    """PyTorch's matmul form of the Euclidean distance (its _euclidean_dist)."""
    n1 = x1.pow(2).sum(-1, keepdim=True)
    n2 = x2.pow(2).sum(-1, keepdim=True)
    sq = n1 - 2 * x1.matmul(x2.transpose(-1, -2)) + n2.transpose(-1, -2)
    return sq.clamp_min(1e-30).sqrt().masked_fill(sq <= 0, 0)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Distances between every row of x1 (..., P, M) and every row of x2 (..., R, M):
    (..., P, R), batch dims broadcast.

    Example:
        >>> nbtorch.cdist(nbtorch.zeros(1, 2), nbtorch.tensor([[3., 4.]]))
        tensor([[5.]])
    """
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x1._shape[-1] != x2._shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1._shape[-1]} X2: {x2._shape[-1]}")
    if not x1.dtype.is_floating_point or not x2.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: "
                           f"{_label(x1.dtype)}")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"X1 and X2 must have the same dtype, but got {_label(x1.dtype)} "
                           f"and {_label(x2.dtype)}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, but got {p}")
    if compute_mode not in _MODES and compute_mode is not None:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    from ._common import broadcast_shapes, check_same_device
    check_same_device("cdist", x1, x2)
    batch = broadcast_shapes(tuple(x1._shape[:-2]), tuple(x2._shape[:-2]))
    P, R, M = x1._shape[-2], x2._shape[-2], x1._shape[-1]
    count = 1
    for n in batch:
        count *= n
    a = x1.expand(batch + (P, M)).reshape(count, P, M)      # (not -1: empty inputs)
    b = x2.expand(batch + (R, M)).reshape(count, R, M)
    mode = compute_mode or _MODES[0]
    if p == 2.0 and (mode == _MODES[1] or (mode == _MODES[0] and (P > 25 or R > 25))):
        from .distance_mm import euclid_mm
        out = euclid_mm(a, b)
    else:
        out = CDist.apply(a, b, float(p))
    return out.reshape(batch + (P, R))


def _label(d):
    from .reduction import dtype_label
    return dtype_label(d)


def pdist(input, p=2):
    """The distances between each pair of rows i < j of a 2-D input, in row-major order
    of the pairs (the upper triangle of cdist(input, input))."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input._shape[0]
    from .diagonal import triu_indices
    iu = triu_indices(n, n, 1, device=input.device)
    a = input.unsqueeze(0)
    full = CDist.apply(a, a, float(p))[0]
    return full[iu[0], iu[1]]


@tensor_method()
def dist(self, other, p=2):
    """The p-norm of self - other (broadcast)."""
    from .reduction_stats import vector_norm
    return vector_norm(self - other, p)
