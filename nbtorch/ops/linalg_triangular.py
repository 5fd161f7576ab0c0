"""Cholesky factorisation and triangular solves (torch.linalg.cholesky, cholesky_ex,
solve_triangular), batched over leading dimensions, with PyTorch's gradients.

A minimal piece of `torch.linalg`, added for `nbtorch.distributions`
(MultivariateNormal, LowRankMultivariateNormal, the positive-definite
constraint). The kernels are the Numba loops of `kernels/cpu/triangular.py`
(registry ops "linalg_cholesky" and "linalg_solve_triangular"); the backward
formulas are written with these ops, so higher-order gradients work. Complex
matrices are Hermitian (A = L L^H) and the same Numba loops serve them.
"""
import numpy as np

from .. import _dtype
from .._registry import get_kernel
from .._tensor import Tensor, wrap
from ..autograd.function import Function
from ._common import broadcast_shapes, sum_to
from .._dtype import type_name
from ._return_types import _struct

__all__ = ["cholesky", "cholesky_ex", "solve_triangular", "LinAlgError"]


class LinAlgError(RuntimeError):
    """A matrix the factorisation cannot handle (torch.linalg.LinAlgError)."""


def _check_square(op, A, name="A"):
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if A.dtype.is_complex:
        return
    if not A.dtype.is_floating_point or A.dtype.is_half:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. "
                           f"Got {type_name(A.dtype)}")


def _batched(t, batch, rows, cols, dtype):
    """t's values as a C-contiguous (prod(batch), rows, cols) array of `dtype` (a copy only
    where broadcasting or the layout needs one)."""
    arr = t._host()
    shape = tuple(batch) + (rows, cols)
    if arr.shape != shape:
        arr = np.broadcast_to(arr, shape)
    arr = np.ascontiguousarray(arr, dtype=dtype.np)
    if not arr.flags.writeable:         # a read-only broadcast view: one kernel signature
        arr = arr.copy()                # (writable arrays) instead of two
    return arr.reshape(int(np.prod(batch, dtype=np.int64)), rows, cols)   # 0x0 too


def _factor(A):
    """(L, info) arrays of A's lower Cholesky factors; info as PyTorch's (int32)."""
    kernel = get_kernel("linalg_cholesky", A.device.type)
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    a = _batched(A, batch, n, n, A.dtype)
    out = np.zeros_like(a)
    info = np.zeros(a.shape[0], np.int64)
    if a.size:
        kernel(a, out, info)
    return out.reshape(A.shape), info.astype(np.int32).reshape(batch)


class Cholesky(Function):
    """L with A = L L^H (lower); backward: Murray's formula, as PyTorch writes it."""

    @staticmethod
    def forward(ctx, A):
        L, info = _factor(A)
        bad = np.flatnonzero(info.reshape(-1))
        if bad.size:
            where = f"(Batch element {bad[0]}): " if A.dim() > 2 else ""
            raise LinAlgError(
                f"linalg.cholesky: {where}The factorization could not be completed because "
                "the input is not positive-definite (the leading minor of order "
                f"{info.reshape(-1)[bad[0]]} is not positive-definite).")
        out = wrap(L)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, gL):
        L, = ctx.saved_tensors
        gA = (L.mH @ gL).tril()
        gA = (gA + gA.tril(-1).mH) * 0.5               # Hermitian, half the diagonal
        gA = solve_triangular(L.mH, gA, upper=True)      # L^-H gA
        return solve_triangular(L, gA, upper=False, left=False)   # ... L^-1


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor of Hermitian positive-definite A (lower, or upper with `upper`).

    Only A's lower triangle is read. A LinAlgError (a RuntimeError) names the first
    leading minor that is not positive-definite.

    Example:
        >>> nbtorch.linalg.cholesky(nbtorch.tensor([[4., 2.], [2., 2.]]))
        tensor([[2., 0.],
                [1., 1.]])
    """
    _check_square("linalg.cholesky", A)
    L = Cholesky.apply(A)
    L = L.mH if upper else L
    if out is not None:
        out.copy_(L)
        return out
    return L


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): the factor without raising (info[b] > 0: minor info[b] failed)."""
    _check_square("linalg.cholesky_ex", A)
    L, info = _factor(A)
    bad = info != 0
    if check_errors and bad.any():
        cholesky(A)                                      # raises the error
    if bad.any() or not A.requires_grad:
        L = wrap(L)
    else:
        L = Cholesky.apply(A)
    return _CholeskyEx(L.mH if upper else L, wrap(info))


_CholeskyEx = _struct("linalg_cholesky_ex", ("L", "info"))


class SolveTriangular(Function):
    """X = A^-1 B for triangular A (left side only; `solve_triangular` transposes for the
    right side). Batch dims of A and B broadcast."""

    @staticmethod
    def forward(ctx, A, B, upper, unit):
        kernel = get_kernel("linalg_solve_triangular", A.device.type)
        n, k = B.shape[-2], B.shape[-1]
        batch = broadcast_shapes(A.shape[:-2], B.shape[:-2])
        d = _dtype.result_type(A, B)
        a = _batched(A, batch, n, n, d)
        b = _batched(B, batch, n, k, d)
        x = np.empty_like(b)
        if x.size:
            kernel(a, b, x, upper, unit)
        out = wrap(x.reshape(tuple(batch) + (n, k)))
        ctx.save_for_backward(A, out)
        ctx.args = (upper, unit, A.shape, B.shape)
        return out

    @staticmethod
    def backward(ctx, gX):
        A, X = ctx.saved_tensors
        upper, unit, shape_a, shape_b = ctx.args
        gB = SolveTriangular.apply(A.mH, gX, not upper, unit)      # A^-H gX
        gA = None
        if ctx.needs_input_grad[0]:
            gA = -(gB @ X.mH)
            gA = gA.triu(1 if unit else 0) if upper else gA.tril(-1 if unit else 0)
            gA = sum_to(gA, shape_a)
        return gA, sum_to(gB, shape_b), None, None


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """The solution X of A X = B (or X A = B with ``left=False``), A triangular.

    Only the triangle `upper` names is read (its diagonal taken as ones with
    `unitriangular`); batch dimensions broadcast.

    Example:
        >>> A = nbtorch.tensor([[2., 0.], [1., 1.]])
        >>> nbtorch.linalg.solve_triangular(A, nbtorch.tensor([[2.], [3.]]), upper=False)
        tensor([[1.],
                [2.]])
    """
    op = "linalg.solve_triangular"
    _check_square(op, A)
    if not isinstance(B, Tensor):
        raise TypeError(f"{op}(): argument 'B' must be Tensor, not {type(B).__name__}")
    if B.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    if A.device != B.device:
        raise RuntimeError(f"{op}: Expected A and B to be on the same device, but found A on "
                           f"{A.device} and B on {B.device} instead.")
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        rows, cols = B.shape[-2], B.shape[-1]
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {rows}x{cols})")
    broadcast_shapes(A.shape[:-2], B.shape[:-2])
    if left:
        X = SolveTriangular.apply(A, B, bool(upper), bool(unitriangular))
    else:                                                # X A = B  <=>  A^T X^T = B^T
        X = SolveTriangular.apply(A.mT, B.mT, not upper, bool(unitriangular)).mT
    if out is not None:
        out.copy_(X)
        return out
    return X
