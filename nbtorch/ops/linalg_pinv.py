"""The pseudo-inverse and least squares: torch.linalg.pinv and lstsq, with PyTorch's
gradients (pinv_backward, which also carries lstsq's through pinv(A) B).

pinv comes from the SVD of `linalg_decomp.py` (LAPACK's gesdd through NumPy); lstsq is
LAPACK's gelsd through NumPy (`kernels/cpu/linalg.py`, no CUDA kernel).
"""
import numpy as np

from .. import _dtype
from .._tensor import Tensor, empty, wrap
from ..autograd.function import Function
from ._return_types import _struct
from .linalg_common import batch_of, check_matrix, kernel, matrices
from .linalg_decomp import SVD
from .linalg_solve import with_out

__all__ = ["pinv", "lstsq", "pinv_backward"]

_Lstsq = _struct("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))


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

    def set_materialize_grads(self, value):
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
    if not isinstance(A, Tensor) or A.dim() < 2 or not (A.dtype.is_floating_point or
                                                        A.dtype.is_complex):
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
                           f"input's dtype {_dtype.type_name(A.dtype)} and other's dtype "
                           f"{_dtype.type_name(B.dtype)}")
    m, n = A.shape[-2], A.shape[-1]
    rc = _eps(A.dtype) * max(m, n) if rcond is None else float(rcond)
    X, res, rank, sv = _lstsq_values(A, Bm, rc)
    driver = driver or "gelsy"
    if A.requires_grad or B.requires_grad:
        X = _LstsqGrad.apply(A, Bm, X)
    Xm = X
    if vector:
        X = X.squeeze(-1)
    full = bool((rank == min(m, n)).all()) if rank.numel() else True
    if driver in ("gels", "gelsd", "gelss") and m > n and full:   # not gelsy's
        if A.requires_grad or B.requires_grad:      # |A X - B|^2 again, differentiable (X
            res = ((A @ Xm - Bm).abs() ** 2).sum(-2)  # is stationary: its share is zero)
        residuals = res
    else:
        residuals = X.new_empty((0,), dtype=X.dtype.to_real())
    rank = rank if driver != "gels" else rank.new_empty((0,))
    sv = sv if driver in ("gelsd", "gelss") else sv.new_empty((0,))
    return _Lstsq(X, residuals, rank, sv)


def _lstsq_values(A, B, rcond):
    batch = batch_of(A.shape, B.shape)
    m, n, k = A.shape[-2], A.shape[-1], B.shape[-1]
    a, b = matrices(A, batch), matrices(B, batch)
    nb = a.shape[0]
    x = np.empty((nb, n, k), A.dtype.np)
    real = A.dtype.to_real().np                     # residuals, singular values: real
    res = np.zeros((nb, k), real)
    rank = np.zeros(nb, np.int64)
    sv = np.empty((nb, min(m, n)), real)
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
