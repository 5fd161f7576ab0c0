"""Decompositions: torch.linalg.qr, eigh/eigvalsh, svd/svdvals, lstsq, pinv, torch.geqrf
(and torch.svd, torch.qr), batched, with PyTorch's gradients.

LAPACK through NumPy is the engine (geqrf/orgqr, syevd, gesdd, gelsd; `kernels/cpu/
linalg.py`), as BLAS is matmul's; these have no CUDA kernel (tests/cuda/test_parity.py).
Backward formulas are PyTorch's (svd_backward, linalg_eig_backward for Hermitian
matrices, linalg_qr_backward, pinv_backward, linalg_lstsq_backward), written with
differentiable ops, so double backward works. The eigenvalues or singular values alone
are differentiable through the full decomposition, as in PyTorch.
"""
import numpy as np

from .. import _dtype
from .._tensor import Tensor, empty, wrap
from ..autograd.function import Function
from ._return_types import _struct
from .linalg_common import (LinAlgError, batch_of, check_matrix, check_square, flat, kernel,
                            matrices)
from .linalg_solve import with_out
from .linalg_triangular import solve_triangular

__all__ = ["qr", "eigh", "eigvalsh", "svd", "svdvals", "lstsq", "pinv", "geqrf", "eig",
           "eigvals"]

_QR = _struct("linalg_qr", ("Q", "R"))
_Eigh = _struct("linalg_eigh", ("eigenvalues", "eigenvectors"))
_Svd = _struct("linalg_svd", ("U", "S", "Vh"))
_Lstsq = _struct("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
_Geqrf = _struct("geqrf", ("a", "tau"))


def _lapack_error(op, what):
    return LinAlgError(f"{op}: The algorithm failed to converge because the input matrix is "
                       f"ill-conditioned or has too many repeated {what}.")


# ---- QR --------------------------------------------------------------------------------

class QR(Function):
    @staticmethod
    def forward(ctx, A, mode):
        batch = tuple(A.shape[:-2])
        m, n = A.shape[-2], A.shape[-1]
        k = m if mode == "complete" else min(m, n)
        R = empty(batch + ((k if mode != "r" else min(m, n)), n), A.dtype, A.device)
        Q = empty(batch + (m, k), A.dtype, A.device) if mode != "r" else empty(
            (0,), A.dtype, A.device)
        kernel("linalg_qr", A.device)(matrices(A, batch), flat(Q, 2) if mode != "r" else None,
                                      flat(R, 2), mode)
        ctx.save_for_backward(Q, R)
        ctx.mode = mode
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        Q, R = ctx.saved_tensors
        return qr_backward(gQ, gR, Q, R, ctx.mode), None


def qr_backward(gQ, gR, Q, R, mode):
    """PyTorch's linalg_qr_backward (real matrices)."""
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                           "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                           "going to differentiate through linalg.qr.")
    m, n = Q.shape[-2], R.shape[-1]
    if mode != "reduced" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                           "and nrows > ncols.")
    gA = gR @ R.mH - Q.mH @ gQ
    if m >= n:
        sym = gA.triu()
        sym = sym + sym.mH
        sym = sym - (sym.diagonal(0, -2, -1) * 0.5).diag_embed()
        gA = Q @ sym + gQ
        return solve_triangular(R.mH, gA, upper=False, left=False)
    from .joining import cat
    X = -gA
    skew = (X - X.mH).tril()
    gA = solve_triangular(R.narrow(-1, 0, m).mH, Q @ skew, upper=False, left=False)
    gA = cat([gA, gA.new_zeros(tuple(gA.shape[:-1]) + (n - m,))], -1)
    return gA + Q @ gR


def qr(A, mode="reduced", *, out=None):
    """(Q, R) with A = Q R, Q with orthonormal columns, R upper triangular; mode
    'reduced' (k = min(m, n)), 'complete' (Q square) or 'r' (Q empty).

    Example:
        >>> Q, R = nbtorch.linalg.qr(nbtorch.tensor([[3., 1.], [4., 2.]]))
        >>> R
        tensor([[-5.0000, -2.2000],
                [ 0.0000,  0.4000]])
    """
    check_matrix("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    return with_out(_QR(*QR.apply(A, mode)), out)


def geqrf(input, *, out=None):
    """(a, tau): LAPACK's geqrf, R on and above the diagonal of `a`, the Householder
    vectors below it (see householder_product). Not differentiable, as in PyTorch."""
    check_matrix("geqrf", input, "input")
    batch = tuple(input.shape[:-2])
    m, n = input.shape[-2], input.shape[-1]
    h = empty(tuple(input.shape), input.dtype, input.device)
    tau = empty(batch + (min(m, n),), input.dtype, input.device)
    kernel("linalg_geqrf", input.device)(matrices(input, batch), flat(h, 2), flat(tau, 1))
    return with_out(_Geqrf(h, tau), out)


# ---- symmetric eigendecomposition ---------------------------------------------------

class Eigh(Function):
    @staticmethod
    def forward(ctx, A, upper):
        batch = tuple(A.shape[:-2])
        n = A.shape[-1]
        L = empty(batch + (n,), A.dtype, A.device)
        V = empty(tuple(A.shape), A.dtype, A.device)
        try:
            kernel("linalg_eigh", A.device)(matrices(A, batch), flat(L, 1), flat(V, 2), upper)
        except np.linalg.LinAlgError:
            raise _lapack_error("linalg.eigh", "eigenvalues") from None
        ctx.save_for_backward(L, V)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        return eigh_backward(gL, gV, L, V), None


def eigh_backward(gL, gV, L, V):
    """PyTorch's linalg_eig_backward for a Hermitian A = V diag(L) V^H."""
    Vh = V.mH
    if gV is None:
        return (V * gL.unsqueeze(-2)) @ Vh
    VhgV = Vh @ gV
    VhgV = (VhgV - VhgV.mH) * 0.5
    E = L.unsqueeze(-2) - L.unsqueeze(-1)
    E = E + _eye_like(E)
    gA = VhgV / E
    if gL is not None:
        gA = gA - gA.diagonal(0, -2, -1).diag_embed() + gL.diag_embed()
    return V @ (gA @ Vh)


def _eye_like(E):
    from .creation import eye
    return eye(E.shape[-1], dtype=E.dtype, device=E.device)


def _uplo(op, UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"{op}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO == "U"


def eigh(A, UPLO="L", *, out=None):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric A, reading the
    triangle UPLO names (LAPACK's syevd through NumPy).

    Example:
        >>> nbtorch.linalg.eigh(nbtorch.tensor([[2., 1.], [1., 2.]])).eigenvalues
        tensor([1., 3.])
    """
    check_square("linalg.eigh", A)
    return with_out(_Eigh(*Eigh.apply(A, _uplo("linalg.eigh", UPLO))), out)


def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues (ascending) of symmetric A; differentiable through eigh."""
    check_square("linalg.eigvalsh", A)
    upper = _uplo("linalg.eigvalsh", UPLO)
    if A.requires_grad:
        return with_out(Eigh.apply(A, upper)[0], out)
    batch = tuple(A.shape[:-2])
    L = empty(batch + (A.shape[-1],), A.dtype, A.device)
    try:
        kernel("linalg_eigh", A.device)(matrices(A, batch), flat(L, 1), None, upper)
    except np.linalg.LinAlgError:
        raise _lapack_error("linalg.eigvalsh", "eigenvalues") from None
    return with_out(L, out)


def eig(A, *, out=None):
    """The eigendecomposition of a general square matrix: complex results."""
    check_square("linalg.eig", A)
    return _complex_results("linalg.eig")


def eigvals(A, *, out=None):
    check_square("linalg.eigvals", A)
    return _complex_results("linalg.eigvals")


def _complex_results(op):
    from .. import _dtype as d
    if getattr(d, "complex64", None) is None:
        raise NotImplementedError(f"{op}: its results are complex, and nbtorch has no complex "
                                  "dtypes yet (use linalg.eigh for symmetric matrices)")
    raise NotImplementedError(f"{op} is not implemented")


# ---- singular value decomposition ---------------------------------------------------

class SVD(Function):
    @staticmethod
    def forward(ctx, A, full_matrices):
        batch = tuple(A.shape[:-2])
        m, n = A.shape[-2], A.shape[-1]
        k = min(m, n)
        U = empty(batch + (m, m if full_matrices else k), A.dtype, A.device)
        S = empty(batch + (k,), A.dtype, A.device)
        Vh = empty(batch + (n if full_matrices else k, n), A.dtype, A.device)
        try:
            kernel("linalg_svd", A.device)(matrices(A, batch), flat(U, 2), flat(S, 1),
                                           flat(Vh, 2), full_matrices)
        except np.linalg.LinAlgError:
            raise _lapack_error("linalg.svd", "singular values") from None
        ctx.save_for_backward(U, S, Vh)
        ctx.full = full_matrices
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        if ctx.full:
            k = S.shape[-1]
            U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
            gU = gU.narrow(-1, 0, k) if gU is not None else None
            gVh = gVh.narrow(-2, 0, k) if gVh is not None else None
        return svd_backward(gU, gS, gVh, U, S, Vh), None


def svd_backward(gU, gS, gVh, U, S, Vh):
    """PyTorch's svd_backward (real matrices): A = U diag(S) Vh."""
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:
        return U @ (gS.unsqueeze(-1) * Vh) if m >= n else (U * gS.unsqueeze(-2)) @ Vh
    UhgU = (lambda X: X - X.mH)(U.mH @ gU) if gU is not None else None
    VhgV = (lambda X: X - X.mH)(Vh @ gVh.mH) if gVh is not None else None
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    E = E + _eye_like(E)
    if gU is not None and gVh is not None:
        gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E
    elif gU is not None:
        gA = (UhgU / E) * S.unsqueeze(-2)
    else:
        gA = S.unsqueeze(-1) * (VhgV / E)
    if gS is not None:
        gA = gA + gS.diag_embed()
    if m > n and gU is not None:
        gA = U @ gA
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - U @ (U.mH @ gUSinv)
        return gA @ Vh
    if m < n and gVh is not None:
        gA = gA @ Vh
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = gA + SinvgVh - (SinvgVh @ Vh.mH) @ Vh
        return U @ gA
    return U @ (gA @ Vh) if m >= n else (U @ gA) @ Vh


def svd(A, full_matrices=True, *, driver=None, out=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending (LAPACK's gesdd through NumPy).

    Example:
        >>> nbtorch.linalg.svd(nbtorch.tensor([[3., 0.], [0., -2.]])).S
        tensor([3., 2.])
    """
    check_matrix("linalg.svd", A)
    return with_out(_Svd(*SVD.apply(A, bool(full_matrices))), out)


def svdvals(A, *, driver=None, out=None):
    """The singular values of A, descending; differentiable through the full SVD."""
    check_matrix("linalg.svdvals", A)
    if A.requires_grad:
        return with_out(SVD.apply(A, False)[1], out)
    batch = tuple(A.shape[:-2])
    S = empty(batch + (min(A.shape[-2], A.shape[-1]),), A.dtype, A.device)
    try:
        kernel("linalg_svd", A.device)(matrices(A, batch), None, flat(S, 1), None, False)
    except np.linalg.LinAlgError:
        raise _lapack_error("linalg.svdvals", "singular values") from None
    return with_out(S, out)


# ---- pseudo-inverse and least squares -----------------------------------------------

def _eps(dtype):
    return float(np.finfo(dtype.np).eps)


class Pinv(Function):
    """A^+ from the SVD, singular values below max(atol, rtol * s_max) dropped."""

    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian):
        U, S, Vh = SVD.forward(_Unrecorded(), A, False) if A.numel() else (None,) * 3
        if A.numel() == 0:
            out = empty(tuple(A.shape[:-2]) + (A.shape[-1], A.shape[-2]), A.dtype, A.device)
        else:
            smax = S.amax(-1, keepdim=True) if S.shape[-1] else S
            tol = smax * rtol
            if atol is not None:
                tol = tol.clamp_min(atol) if not isinstance(atol, Tensor) else \
                    _maximum(tol, atol.unsqueeze(-1))
            keep = S > tol
            from .pointwise_select import where
            Sinv = where(keep, 1.0 / where(keep, S, 1.0), 0.0)
            out = (Vh.mH * Sinv.unsqueeze(-2)) @ U.mH
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx, g):
        A, P = ctx.saved_tensors
        return pinv_backward(g, P, A), None, None, None


class _Unrecorded:
    """A stand-in ctx for calling a Function's forward directly."""

    def save_for_backward(self, *a):
        pass

    def mark_non_differentiable(self, *a):
        pass


def _maximum(a, b):
    from .pointwise_select import maximum
    return maximum(a, b)


def pinv_backward(g, P, A):
    """PyTorch's pinv_backward: the derivative of A^+ in terms of A^+."""
    m, n = A.shape[-2], A.shape[-1]
    Ph = P.mH
    gh = g.mH
    if m <= n:
        K = gh @ P
        KPh = K @ Ph
        return -(P @ K).mH + KPh - (A @ P) @ KPh + (Ph @ P) @ (gh - K @ A)
    K = P @ gh
    PhK = Ph @ K
    return -(K @ P).mH + ((gh - A @ K) @ P) @ Ph + PhK - (PhK @ P) @ A


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The Moore-Penrose pseudo-inverse of A (*, m, n) -> (*, n, m), from its SVD;
    singular values at most max(atol, rtol * largest) count as zero (default rtol:
    eps * max(m, n) when atol is not given).

    Example:
        >>> nbtorch.linalg.pinv(nbtorch.tensor([[1., 0.], [0., 0.]]))
        tensor([[1., 0.],
                [0., 0.]])
    """
    if not isinstance(A, Tensor) or A.dim() < 2 or not A.dtype.is_floating_point:
        what = type(A).__name__ if not isinstance(A, Tensor) else \
            f"{_dtype.type_name(A.dtype)}{list(A.shape)}"
        raise RuntimeError(f"linalg.pinv({what}): expected a tensor with 2 or more dimensions "
                           "of float, double, cfloat or cdouble types")
    if rtol is None:
        rtol = 0.0 if atol is not None and not (isinstance(atol, (int, float)) and atol == 0) \
            else _eps(A.dtype) * max(A.shape[-2], A.shape[-1])
    return with_out(Pinv.apply(A, atol, float(rtol), hermitian), out)


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution X of A X = B (A (*, m, n), B (*, m, k) or (*, m)), as
    (solution, residuals, rank, singular_values) with PyTorch's rules for which of the
    last three are filled (by driver: 'gelsy' default, 'gels', 'gelsd', 'gelss').
    LAPACK's gelsd through NumPy computes them all; gradients are PyTorch's (through
    pinv(A) B).

    Example:
        >>> A = nbtorch.tensor([[1., 0.], [0., 1.], [0., 0.]])
        >>> nbtorch.linalg.lstsq(A, nbtorch.tensor([[1.], [2.], [3.]])).solution
        tensor([[1.],
                [2.]])
    """
    op = "torch.linalg.lstsq"
    check_matrix(op, A, "input")
    if not isinstance(B, Tensor):
        raise TypeError(f"{op}(): argument 'b' must be Tensor, not {type(B).__name__}")
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"{op}: parameter `driver` should be one of (gels, gelsy, gelsd, "
                           f"gelss)")
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-2)")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{op}: Expected input and other to have the same dtype, but got "
                           f"input's dtype {A.dtype} and other's dtype {B.dtype}")
    m, n = A.shape[-2], A.shape[-1]
    rc = _eps(A.dtype) * max(m, n) if rcond is None else float(rcond)
    X, res, rank, sv = _lstsq_values(A, Bm, rc)
    driver = driver or "gelsy"
    if A.requires_grad or B.requires_grad:
        X = _LstsqGrad.apply(A, Bm, X)
    if vector:
        X = X.squeeze(-1)
    full = bool((rank == min(m, n)).all()) if rank.numel() else True
    residuals = res if driver in ("gelsd", "gelss") and m > n and full else X.new_empty((0,))
    rank = rank if driver != "gels" else rank.new_empty((0,))
    sv = sv if driver in ("gelsd", "gelss") else sv.new_empty((0,))
    return _Lstsq(X, residuals, rank, sv)


def _lstsq_values(A, B, rcond):
    batch = batch_of(A.shape, B.shape)
    m, n, k = A.shape[-2], A.shape[-1], B.shape[-1]
    a, b = matrices(A, batch), matrices(B, batch)
    nb = a.shape[0]
    x = np.empty((nb, n, k), A.dtype.np)
    res = np.zeros((nb, k), A.dtype.np)
    rank = np.zeros(nb, np.int64)
    sv = np.empty((nb, min(m, n)), A.dtype.np)
    kernel("linalg_lstsq", A.device)(_host(a), _host(b), x, res, rank, sv, rcond)
    dev = A.device
    return (wrap(x.reshape(tuple(batch) + (n, k))).to(dev),
            wrap(res.reshape(tuple(batch) + (k,))).to(dev),
            wrap(rank.reshape(tuple(batch))).to(dev),
            wrap(sv.reshape(tuple(batch) + (min(m, n),))).to(dev))


def _host(a):
    return a if isinstance(a, np.ndarray) else a.copy_to_host()


class _LstsqGrad(Function):
    """Identity on X forward; backward: PyTorch's lstsq gradient through pinv(A) B."""

    @staticmethod
    def forward(ctx, A, B, X):
        ctx.save_for_backward(A, B)
        return X.detach()

    @staticmethod
    def backward(ctx, gX):
        A, B = ctx.saved_tensors
        P = pinv(A.detach() if not A.requires_grad else A)
        gA = pinv_backward(gX @ B.mH, P, A) if ctx.needs_input_grad[0] else None
        gB = P.mH @ gX if ctx.needs_input_grad[1] else None
        from ._common import sum_to
        return (sum_to(gA, A.shape) if gA is not None else None,
                sum_to(gB, B.shape) if gB is not None else None, None)
