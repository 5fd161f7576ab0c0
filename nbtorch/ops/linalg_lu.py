"""The LU family: torch.linalg.lu_factor/lu_factor_ex, lu, lu_solve, torch.lu_unpack and the
older torch.lu / torch.lu_solve, batched, rectangular where PyTorch allows it.

The factorisation is LAPACK's getrf (packed LU, 1-based int32 pivots, `info`), run by the
Numba loops of `kernels/lu.py` on both devices (NumPy does not expose getrf). Gradients
are PyTorch's: lu_factor's pulls the packed gradient back through the two triangular
solves (square, wide and tall cases), lu_solve's through the factors; `lu` is
lu_factor + lu_unpack, whose slicing adjoints rebuild the packed gradient.
"""
import numpy as np

from .. import _dtype
from .._tensor import Tensor, empty, wrap
from ..autograd.function import Function
from ._common import sum_to
from ._return_types import _struct
from .linalg_common import batch_of, check_matrix, flat, kernel, matrices, raise_info
from .linalg_solve import with_out
from .linalg_triangular import solve_triangular

__all__ = ["lu_factor", "lu_factor_ex", "lu", "lu_solve", "lu_unpack"]

_LuFactor = _struct("linalg_lu_factor", ("LU", "pivots"))
_LuFactorEx = _struct("linalg_lu_factor_ex", ("LU", "pivots", "info"))
_Lu = _struct("linalg_lu", ("P", "L", "U"))
_LuUnpack = _struct("lu_unpack", ("P", "L", "U"))


def _narrow(t, dim, length):
    return t.narrow(dim, 0, length)


def lu_backward(gL, gU, P, L, U):
    """PyTorch's linalg_lu_backward: the gradient of A = P L U from those of L and U."""
    from .joining import cat
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if m == n:
        gA = None
        if gL is not None:
            gA = (L.mH @ gL).tril(-1)
        if gU is not None:
            upper = (gU @ U.mH).triu()
            gA = upper if gA is None else gA + upper
        gA = solve_triangular(U.mH, gA, upper=False, left=False)
        gA = solve_triangular(L.mH, gA, upper=True, left=True, unitriangular=True)
    elif m < n:
        U1 = _narrow(U, -1, k)
        gA = None
        if gL is not None:
            gA = L.mH @ gL
        if gU is not None:
            term = -(gU.triu() @ U.mH)
            gA = term if gA is None else gA + term
        gA = solve_triangular(U1.mH, gA.tril(-1), upper=False, left=False)
        if gU is not None:
            gA = cat([gA + _narrow(gU, -1, k).triu(), gU.narrow(-1, k, n - k)], -1)
        gA = solve_triangular(L.mH, gA, upper=True, left=True, unitriangular=True)
        if gU is None:
            gA = cat([gA, U.narrow(-1, k, n - k) * 0], -1)
    else:
        L1 = _narrow(L, -2, k)
        gA = None
        if gU is not None:
            gA = gU @ U.mH
        if gL is not None:
            term = -(L.mH @ gL.tril(-1))
            gA = term if gA is None else gA + term
        gA = solve_triangular(L1.mH, gA.triu(), upper=True, left=True, unitriangular=True)
        if gL is not None:
            gA = cat([gA + _narrow(gL, -2, k).tril(-1), gL.narrow(-2, k, m - k)], -2)
        gA = solve_triangular(U.mH, gA, upper=False, left=False)
        if gL is None:
            gA = cat([gA, L.narrow(-2, k, m - k) * 0], -2)
    return P @ gA


class LuFactor(Function):
    """(LU, pivots, info) of A (*, m, n): getrf."""

    @staticmethod
    def forward(ctx, A):
        batch = tuple(A.shape[:-2])
        m, n = A.shape[-2], A.shape[-1]
        LU = empty(tuple(A.shape), A.dtype, A.device)
        pivots = empty(batch + (min(m, n),), _dtype.int32, A.device)
        info = empty(batch, _dtype.int32, A.device)
        kernel("linalg_lu_factor", A.device)(matrices(A, batch), flat(LU, 2), flat(pivots, 1),
                                             info._array.reshape(-1))
        ctx.mark_non_differentiable(pivots, info)
        ctx.save_for_backward(LU, pivots)
        return LU, pivots, info

    @staticmethod
    def backward(ctx, g, gpiv, ginfo):
        LU, pivots = ctx.saved_tensors
        P, L, U = lu_unpack(LU, pivots)
        k = min(LU.shape[-2], LU.shape[-1])
        return lu_backward(_narrow(g, -1, k), _narrow(g, -2, k), P, L, U)


def _pivot(op, pivot):
    if not pivot:
        raise RuntimeError(f"{op}: LU without pivoting is not implemented on the CPU")


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """(LU, pivots, info): the packed LU factorisation P A = L U without raising."""
    check_matrix("torch.linalg.lu_factor_ex", A)
    _pivot("linalg.lu_factor", pivot)
    LU, pivots, info = LuFactor.apply(A)
    if check_errors:
        raise_info("torch.linalg.lu_factor_ex", info, A.dim() > 2,
                   lambda c: f"The factorization could not be completed because U[{c},{c}] "
                             "is zero.")
    return with_out(_LuFactorEx(LU, pivots, info), out)


def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots): A = P L U packed in one matrix (L unit lower, U upper) and LAPACK's
    1-based int32 pivots; an exactly singular A raises, as in PyTorch.

    Example:
        >>> LU, piv = nbtorch.linalg.lu_factor(nbtorch.tensor([[1., 2.], [3., 4.]]))
        >>> piv
        tensor([2, 2], dtype=torch.int32)
    """
    check_matrix("torch.linalg.lu_factor", A)
    _pivot("linalg.lu_factor", pivot)
    LU, pivots, info = LuFactor.apply(A)
    raise_info("torch.linalg.lu_factor", info, A.dim() > 2,
               lambda c: f"U[{c},{c}] is zero and using it on lu_solve would result in a "
                         "division by zero. If you still want to perform the factorization, "
                         "consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, "
                         "pivot)")
    return with_out(_LuFactor(LU, pivots), out)


def _permutation(pivots, m, dtype, device):
    """P (*, m, m) with P^T A = the rows of A swapped as the pivots say (built on the
    host: k ints per matrix)."""
    piv = pivots._host().astype(np.int64) - 1
    batch = piv.shape[:-1]
    perm = np.broadcast_to(np.arange(m), batch + (m,)).copy()
    count = int(np.prod(batch, dtype=np.int64))        # (not -1: empty matrices)
    flat_perm = perm.reshape(count, m)
    flat_piv = piv.reshape(count, piv.shape[-1])
    rows = np.arange(flat_perm.shape[0])
    for j in range(flat_piv.shape[1]):
        p = flat_piv[:, j]
        a, b = flat_perm[rows, j].copy(), flat_perm[rows, p].copy()
        flat_perm[rows, j], flat_perm[rows, p] = b, a
    P = np.zeros(batch + (m, m), dtype.np)
    idx = np.indices(batch + (m,))
    P[tuple(idx[:-1]) + (perm, idx[-1])] = 1          # P[perm[i], i] = 1
    return wrap(P).to(device)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) from the packed factorisation of lu_factor (empty tensors for the parts
    not unpacked)."""
    from .creation import eye
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    if unpack_data:
        L = _narrow(LU_data, -1, k).tril(-1) + eye(m, k, dtype=LU_data.dtype,
                                                   device=LU_data.device)
        U = _narrow(LU_data, -2, k).triu()
    else:
        L = U = empty((0,), LU_data.dtype, LU_data.device)
    if unpack_pivots:
        P = _permutation(LU_pivots, m, LU_data.dtype, LU_data.device)
    else:
        P = empty((0,), LU_data.dtype, LU_data.device)
    return with_out(_LuUnpack(P, L, U), out)


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U (L unit lower m x k, U upper k x n, k = min(m, n)).

    Example:
        >>> P, L, U = nbtorch.linalg.lu(nbtorch.tensor([[1., 2.], [3., 4.]]))
        >>> U
        tensor([[3.0000, 4.0000],
                [0.0000, 0.6667]])
    """
    check_matrix("linalg.lu", A)
    _pivot("linalg.lu", pivot)
    LU, pivots, _ = LuFactor.apply(A)
    return with_out(_Lu(*lu_unpack(LU, pivots)), out)


class LuSolve(Function):
    """X = A^-1 B (trans: A^-H B) from A's packed factors; batch dims broadcast. The
    kernel's trans solves with A^T; for complex A, A^-H B = conj(A^-T conj(B))."""

    @staticmethod
    def forward(ctx, LU, pivots, B, trans):
        batch = batch_of(LU.shape, B.shape)
        n, k = LU.shape[-1], B.shape[-1]
        X = empty(tuple(batch) + (n, k), LU.dtype, LU.device)
        piv = pivots.expand(tuple(batch) + (n,)).contiguous()
        conj = trans and LU.dtype.is_complex
        kernel("linalg_lu_solve", LU.device)(matrices(LU, batch), flat(piv, 1),
                                             matrices(B.conj() if conj else B, batch),
                                             flat(X, 2), trans)
        if conj:
            X = X.conj()
        ctx.save_for_backward(LU, pivots, X)
        ctx.args = (trans, LU.shape, B.shape)
        return X

    @staticmethod
    def backward(ctx, gX):
        LU, pivots, X = ctx.saved_tensors
        trans, shape_lu, shape_b = ctx.args
        gB = LuSolve.apply(LU, pivots, gX, not trans)
        gLU = None
        if ctx.needs_input_grad[0]:
            gLU = sum_to(_lu_solve_factor_grad(gX, LU, pivots, X, trans), shape_lu)
        return gLU, None, sum_to(gB, shape_b), None


def _lu_solve_factor_grad(gX, LU, pivots, X, trans):
    """PyTorch's linalg_lu_solve_LU for left=True: the packed factors' gradient."""
    if not trans:                       # X = U^-1 L^-1 P^T B: P drops out
        P, L, U = lu_unpack(LU, pivots, unpack_pivots=False)
        gR = solve_triangular(U.mH, -(gX @ X.mH), upper=False, left=True)
        gL = solve_triangular(L.mH, gR @ U.mH, upper=True, left=True,
                              unitriangular=True).tril(-1)
        return gL + gR.triu()
    P, L, U = lu_unpack(LU, pivots)
    gR = -(P.mT @ X @ gX.mH @ P)
    gR = solve_triangular(L.mH, gR, upper=True, left=False, unitriangular=True)
    gU = solve_triangular(U.mH, L.mH @ gR, upper=False, left=False).triu()
    return gR.tril(-1) + gU


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """The solution of A X = B from A's lu_factor (X A = B with ``left=False``; A^H with
    ``adjoint``).

    Example:
        >>> A = nbtorch.tensor([[3., 1.], [1., 2.]])
        >>> nbtorch.linalg.lu_solve(*nbtorch.linalg.lu_factor(A), nbtorch.tensor([[9.], [8.]]))
        tensor([[2.],
                [3.]])
    """
    op = "linalg.lu_solve"
    check_matrix(op, LU, "LU")
    if LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"{op}: Expected LU to be square, but got {LU.shape[-2]} by "
                           f"{LU.shape[-1]} matrices")
    if not isinstance(B, Tensor) or B.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    if LU.dtype is not B.dtype:
        raise RuntimeError(f"{op}: Expected LU and B to have the same dtype, but found LU of "
                           f"type {_dtype.type_name(LU.dtype)} and B of type "
                           f"{_dtype.type_name(B.dtype)} instead")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    if left:
        X = LuSolve.apply(LU, pivots, B, bool(adjoint))
    else:                                            # X A = B <=> A^H X^H = B^H
        X = LuSolve.apply(LU, pivots, B.mH, not adjoint).mH
    return with_out(X, out)


# ---- the older torch.lu / torch.lu_solve --------------------------------------------

def torch_lu(A, pivot=True, get_infos=False, out=None):
    """torch.lu: (LU, pivots) or, with get_infos, (LU, pivots, infos)."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    if not get_infos:
        raise_info("torch.lu", info, A.dim() > 2,
                   lambda c: f"U[{c},{c}] is zero and using it on lu_solve would result in a "
                             "division by zero.")
    return with_out((LU, pivots, info) if get_infos else (LU, pivots), out)


def torch_lu_solve(b, LU_data, LU_pivots, *, out=None):
    """torch.lu_solve(b, LU_data, LU_pivots): the older argument order."""
    return lu_solve(LU_data, LU_pivots, b, out=out)


Tensor.lu = lambda self, pivot=True, get_infos=False: torch_lu(self, pivot, get_infos)
Tensor.lu_solve = lambda self, LU_data, LU_pivots: torch_lu_solve(self, LU_data, LU_pivots)
