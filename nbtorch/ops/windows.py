"""Window functions for spectral analysis: hann, hamming, blackman, bartlett, kaiser.

Each is built from `arange` and elementwise ops in the requested dtype and device, in
PyTorch's order of operations (so float32 windows round as PyTorch's do). `periodic`
windows are the symmetric window of length N + 1 without its last point.
"""
import math

from .. import _dtype

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


def _setup(op, n, periodic, dtype, device):
    if n < 0:
        raise RuntimeError(f"{op} requires non-negative window_length, got window_length={n}")
    dtype = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
    if not dtype.is_floating_point:
        raise RuntimeError(f"{op} expects floating point dtypes, got: {dtype}")
    from .creation import arange, ones, empty
    if n == 0:
        return None, empty(0, dtype=dtype, device=device)
    if n == 1:
        return None, ones(1, dtype=dtype, device=device)
    length = n + 1 if periodic else n
    return (arange(length, dtype=dtype, device=device), length), None


def _finish(window, n, periodic, requires_grad):
    out = window.narrow(0, 0, n) if periodic else window
    if requires_grad:
        out.requires_grad_()
    return out


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    """alpha - beta * cos(2 pi n / (N - 1)).

    Example:
        >>> nbtorch.hamming_window(3, periodic=False)
        tensor([0.0800, 1.0000, 0.0800])
    """
    ready, trivial = _setup("hamming_window", window_length, periodic, dtype, device)
    if trivial is not None:
        return trivial.requires_grad_(requires_grad)
    n, length = ready
    w = (n * (2 * math.pi / (length - 1))).cos() * (-beta) + alpha
    return _finish(w, window_length, periodic, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    """0.5 - 0.5 cos(2 pi n / (N - 1)) (a raised cosine)."""
    _setup("hann_window", window_length, periodic, dtype, device)
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, device=device,
                          requires_grad=requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    ready, trivial = _setup("blackman_window", window_length, periodic, dtype, device)
    if trivial is not None:
        return trivial.requires_grad_(requires_grad)
    n, length = ready
    w = n * (math.pi / (length - 1))
    w = (w * 4).cos() * 0.08 - (w * 2).cos() * 0.5 + 0.42
    return _finish(w, window_length, periodic, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """The triangular window 1 - |2n / (N - 1) - 1|."""
    ready, trivial = _setup("bartlett_window", window_length, periodic, dtype, device)
    if trivial is not None:
        return trivial.requires_grad_(requires_grad)
    n, length = ready
    w = n * (2.0 / (length - 1))
    half = (length - 1) // 2 + 1
    from .joining import cat
    w = cat([w.narrow(0, 0, half), 2 - w.narrow(0, half, length - half)])
    return _finish(w, window_length, periodic, requires_grad)


def _i0(x):
    """The modified Bessel function I0 by its power series sum ((x/2)^k / k!)^2, in float64,
    far enough past the largest term that the rest is below rounding."""
    y = x.to(_dtype.float64)
    q = (y * 0.5) ** 2
    term = y * 0 + 1.0
    total = term
    bound = float(q.amax()) if q.numel() else 0.0
    for k in range(1, int(2 * math.sqrt(bound)) + 30):     # terms peak at k ~ sqrt(q)
        term = term * q / float(k * k)
        total = total + term
    return total


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    """I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), a = (N - 1) / 2."""
    ready, trivial = _setup("kaiser_window", window_length, periodic, dtype, device)
    if trivial is not None:
        return trivial.requires_grad_(requires_grad)
    n, length = ready
    a = (length - 1) / 2.0
    arg = (1 - ((n.to(_dtype.float64) - a) / a) ** 2).clamp_min(0).sqrt() * beta
    from .creation import tensor
    w = (_i0(arg) / _i0(tensor([float(beta)], device=n.device))).to(n.dtype)
    return _finish(w, window_length, periodic, requires_grad)
