"""det, slogdet and logdet of complex matrices (CPU: getrf through NumPy's gufuncs,
`kernels/cpu/linalg.py`), with PyTorch's gradients: for det,
g conj(det) A^-H; for slogdet, (g_logabs + i Im(g_sign conj(sign))) A^-H (the sign's
share from its phase). A^-H comes from the complex solve of `linalg_eig.py`, so the
gradients are differentiable again. Singular matrices get no special treatment here
(their gradient is not finite).
"""
from .._tensor import empty
from ..autograd.function import Function
from .linalg_common import kernel, matrices

__all__ = ["complex_det", "complex_slogdet", "complex_logdet"]


def _inv_h_scaled(A, coef):
    """coef[..., None, None] * A^-H, through the complex solve."""
    from .creation import eye
    from .linalg_eig import complex_solve
    n = A.shape[-1]
    rhs = coef.unsqueeze(-1).unsqueeze(-1) * eye(n, dtype=A.dtype, device=A.device)
    return complex_solve(A.mH, rhs)


class ComplexDet(Function):
    @staticmethod
    def forward(ctx, A):
        batch = tuple(A.shape[:-2])
        d = empty(batch, A.dtype, A.device)
        kernel("linalg_det_complex", A.device)(matrices(A, batch), d._array.reshape(-1))
        ctx.save_for_backward(A, d)
        return d

    @staticmethod
    def backward(ctx, g):
        A, d = ctx.saved_tensors
        return _inv_h_scaled(A, g * d.conj())


class ComplexSlogdet(Function):
    @staticmethod
    def forward(ctx, A):
        batch = tuple(A.shape[:-2])
        sign = empty(batch, A.dtype, A.device)
        logabs = empty(batch, A.dtype.to_real(), A.device)
        kernel("linalg_slogdet_complex", A.device)(matrices(A, batch),
                                                   sign._array.reshape(-1),
                                                   logabs._array.reshape(-1))
        ctx.save_for_backward(A, sign)
        return sign, logabs

    @staticmethod
    def backward(ctx, gsign, glog):
        A, sign = ctx.saved_tensors
        coef = 0
        if glog is not None:
            coef = glog.to(A.dtype)
        if gsign is not None:
            from .complex import complex as make_complex
            phase = (gsign * sign.conj()).imag
            coef = coef + make_complex(phase * 0, phase)
        if not hasattr(coef, "shape"):
            return None
        return _inv_h_scaled(A, coef)


def complex_det(A):
    return ComplexDet.apply(A)


def complex_slogdet(A):
    return ComplexSlogdet.apply(A)


def complex_logdet(A):
    """log det A = log|det A| + i arg(det A) (complex, as PyTorch's logdet of complex)."""
    from .complex import complex as make_complex
    sign, logabs = ComplexSlogdet.apply(A)
    return make_complex(logabs, sign.angle())
