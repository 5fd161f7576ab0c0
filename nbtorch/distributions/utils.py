"""Helpers the distributions share: broadcasting parameters, probs <-> logits, lazy
properties, and the triangular-matrix packing (torch.distributions.utils)."""
from functools import update_wrapper
import numbers

import nbtorch
from nbtorch import Tensor

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits", "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060          # Euler-Mascheroni constant


def broadcast_all(*values):
    """Broadcast tensors and numbers to one shape; numbers become tensors of the first
    tensor's dtype and device (the default dtype if there is none).

    Example:
        >>> loc, scale = broadcast_all(nbtorch.zeros(3), 1.0)
    """
    if not all(isinstance(v, (Tensor, numbers.Number)) or hasattr(v, "__torch_function__")
               for v in values):
        raise ValueError("Input arguments must all be instances of Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        ref = next((v for v in values if isinstance(v, Tensor)), None)
        kw = ({"dtype": nbtorch.get_default_dtype()} if ref is None
              else {"dtype": ref.dtype, "device": ref.device})
        values = [v if isinstance(v, Tensor) else nbtorch.tensor(v, **kw) for v in values]
    return nbtorch.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return nbtorch.randn(tuple(shape), dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sum out the `dim` rightmost dimensions of `value`."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: sigmoid if binary, else softmax over the last dim."""
    if is_binary:
        return nbtorch.sigmoid(logits)
    return nbtorch.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamp into [eps, 1 - eps] of the dtype (keeps logs finite)."""
    eps = nbtorch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Logits from probabilities: log-odds if binary, else log (after clamping)."""
    ps = clamp_probs(probs)
    if is_binary:
        return nbtorch.log(ps) - nbtorch.log1p(-ps)
    return nbtorch.log(ps)


class lazy_property:
    """A property computed on first access, then stored on the instance; accessed on the
    class (under autograd-free construction) it behaves as a plain property."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with nbtorch.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """Lets Sphinx-like tools (and getattr on the class) see a property."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (from diagonal `diag`) of the last two dims, row by row."""
    n = mat.shape[-1]
    if not (-n <= diag < n):
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = _tril_indices(n, diag)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec, diag=0):
    """Inverse of `tril_matrix_to_vec`: a (..., n, n) lower-triangular matrix."""
    m = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1))
         ** 0.5) / 2
    if not abs(round(n) - n) < nbtorch.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    rows, cols = _tril_indices(n, diag)
    flat = nbtorch.zeros(tuple(vec.shape[:-1]) + (n * n,), dtype=vec.dtype, device=vec.device)
    index = nbtorch.tensor([r * n + c for r, c in zip(rows.tolist(), cols.tolist())],
                           device=vec.device)
    flat = flat.index_add(-1, index, vec)
    return flat.reshape(tuple(vec.shape[:-1]) + (n, n))


def _tril_indices(n, diag):
    rows = [r for r in range(n) for c in range(n) if c <= r + diag]
    cols = [c for r in range(n) for c in range(n) if c <= r + diag]
    return nbtorch.tensor(rows, dtype=nbtorch.int64), nbtorch.tensor(cols, dtype=nbtorch.int64)


def _mvlgamma(x, p):
    """log of the multivariate gamma function Gamma_p(x) = pi**(p(p-1)/4) prod
    Gamma(x - i/2) (torch.mvlgamma)."""
    import math
    offsets = nbtorch.arange(p, dtype=x.dtype, device=x.device) / 2
    return nbtorch.lgamma(x.unsqueeze(-1) - offsets).sum(-1) + p * (p - 1) / 4 * math.log(
        math.pi)


def _mvdigamma(x, p):
    """d/dx log Gamma_p(x)."""
    offsets = nbtorch.arange(p, dtype=x.dtype, device=x.device) / 2
    return nbtorch.digamma(x.unsqueeze(-1) - offsets).sum(-1)
