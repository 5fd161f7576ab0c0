"""Decompositions: torch.linalg.qr, eigh/eigvalsh, svd/svdvals, torch.geqrf, batched, with
PyTorch's gradients (pinv and lstsq, built on the SVD, are in `linalg_pinv.py`).

LAPACK through NumPy is the engine (geqrf/orgqr, syevd, gesdd, gelsd; `kernels/cpu/
linalg.py`), as BLAS is matmul's; these have no CUDA kernel (tests/cuda/test_parity.py).
Backward formulas are PyTorch's (svd_backward, linalg_eig_backward for Hermitian
matrices, linalg_qr_backward, pinv_backward, linalg_lstsq_backward), written with
differentiable ops, so double backward works. The eigenvalues or singular values alone
are differentiable through the full decomposition, as in PyTorch. Real and complex
(complex64/128: unitary Q, U, V; real eigenvalues and singular values; gradients of
real-valued losses as PyTorch's, which raise where the loss depends on a vector's phase).
"""
import numpy as np

from .._tensor import empty
from ..autograd.function import Function
from ._return_types import _struct
from .linalg_common import LinAlgError, check_matrix, check_square, flat, kernel, matrices
from .linalg_solve import with_out
from .linalg_triangular import solve_triangular

__all__ = ["qr", "eigh", "eigvalsh", "svd", "svdvals", "geqrf"]   # eig: linalg_eig.py

_QR = _struct("linalg_qr", ("Q", "R"))
_Eigh = _struct("linalg_eigh", ("eigenvalues", "eigenvectors"))
_Svd = _struct("linalg_svd", ("U", "S", "Vh"))
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
    """PyTorch's linalg_qr_backward (real and complex matrices)."""
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
    if skew.dtype.is_complex:                        # diag(X - X^H) = 2i Im(diag X): halve it
        skew = skew - skew.diagonal(0, -2, -1).diag_embed() * 0.5
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


# ---- Hermitian (symmetric) eigendecomposition ----------------------------------------

class Eigh(Function):
    @staticmethod
    def forward(ctx, A, upper):
        batch = tuple(A.shape[:-2])
        n = A.shape[-1]
        L = empty(batch + (n,), A.dtype.to_real(), A.device)
        V = empty(tuple(A.shape), A.dtype, A.device)
        try:
            kernel("linalg_eigh", A.device)(matrices(A, batch), flat(L, 1), flat(V, 2), upper)
        except np.linalg.LinAlgError:
            raise _lapack_error("linalg.eigh", "eigenvalues") from None
        ctx.save_for_backward(L, V)
        # unused eigenvectors give no gradient (None), not zeros: zeros took the general
        # path and divided 0 by a zero eigen-gap (nan for repeated eigenvalues)
        ctx.set_materialize_grads(False)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        return eigh_backward(gL, gV, L, V), None


def eigh_backward(gL, gV, L, V):
    """PyTorch's linalg_eig_backward for a Hermitian A = V diag(L) V^H (L real); for complex
    V a loss that depends on the eigenvectors' phases raises, as in PyTorch."""
    Vh = V.mH
    if gV is None:
        return (V * gL.unsqueeze(-2)) @ Vh
    VhgV = Vh @ gV
    if VhgV.dtype.is_complex:
        im = VhgV.diagonal(0, -2, -1).imag
        _gauge_check(im, im * 0,
                     "linalg_eigh_backward: The eigenvectors in the complex case are specified "
                     "up to multiplication by e^{i phi}. The specified loss function depends on "
                     "this quantity, so it is ill-defined.")
    VhgV = (VhgV - VhgV.mH) * 0.5
    E = L.unsqueeze(-2) - L.unsqueeze(-1)
    E = E + _eye_like(E)
    gA = VhgV / E
    if gL is not None:
        gA = gA - gA.diagonal(0, -2, -1).diag_embed() + gL.diag_embed()
    return V @ (gA @ Vh)


def _gauge_check(a, b, message):
    """PyTorch's allclose(a, b, rtol=1e-2, atol=1e-2) test of a phase-invariant loss."""
    if not bool(((a - b).abs() <= 1e-2 + 1e-2 * b.abs()).all()):
        raise RuntimeError(message)


def _eye_like(E):
    from .creation import eye
    return eye(E.shape[-1], dtype=E.dtype, device=E.device)


def _uplo(op, UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"{op}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO == "U"


def eigh(A, UPLO="L", *, out=None):
    """(eigenvalues ascending, eigenvectors as columns) of Hermitian (symmetric) A, reading the
    triangle UPLO names (LAPACK's syevd through NumPy).

    Example:
        >>> nbtorch.linalg.eigh(nbtorch.tensor([[2., 1.], [1., 2.]])).eigenvalues
        tensor([1., 3.])
    """
    check_square("linalg.eigh", A)
    return with_out(_Eigh(*Eigh.apply(A, _uplo("linalg.eigh", UPLO))), out)


def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues (ascending, real) of Hermitian A; differentiable through eigh."""
    check_square("linalg.eigvalsh", A)
    upper = _uplo("linalg.eigvalsh", UPLO)
    if A.requires_grad:
        return with_out(Eigh.apply(A, upper)[0], out)
    batch = tuple(A.shape[:-2])
    L = empty(batch + (A.shape[-1],), A.dtype.to_real(), A.device)
    try:
        kernel("linalg_eigh", A.device)(matrices(A, batch), flat(L, 1), None, upper)
    except np.linalg.LinAlgError:
        raise _lapack_error("linalg.eigvalsh", "eigenvalues") from None
    return with_out(L, out)


# ---- singular value decomposition ---------------------------------------------------

class SVD(Function):
    @staticmethod
    def forward(ctx, A, full_matrices):
        batch = tuple(A.shape[:-2])
        m, n = A.shape[-2], A.shape[-1]
        k = min(m, n)
        U = empty(batch + (m, m if full_matrices else k), A.dtype, A.device)
        S = empty(batch + (k,), A.dtype.to_real(), A.device)
        Vh = empty(batch + (n if full_matrices else k, n), A.dtype, A.device)
        try:
            kernel("linalg_svd", A.device)(matrices(A, batch), flat(U, 2), flat(S, 1),
                                           flat(Vh, 2), full_matrices)
        except np.linalg.LinAlgError:
            raise _lapack_error("linalg.svd", "singular values") from None
        ctx.save_for_backward(U, S, Vh)
        ctx.full = full_matrices
        ctx.set_materialize_grads(False)      # as Eigh's: unused vectors give None
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
    """PyTorch's svd_backward: A = U diag(S) Vh. For complex A, the phase term
    i Im(diag(U^H gU)) / S joins the diagonal, and a loss that depends on the singular
    vectors' phases (Im diag(U^H gU) != -Im diag(V^H gV)) raises, as in PyTorch."""
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:
        return U @ (gS.unsqueeze(-1) * Vh) if m >= n else (U * gS.unsqueeze(-2)) @ Vh
    UhgU = (lambda X: X - X.mH)(U.mH @ gU) if gU is not None else None
    VhgV = (lambda X: X - X.mH)(Vh @ gVh.mH) if gVh is not None else None
    if U.dtype.is_complex:
        im_u = UhgU.diagonal(0, -2, -1).imag if UhgU is not None else S * 0
        im_v = VhgV.diagonal(0, -2, -1).imag if VhgV is not None else S * 0
        _gauge_check(im_u, -im_v,
                     "svd_backward: The singular vectors in the complex case are specified up "
                     "to multiplication by e^{i phi}. The specified loss function depends on "
                     "this phase term, making it ill-defined.")
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
    if U.dtype.is_complex and UhgU is not None:       # skew(U^H gU)'s diagonal is 2i Im(.)
        from .complex import complex as make_complex
        phase = UhgU.diagonal(0, -2, -1).imag / (2 * S)
        gA = gA + make_complex(phase * 0, phase).diag_embed()
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
    S = empty(batch + (min(A.shape[-2], A.shape[-1]),), A.dtype.to_real(), A.device)
    try:
        kernel("linalg_svd", A.device)(matrices(A, batch), None, flat(S, 1), None, False)
    except np.linalg.LinAlgError:
        raise _lapack_error("linalg.svdvals", "singular values") from None
    return with_out(S, out)
