"""torch.linalg.eig / eigvals: the eigendecomposition of a general square matrix, with
complex results, batched, and PyTorch's gradient (linalg_eig_backward).

LAPACK's geev through NumPy is the engine (`kernels/cpu/linalg_eig.py`), as BLAS is
matmul's; there is no CUDA kernel (tests/cuda/test_parity.py). The backward needs a
complex solve, done here as the real 2n x 2n system [[Re, -Im], [Im, Re]] through
`linalg.solve`, so it stays differentiable.
"""
import numpy as np

from .. import _dtype
from .._dtype import type_name
from .._tensor import Tensor, empty
from ..autograd.function import Function
from ._return_types import _struct
from .linalg_common import LinAlgError, flat, kernel, matrices

__all__ = ["eig", "eigvals", "complex_solve"]

_Eig = _struct("linalg_eig", ("eigenvalues", "eigenvectors"))


def _check(op, A):
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    d = A.dtype
    if d.is_half or not (d.is_floating_point or d.is_complex):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{type_name(d)}")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if A.device.type != "cpu":
        kernel("linalg_eig", A.device)          # the registry's "no cuda kernel" error


def _run(op, A, vectors):
    batch = tuple(A.shape[:-2])
    n = A.shape[-1]
    cd = A.dtype if A.dtype.is_complex else A.dtype.to_complex()
    L = empty(batch + (n,), cd, A.device)
    V = empty(batch + (n, n), cd, A.device) if vectors else None
    a = matrices(A, batch)
    if not np.isfinite(a).all():
        raise LinAlgError(f"{op}: The algorithm failed to converge because the input matrix "
                          "contained non-finite values.")
    try:
        kernel("linalg_eig", A.device)(a, flat(L, 1), flat(V, 2) if vectors else None)
    except np.linalg.LinAlgError:
        raise LinAlgError(f"{op}: The algorithm failed to converge because the input matrix "
                          "is ill-conditioned or has too many repeated eigenvalues.") from None
    return L, V


class Eig(Function):
    @staticmethod
    def forward(ctx, A):
        L, V = _run("linalg.eig", A, True)
        ctx.save_for_backward(L, V)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        return eig_backward(L, V, gL, gV)


def eig_backward(L, V, gL, gV):
    """PyTorch's linalg_eig_backward: V^-H (diag(gL) + (V^H gV - V^H V diag(Re(V^H gV)))
    / conj(E)) V^H with E_ij = L_j - L_i (1 on the diagonal)."""
    from .creation import zeros_like
    from .diagonal import diag_embed
    Vh = V.mH
    if gV is None:
        inner = diag_embed(gL)
    else:
        VhgV = Vh @ gV
        d = VhgV.diagonal(0, -2, -1)
        if not bool((d.imag.abs() <= 1e-2).all()):     # PyTorch's allclose(.., 0, 1e-2, 1e-2)
            raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are "
                               "specified up to multiplication by e^{i phi}. The specified "
                               "loss function depends on this quantity, so it is "
                               "ill-defined.")
        Lc = L.conj()
        E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1)
        n = L.shape[-1]
        from .creation import eye
        I_ = eye(n, dtype=_dtype.bool, device=L.device)
        from .pointwise_select import where
        E = where(I_, E * 0 + 1, E)
        off = (VhgV - Vh @ (V * d.real.unsqueeze(-2))) / E
        diag = diag_embed(gL) if gL is not None else diag_embed(zeros_like(L))
        inner = where(I_, diag, off)
    return complex_solve(Vh, inner @ Vh)


def complex_solve(A, B):
    """A^-1 B for complex A, B through the real system [[Re A, -Im A], [Im A, Re A]]."""
    from .joining import cat
    from .linalg_solve import solve
    from .complex import complex
    Ar, Ai, Br, Bi = A.real, A.imag, B.real, B.imag
    big = cat([cat([Ar, -Ai], -1), cat([Ai, Ar], -1)], -2)
    X = solve(big, cat([Br, Bi], -2))
    n = A.shape[-1]
    return complex(X.narrow(-2, 0, n), X.narrow(-2, n, n))


class Eigvals(Function):
    @staticmethod
    def forward(ctx, A):
        L, V = _run("linalg.eigvals", A, True)
        ctx.save_for_backward(L, V)
        return L

    @staticmethod
    def backward(ctx, gL):
        L, V = ctx.saved_tensors
        return eig_backward(L, V, gL, None)


def _out(result, out):
    if out is None:
        return result
    for o, r in zip(out if isinstance(out, (tuple, list)) else (out,),
                    result if isinstance(result, tuple) else (result,)):
        o.resize_(r.shape)
        o.copy_(r)
    return out


def eig(A, *, out=None):
    """Eigenvalues and eigenvectors (columns, unit norm) of square A, both complex.

    Example:
        >>> nbtorch.linalg.eig(nbtorch.tensor([[2., 0.], [0., 3.]])).eigenvalues
        tensor([2.+0.j, 3.+0.j])
    """
    _check("linalg.eig", A)
    if A.requires_grad:
        L, V = Eig.apply(A)
    else:
        L, V = _run("linalg.eig", A, True)
    return _out(_Eig(L, V), out)


def eigvals(A, *, out=None):
    """The eigenvalues of square A (complex); differentiable through the eigenvectors."""
    _check("linalg.eigvals", A)
    if A.requires_grad:
        return _out(Eigvals.apply(A), out)
    return _out(_run("linalg.eigvals", A, False)[0], out)
