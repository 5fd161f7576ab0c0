"""The torch.* names of linear algebra (torch.det, torch.inverse, torch.svd, torch.qr,
torch.lu, torch.triangular_solve, ...) and their Tensor methods, over torch.linalg's ops.

The older interfaces keep their own argument orders and results (torch.svd returns V,
not Vh; torch.qr takes `some`; torch.triangular_solve(b, A) returns a copy of A too),
warn as PyTorch does where it deprecates them, and the removed ones (torch.lstsq,
torch.eig, torch.symeig) raise PyTorch's error.
"""
import warnings

from .._tensor import Tensor
from ._return_types import _struct
from .linalg_decomp import geqrf, qr as linalg_qr, svd as linalg_svd, svdvals
from .linalg_pinv import pinv
from .linalg_functions import (cholesky_inverse, cholesky_solve, householder_product,
                               matrix_exp, matrix_power, multi_dot, ormqr)
from .linalg_lu import lu_unpack, torch_lu as lu, torch_lu_solve as lu_solve
from .linalg_solve import det, inv as inverse, logdet, slogdet, with_out
from .linalg_triangular import cholesky as linalg_cholesky, solve_triangular

__all__ = ["det", "logdet", "slogdet", "inverse", "pinverse", "matrix_power", "matrix_exp",
           "cholesky", "cholesky_solve", "cholesky_inverse", "lu", "lu_solve", "lu_unpack",
           "qr", "svd", "triangular_solve", "geqrf", "orgqr", "ormqr", "chain_matmul",
           "lstsq", "eig", "symeig"]

_Svd = _struct("svd", ("U", "S", "V"))
_QR = _struct("qr", ("Q", "R"))
_TriangularSolve = _struct("triangular_solve", ("solution", "cloned_coefficient"))
orgqr = householder_product


def pinverse(input, rcond=1e-15):
    """The pseudo-inverse with singular values below rcond * s_max dropped."""
    return pinv(input, rtol=rcond)


def cholesky(input, upper=False, *, out=None):
    """torch.cholesky (deprecated in PyTorch): linalg.cholesky, or its transpose."""
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be "
                  "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    L = linalg_cholesky(input)
    return with_out(L.mH if upper else L, out)


def qr(input, some=True, *, out=None):
    """torch.qr: (Q, R), reduced (`some`) or complete."""
    return with_out(_QR(*linalg_qr(input, "reduced" if some else "complete")), out)


def svd(input, some=True, compute_uv=True, *, out=None):
    """torch.svd: (U, S, V) with V (not Vh); without compute_uv, zero U and V."""
    if not compute_uv:
        S = svdvals(input)
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        return with_out(_Svd(input.new_zeros(batch + (m, m)), S,
                             input.new_zeros(batch + (n, n))), out)
    U, S, Vh = linalg_svd(input, full_matrices=not some)
    return with_out(_Svd(U, S, Vh.mH), out)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """torch.triangular_solve(b, A): (X, a copy of A) with op(A) X = b, op = transpose or
    not; only the named triangle of A is read."""
    M = A.mT if transpose else A
    X = solve_triangular(M, b, upper=upper != transpose, unitriangular=unitriangular)
    return with_out(_TriangularSolve(X, A.clone()), out)


def chain_matmul(*matrices, out=None):
    """The product of the matrices in the cheapest order (torch.linalg.multi_dot)."""
    if len(matrices) == 1:
        return with_out(matrices[0].clone(), out)
    return multi_dot(list(matrices), out=out)


def _removed(name, advice):
    def fn(*args, **kwargs):
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now "
                           f"removed. {advice}")
    fn.__name__ = fn.__qualname__ = name
    return fn


lstsq = _removed("lstsq", "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.")
eig = _removed("eig", "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or "
               "`cdouble` rather than real tensors mimicking complex tensors.")
symeig = _removed("symeig", "The default behavior has changed from using the upper "
                  "triangular portion of the matrix by default to using the lower "
                  "triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be "
                  "replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else "
                  "'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) should be "
                  "replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')")

Tensor.pinverse = pinverse
Tensor.cholesky = lambda self, upper=False: cholesky(self, upper)
Tensor.qr = lambda self, some=True: qr(self, some)
Tensor.svd = lambda self, some=True, compute_uv=True: svd(self, some, compute_uv)
Tensor.triangular_solve = lambda self, A, upper=True, transpose=False, unitriangular=False: \
    triangular_solve(self, A, upper, transpose, unitriangular)
Tensor.geqrf = lambda self: geqrf(self)
Tensor.lstsq, Tensor.eig, Tensor.symeig = lstsq, eig, symeig
