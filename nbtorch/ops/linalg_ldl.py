"""torch.linalg.ldl_factor / ldl_factor_ex / ldl_solve: LDL^T of symmetric (real)
matrices with Bunch-Kaufman pivoting, batched.

LAPACK's sytrf/sytrs are the algorithm; NumPy does not ship them, so they run as Numba
loops (`kernels/cpu/linalg_ldl.py`), CPU only (tests/cuda/test_parity.py). PyTorch has
no derivative for either: a backward through them raises its error. Complex input is
not supported (NotImplementedError).
"""
from .. import _dtype
from .._dtype import type_name
from .._tensor import Tensor, empty
from ..autograd.function import Function
from ._return_types import _struct
from .linalg_common import LinAlgError, batch_of, flat, kernel, matrices
from .linalg_solve import with_out

__all__ = ["ldl_factor_ex", "ldl_factor", "ldl_solve"]

_LDLEx = _struct("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
_LDL = _struct("linalg_ldl_factor", ("LD", "pivots"))


def _check(op, A, name="A"):
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    d = A.dtype
    if d.is_half or not (d.is_floating_point or d.is_complex):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. "
                           f"Got {type_name(d)}")
    if d.is_complex:
        raise NotImplementedError(f"{op}: complex matrices are not supported by nbtorch")


class _NoDerivative(Function):
    """Passes its outputs through; a backward raises PyTorch's 'not implemented' error."""

    @staticmethod
    def forward(ctx, name, fn, *inputs):
        ctx.name = name
        out = fn()
        if isinstance(out, tuple):
            ctx.mark_non_differentiable(*out[1:])
        return out

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(f"derivative for aten::{ctx.name} is not implemented")


def _factor(A):
    run = kernel("linalg_ldl_factor", A.device)      # (the registry's error off the CPU)
    batch = tuple(A.shape[:-2])
    n = A.shape[-1]
    LD = empty(batch + (n, n), A.dtype, A.device)
    pivots = empty(batch + (n,), _dtype.int32, A.device)
    info = empty(batch, _dtype.int32, A.device)
    flat(LD, 2)[...] = matrices(A, batch)
    run(flat(LD, 2), flat(pivots, 1), info._array.reshape(-1))
    return LD, pivots, info


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """(LD, pivots, info): the compact LDL^T factorisation of symmetric A (lower
    triangle read), LAPACK's sytrf conventions; info > 0 where D is exactly singular.

    Example:
        >>> A = nbtorch.tensor([[1., 3.], [3., -3.]])
        >>> nbtorch.linalg.ldl_factor_ex(A).pivots
        tensor([-2, -2], dtype=torch.int32)
    """
    op = "torch.linalg.ldl_factor_ex"
    _check(op, A)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    LD, pivots, info = (_NoDerivative.apply("linalg_ldl_factor_ex", lambda: _factor(A), A)
                        if A.requires_grad else _factor(A))
    if check_errors:
        _raise_singular(op, info)
    return with_out(_LDLEx(LD, pivots, info), out)


def _raise_singular(op, info):
    codes = info._host().reshape(-1)
    bad = codes.nonzero()[0]
    if bad.size:
        where = f"(Batch element {bad[0]}): " if info.dim() else ""
        raise LinAlgError(f"{op}: {where}The factorization could not be completed because "
                          f"the input is singular (D[{int(codes[bad[0]]) - 1}] is zero).")


def ldl_factor(A, *, hermitian=False, out=None):
    """(LD, pivots) of symmetric A; a singular D raises (see `ldl_factor_ex`)."""
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    _raise_singular("torch.linalg.ldl_factor", info)
    return with_out(_LDL(LD, pivots), out)


def _solve(LD, pivots, B):
    run = kernel("linalg_ldl_solve", LD.device)
    batch = batch_of(LD.shape, B.shape)
    X = empty(batch + tuple(B.shape[-2:]), B.dtype, B.device)
    flat(X, 2)[...] = matrices(B, batch)
    piv = pivots.expand(batch + (pivots.shape[-1],)).contiguous()
    run(matrices(LD, batch), flat(piv, 1), flat(X, 2))
    return X


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """X with A X = B from A's `ldl_factor` (LD, pivots), batched and broadcast."""
    op = "torch.linalg.ldl_solve"
    _check(op, LD, "LD")
    _check(op, B, "B")
    if LD.shape[-1] != LD.shape[-2]:
        raise RuntimeError(f"{op}: LD must be batches of square matrices, but they are "
                           f"{LD.shape[-2]} by {LD.shape[-1]} matrices")
    if pivots.dtype.is_floating_point or pivots.dtype.is_complex or \
            pivots.dtype is _dtype.bool:
        raise RuntimeError(f"{op}: Expected pivots to be integers. Got {type_name(pivots.dtype)}")
    if B.dtype is not LD.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{type_name(B.dtype)} and A of type {type_name(LD.dtype)} instead.")
    if B.shape[-2] != LD.shape[-1] or tuple(pivots.shape[-1:]) != (LD.shape[-1],):
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B "
                           f"({LD.shape[-2]}x{LD.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    if LD.requires_grad or B.requires_grad:
        X = _NoDerivative.apply("linalg_ldl_solve", lambda: _solve(LD, pivots, B), LD, B)
    else:
        X = _solve(LD, pivots, B)
    return with_out(X, out)
