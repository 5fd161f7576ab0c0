"""``torch.lobpcg``: the k largest (or smallest) eigenpairs of a symmetric positive
definite generalized problem A x = lambda B x by LOBPCG (Knyazev 2001).

Each iteration runs Rayleigh-Ritz on the B-orthonormalised basis [X, R, P] (current
vectors, preconditioned residuals, previous directions) and keeps the best k Ritz
pairs; it stops when every residual norm is below tol (relative to |A x| + |lambda|
|B x|). The small dense problems go through `linalg.eigh` and `linalg.cholesky`.
Batched over leading dims. Gradients: the eigenvalues' (x x^T per pair, through a
differentiable Rayleigh quotient); a backward through the eigenvectors raises.
"""
import math

from .. import _dtype
from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.function import Function

__all__ = ["lobpcg"]


def _b_orthonormal(S, B):
    """S with B-orthonormal columns (dropping none; a small ridge if ill-conditioned)."""
    from ..linalg import LinAlgError, cholesky, solve_triangular
    G = S.mT @ (S if B is None else B @ S)
    G = (G + G.mT) / 2
    n = G.shape[-1]
    from .creation import eye
    for ridge in (0.0, 1e-12, 1e-9, 1e-6):
        try:
            L = cholesky(G + ridge * float(G.diagonal().abs().max())
                         * eye(n, dtype=G.dtype, device=G.device))
            break
        except LinAlgError:             # not positive definite: add a ridge
            continue
    else:
        raise RuntimeError("lobpcg: the search basis lost rank (try a different X or n)")
    return solve_triangular(L, S.mT, upper=False).mT


def _rayleigh_ritz(S, A, k, largest):
    """The k best Ritz pairs of A on the B-orthonormal basis S."""
    from ..linalg import eigh
    G = S.mT @ (A @ S)
    w, C = eigh((G + G.mT) / 2)
    idx = list(range(G.shape[-1] - 1, G.shape[-1] - 1 - k, -1)) if largest else list(range(k))
    return w[idx], C[:, idx]


def _solve_one(A, B, X, k, iK, niter, tol, largest):
    from .joining import cat
    X = _b_orthonormal(X, B)
    E, C = _rayleigh_ritz(X, A, k, largest)
    X = X @ C
    P = None
    for _ in range(niter):
        BX = X if B is None else B @ X
        AX = A @ X
        R = AX - BX * E
        scale = AX.norm(dim=0) + E.abs() * BX.norm(dim=0)
        if bool((R.norm(dim=0) <= tol * scale).all()):
            break
        if iK is not None:
            R = iK @ R
        S = cat([X, R] if P is None else [X, R, P], 1)
        S = _b_orthonormal(S, B)
        E, C = _rayleigh_ritz(S, A, k, largest)
        Xn = S @ C
        P = S[:, k:] @ C[k:]                        # the new direction, without X's part
        X = Xn
    return E, X


class _VectorsNoGrad(Function):
    """Passes the eigenvectors through; a backward through them raises."""

    @staticmethod
    def forward(ctx, X, A):
        return X.clone()

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError("lobpcg: the gradient through the eigenvectors is not "
                                  "supported by nbtorch (the eigenvalues' is)")


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """(E, X): the k largest (``largest=False``: smallest) eigenvalues of A x = E B x,
    sorted from the extreme inward, and their B-orthonormal eigenvectors.

    Example:
        >>> A = nbtorch.diag(nbtorch.arange(1., 11.))
        >>> nbtorch.lobpcg(A, k=2)[0]
        tensor([10.,  9.])
    """
    from .random import randn
    from .joining import stack
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if X is None else X.shape[-1]) if n is None else n
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows "
                         f"(={m}) is smaller than 3 x the number of requested eigenpairs "
                         f"(={n})")
    dtype = A.dtype if A.dtype.is_floating_point else _dtype.get_default_dtype()
    niter = 1000 if niter is None else (10 ** 9 if niter < 0 else niter)
    tol = math.sqrt(_dtype.finfo(dtype).eps) if tol is None else tol
    largest = True if largest is None else largest
    batch = tuple(A.shape[:-2])
    if X is None:
        X = randn(*batch, m, n, dtype=dtype, device=A.device)
    with grad_mode.no_grad():
        Ad = A.detach().to(dtype)
        outs = []
        for b in _indices(batch):
            Xb = X[b] if b else X
            Bb = None if B is None else (B[b] if b and B.dim() > 2 else B).to(dtype)
            outs.append(_solve_one(Ad[b] if b else Ad, Bb, Xb.to(dtype), k, iK,
                                   niter, tol, largest))
    E = stack([o[0] for o in outs]).reshape(batch + (k,)) if batch else outs[0][0]
    V = stack([o[1] for o in outs]).reshape(batch + (m, k)) if batch else outs[0][1]
    if isinstance(A, Tensor) and A.requires_grad:
        E = (V.mT @ A.to(dtype) @ V).diagonal(0, -2, -1)   # x^T A x: d/dA = x x^T
        if B is not None:
            E = E / (V.mT @ B.to(dtype) @ V).diagonal(0, -2, -1)
        V = _VectorsNoGrad.apply(V, A)
    return E, V


def _indices(batch):
    """Every index tuple of a batch shape (one empty tuple without batch dims)."""
    if not batch:
        return [()]
    out = [()]
    for size in batch:
        out = [t + (i,) for t in out for i in range(size)]
    return out
