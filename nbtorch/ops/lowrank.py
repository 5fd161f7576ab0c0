"""Randomized low-rank SVD and PCA (``torch.svd_lowrank``, ``torch.pca_lowrank``):
Halko, Martinsson and Tropp's Algorithm 4.4 (arXiv:0909.4061), a random range finder
refined by `niter` subspace iterations, then an exact SVD of the small projection.

Built from differentiable ops (randn, matmul, linalg.qr, linalg.svd), so gradients flow
as in PyTorch; the random start comes from the default generator, so after the same
``manual_seed`` the results are PyTorch's up to rounding.
"""
from .. import _dtype

__all__ = ["svd_lowrank", "pca_lowrank"]


def _float_dtype(A):
    d = A.dtype
    return d if d.is_floating_point or d.is_complex else _dtype.float32


def _approximate_basis(A, q, niter, M):
    """Q with q orthonormal columns such that Q Q^H (A - M) approximates A - M."""
    from ..linalg import qr
    from .random import randn
    R = randn(A.shape[-1], q, dtype=_float_dtype(A), device=A.device)
    X = A @ R if M is None else A @ R - M @ R
    Q = qr(X).Q
    for _ in range(2 if niter is None else niter):
        X = A.mH @ Q if M is None else A.mH @ Q - M.mH @ Q
        Q = qr(X).Q
        X = A @ Q if M is None else A @ Q - M @ Q
        Q = qr(X).Q
    return Q


def _svd_lowrank(A, q, niter, M):
    from ..linalg import svd
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:
        A = A.mH
        M = None if M is None else M.mH
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = svd(B, full_matrices=False)
    V = Vh.mH
    U = Q @ U
    if m < n:
        U, V = V, U
    return U, S, V


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) with A - M ~ U diag(S) V^H of rank q, by randomized subspace iteration.

    Example:
        >>> U, S, V = nbtorch.svd_lowrank(nbtorch.randn(50, 8) @ nbtorch.randn(8, 40), q=10)
    """
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V) of the (column-centred, by default) data A: V's columns are the principal
    directions, S**2 / (m - 1) the variances along them; q defaults to min(6, m, n)."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (0 <= q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter, None)
