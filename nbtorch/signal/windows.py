"""``torch.signal.windows``: window functions as SciPy defines them (``sym=True`` a
symmetric window for filter design, ``sym=False`` a periodic one for spectral analysis).

Each is a closed form over evenly spaced points (`linspace`) in float32 or float64:
w[n] = f(x_n) with x_n = start + n * step, so values match PyTorch's to rounding.
"""
import math

from .. import _dtype

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _check(name, M, dtype, layout):
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and str(layout) != "torch.strided":
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    dtype = dtype or _dtype.get_default_dtype()
    if dtype not in (_dtype.float32, _dtype.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _points(M, start, step, dtype, device, requires_grad):
    """start, start + step, ..., start + (M - 1) step (M points)."""
    from ..ops.creation import linspace
    return linspace(start, start + (M - 1) * step, M, dtype=dtype, device=device,
                    requires_grad=requires_grad)


def _trivial(M, dtype, device, requires_grad):
    """The window of length 0 (empty) or 1 (a single 1), or None."""
    from ..ops.creation import empty, ones
    if M == 0:
        return empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if M == 1:
        return ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return None


def _span(M, sym):
    """The length the window's period is measured in: M - 1 symmetric, M periodic."""
    return M - 1 if sym else M


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None,
                requires_grad=False):
    """exp(-|n - center| / tau) (the Poisson window)."""
    dtype = _check("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(0, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    return _points(M, -center / tau, 1 / tau, dtype, device, requires_grad).abs().neg().exp()


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """sin(pi (n + 1/2) / M) (the sine window; M + 1 when periodic)."""
    dtype = _check("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(0, dtype, device, requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return _points(M, 0.5 * step, step, dtype, device, requires_grad).sin()


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None,
             requires_grad=False):
    """exp(-(n - (M - 1)/2)^2 / (2 std^2))."""
    dtype = _check("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(0, dtype, device, requires_grad)
    step = 1 / (std * math.sqrt(2))
    start = -(M if not sym and M > 1 else M - 1) / 2.0 * step
    return (-_points(M, start, step, dtype, device, requires_grad) ** 2).exp()


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None,
           requires_grad=False):
    """I0(beta sqrt(1 - x^2)) / I0(beta) over x in [-1, 1]."""
    from ..ops.creation import tensor
    dtype = _check("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    small = _trivial(M, dtype, device, requires_grad)
    if small is not None:
        return small
    b = tensor(beta, dtype=dtype, device=device)
    from ..ops.creation import linspace
    end = min(beta, -beta + (M - 1) * 2.0 * beta / _span(M, sym))    # rounding past beta
    k = linspace(-beta, end, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return (b * b - k * k).sqrt().i0() / b.i0()


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangular window 1 - |x| over x in [-1, 1]."""
    dtype = _check("bartlett", M, dtype, layout)
    small = _trivial(M, dtype, device, requires_grad)
    if small is not None:
        return small
    return 1 - _points(M, -1, 2 / _span(M, sym), dtype, device, requires_grad).abs()


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """sum_i (-1)^i a_i cos(2 pi i n / (M - 1)): the sum-of-cosines family."""
    from ..ops.creation import arange, tensor
    dtype = _check("general_cosine", M, dtype, layout)
    small = _trivial(M, dtype, device, requires_grad)
    if small is not None:
        return small
    if not isinstance(a, (list, tuple)) and not hasattr(a, "__iter__"):
        raise TypeError("Coefficients must be a list/tuple")
    a = list(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    k = _points(M, 0, 2 * math.pi / _span(M, sym), dtype, device, requires_grad)
    coef = tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device)
    i = arange(len(a), dtype=dtype, device=device)
    return (coef.unsqueeze(-1) * (i.unsqueeze(-1) * k).cos()).sum(0)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
