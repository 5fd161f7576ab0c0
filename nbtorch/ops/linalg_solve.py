"""Linear systems and determinants: torch.linalg.solve/solve_ex, inv/inv_ex, det, slogdet,
logdet (and torch.det, torch.inverse, ...), batched over leading dims, with PyTorch's
gradients and errors.

Kernels: on the CPU LAPACK through NumPy (gesv, getri, getrf via det/slogdet;
`kernels/cpu/linalg.py`), on CUDA an LU per matrix in one thread
(`kernels/cuda/linalg.py`). A singular matrix raises PyTorch's LinAlgError naming the
batch element and LAPACK's `info`; the *_ex forms return `info` instead. Backward
formulas are PyTorch's, written with these ops (gradients of any order): solve's
gB = A^-H gX, gA = -gB X^H; inv's -A^-H g A^-H; det's g det A^-H (through the SVD where
A is singular, as PyTorch does); slogdet's g A^-H.
"""
from .._tensor import Tensor
from ..autograd.function import Function
from ._common import sum_to
from ._return_types import _struct
from .linalg_common import batch_of, check_square, flat, kernel, matrices, raise_info
from .._tensor import empty

__all__ = ["solve", "solve_ex", "inv", "inv_ex", "det", "slogdet", "logdet"]

_SolveEx = _struct("linalg_solve_ex", ("result", "info"))
_InvEx = _struct("linalg_inv_ex", ("inverse", "info"))
_Slogdet = _struct("slogdet", ("sign", "logabsdet"))


def with_out(result, out, name="linalg"):
    """`result`, or written into `out` (a tensor, or a tuple for tuple results) by the
    out= rules every op follows (resized when its shape differs, dtype and device checks)."""
    if out is None:
        return result
    from .._conventions import write_out
    return write_out(name, result, out)


def _singular(code):
    return "The solver failed because the input matrix is singular."


# ---- solve -----------------------------------------------------------------------------

class Solve(Function):
    """X = A^-1 B for A (*, n, n) and B (*, n, k), batch dims broadcast."""

    @staticmethod
    def forward(ctx, A, B, check):
        batch = batch_of(A.shape, B.shape)
        n, k = A.shape[-1], B.shape[-1]
        X = empty(tuple(batch) + (n, k), A.dtype, A.device)
        info = empty(tuple(batch), _int32(), A.device)
        kernel("linalg_solve", A.device)(matrices(A, batch), matrices(B, batch), flat(X, 2),
                                         info._array.reshape(-1))
        if check:
            raise_info("torch.linalg.solve", info, len(batch) > 0, _singular)
        ctx.save_for_backward(A, X)
        ctx.shapes = (A.shape, B.shape)
        ctx.info = info
        ctx.mark_non_differentiable(info)
        return X, info

    @staticmethod
    def backward(ctx, gX, ginfo):
        A, X = ctx.saved_tensors
        shape_a, shape_b = ctx.shapes
        gB = Solve.apply(A.mH, gX, False)[0]
        gA = sum_to(-(gB @ X.mH), shape_a) if ctx.needs_input_grad[0] else None
        return gA, sum_to(gB, shape_b), None


def _int32():
    from .. import _dtype
    return _dtype.int32


def _solve(op, A, B, left, check):
    check_square(op, A)
    if not isinstance(B, Tensor):
        raise TypeError(f"{op}(): argument 'B' must be Tensor, not {type(B).__name__}")
    if A.dtype is not B.dtype:
        from .._dtype import type_name
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of "
                           f"type {type_name(A.dtype)} and B of type {type_name(B.dtype)} "
                           "instead")
    if A.device != B.device:
        raise RuntimeError(f"{op}: Expected A and B to be on the same device, but found A on "
                           f"{A.device} and B on {B.device} instead.")
    n = A.shape[-1]
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    Bm = B.unsqueeze(-1) if vector else B
    if not left:
        if vector:
            raise RuntimeError(f"{op}: Vector broadcasting of the left hand side is not "
                               "supported for left=False. In this case linalg.solve is "
                               "equivalent to B / A.squeeze(-1)")
        Bm = Bm.mT
        A = A.mT
    if Bm.shape[-2] != n:
        rows, cols = (B.shape[-1], 1) if vector else (B.shape[-2], B.shape[-1])
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {rows}x{cols})")
    batch_of(A.shape, Bm.shape)
    X, info = Solve.apply(A, Bm, check)
    if not left:
        X = X.mT
    return (X.squeeze(-1) if vector else X), info


def solve(A, B, *, left=True, out=None):
    """The solution X of A X = B (X A = B with ``left=False``); B may be a vector.

    LAPACK's gesv through NumPy on the CPU (as matmul uses BLAS); batch dims broadcast.

    Example:
        >>> A = nbtorch.tensor([[3., 1.], [1., 2.]])
        >>> nbtorch.linalg.solve(A, nbtorch.tensor([9., 8.]))
        tensor([2., 3.])
    """
    if isinstance(A, Tensor) and A.dtype.is_complex and B.dtype is A.dtype and \
            A.dim() >= 2 and A.shape[-1] == A.shape[-2]:
        return with_out(_complex_solve(A, B, left), out)
    X, _ = _solve("torch.linalg.solve", A, B, left, True)
    return with_out(X, out)


def _complex_solve(A, B, left):
    """Complex A, B through the real 2n system (`linalg_eig.complex_solve`)."""
    from .linalg_eig import complex_solve
    vec = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if not left:                        # X A = B  <=>  A^T X^T = B^T
        return complex_solve(A.mT, B.mT).mT
    if vec:
        return complex_solve(A, B.unsqueeze(-1)).squeeze(-1)
    return complex_solve(A, B)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(result, info): solve without raising for a singular A (info > 0 there)."""
    X, info = _solve("torch.linalg.solve_ex", A, B, left, check_errors)
    return with_out(_SolveEx(X, info), out)


# ---- inverse ---------------------------------------------------------------------------

def _diagonal_zero(code):
    return (f"The diagonal element {code} is zero, the inversion could not be completed "
            "because the input matrix is singular.")


class Inv(Function):
    @staticmethod
    def forward(ctx, A, check):
        batch = tuple(A.shape[:-2])
        out = empty(tuple(A.shape), A.dtype, A.device)
        info = empty(batch, _int32(), A.device)
        kernel("linalg_inv", A.device)(matrices(A, batch), flat(out, 2),
                                       info._array.reshape(-1))
        if check:
            raise_info("linalg.inv", info, len(batch) > 0, _diagonal_zero)
        ctx.save_for_backward(out)
        ctx.mark_non_differentiable(info)
        return out, info

    @staticmethod
    def backward(ctx, g, ginfo):
        Ai, = ctx.saved_tensors
        AiH = Ai.mH
        return -(AiH @ (g @ AiH)), None


def inv(A, *, out=None):
    """The inverse of square A (batched); LinAlgError naming the zero pivot if singular.

    Example:
        >>> nbtorch.linalg.inv(nbtorch.tensor([[2., 0.], [0., 4.]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]])
    """
    if isinstance(A, Tensor) and A.dtype.is_complex and A.dim() >= 2 and \
            A.shape[-1] == A.shape[-2]:
        from .creation import eye
        return with_out(_complex_solve(A, eye(A.shape[-1], dtype=A.dtype, device=A.device),
                                       True), out)
    check_square("linalg.inv", A)
    return with_out(Inv.apply(A, True)[0], out)


def inv_ex(A, *, check_errors=False, out=None):
    """(inverse, info) without raising for a singular A."""
    check_square("linalg.inv_ex", A)
    return with_out(_InvEx(*Inv.apply(A, check_errors)), out)


# ---- determinants ----------------------------------------------------------------------

def _scalars(op, A):
    batch = tuple(A.shape[:-2])
    return batch, empty(batch, A.dtype, A.device)


class Det(Function):
    @staticmethod
    def forward(ctx, A):
        batch, d = _scalars("det", A)
        kernel("linalg_det", A.device)(matrices(A, batch), d._array.reshape(-1))
        ctx.save_for_backward(A, d)
        return d

    @staticmethod
    def backward(ctx, g):
        A, d = ctx.saved_tensors
        return _det_backward(g, d, A)


def _det_backward(g, d, A):
    """g det A^-H for invertible A; through A = U S Vh (det = det U det Vh prod S) where
    |det| < 100 eps, so a singular A gets the finite gradient PyTorch gives."""
    from .pointwise_select import where
    from .creation import eye
    n = A.shape[-1]
    if A.numel() == 0:
        return A * 0
    if n == 1:
        return g.unsqueeze(-1).unsqueeze(-1).expand(A.shape)
    eps = 2.220446049250313e-16 if A.dtype.itemsize == 8 else 1.1920928955078125e-07
    singular = (d.abs() < 100 * eps)
    any_singular = bool(singular.any())
    diag = (g * d).unsqueeze(-1).unsqueeze(-1) * eye(n, dtype=A.dtype, device=A.device)
    if not any_singular:
        return Solve.apply(A.mH, diag, False)[0]
    from .linalg_decomp import svd

    def through_svd(M):
        U, S, Vh = svd(M)
        alpha = det(U) * det(Vh) * g
        return (U * _prod_others(S).mul(alpha.unsqueeze(-1)).unsqueeze(-2)) @ Vh
    if bool(singular.all()):
        return through_svd(A)
    mask = singular.unsqueeze(-1).unsqueeze(-1)
    ident = eye(n, dtype=A.dtype, device=A.device).expand(A.shape)
    distinct = (eye(n, dtype=A.dtype, device=A.device) * _arange_like(n, A)).expand(A.shape)
    return where(mask, through_svd(where(mask, A, distinct)),
                 Solve.apply(where(mask, ident, A).mH, diag, False)[0])


def _arange_like(n, A):
    from .creation import arange
    return arange(1, n + 1, dtype=A.dtype, device=A.device)


def _prod_others(S):
    """prod_{j != i} S_j along the last dim, without dividing (zeros allowed)."""
    from .creation import ones
    one = ones(S.shape[:-1] + (1,), dtype=S.dtype, device=S.device)
    from .joining import cat
    left = cat([one, S[..., :-1]], -1).cumprod(-1)
    right = cat([one, S.flip(-1)[..., :-1]], -1).cumprod(-1).flip(-1)
    return left * right


def det(A, *, out=None):
    """The determinant of square A (batched): LAPACK's getrf on the CPU.

    Example:
        >>> nbtorch.linalg.det(nbtorch.tensor([[1., 2.], [3., 4.]]))
        tensor(-2.)
    """
    if _square_complex(A):
        from .linalg_cdet import complex_det
        return with_out(complex_det(A), out)
    check_square("linalg.det", A)
    return with_out(Det.apply(A), out)


def _square_complex(A):
    return isinstance(A, Tensor) and A.dtype.is_complex and A.dim() >= 2 and \
        A.shape[-1] == A.shape[-2]


class Slogdet(Function):
    @staticmethod
    def forward(ctx, A):
        batch, sign = _scalars("slogdet", A)
        logabs = empty(batch, A.dtype, A.device)
        kernel("linalg_slogdet", A.device)(matrices(A, batch), sign._array.reshape(-1),
                                           logabs._array.reshape(-1))
        ctx.save_for_backward(A)
        ctx.mark_non_differentiable(sign)
        return sign, logabs

    @staticmethod
    def backward(ctx, gsign, glog):
        A, = ctx.saved_tensors
        from .creation import eye
        diag = glog.unsqueeze(-1).unsqueeze(-1) * eye(A.shape[-1], dtype=A.dtype,
                                                      device=A.device)
        return Solve.apply(A.mH, diag, False)[0]


def slogdet(A, *, out=None):
    """(sign, logabsdet): det A = sign * exp(logabsdet), without overflow.

    Example:
        >>> nbtorch.linalg.slogdet(nbtorch.tensor([[2., 0.], [0., -3.]])).logabsdet
        tensor(1.7918)
    """
    if _square_complex(A):
        from .linalg_cdet import complex_slogdet
        return with_out(_Slogdet(*complex_slogdet(A)), out)
    check_square("linalg.slogdet", A)
    return with_out(_Slogdet(*Slogdet.apply(A)), out)


def logdet(input):
    """log(det(input)): NaN where det < 0, -inf where det == 0 (torch.logdet); for complex
    input the complex log|det| + i arg(det)."""
    if _square_complex(input):
        from .linalg_cdet import complex_logdet
        return complex_logdet(input)
    check_square("logdet", input)
    sign, logabs = Slogdet.apply(input)
    from .pointwise_select import where
    return where(sign < 0, float("nan"), logabs)


Tensor.det, Tensor.logdet, Tensor.inverse = det, logdet, inv
Tensor.slogdet = lambda self: slogdet(self)
