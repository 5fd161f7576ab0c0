"""``torch.masked``: reductions and normalizations that see only the elements where a
boolean `mask` (broadcast to the input) is True.

Each is the plain op over the input with the masked-out elements replaced by the
op's identity (0 for sums and norms, 1 for products, -inf/+inf for max/min and the
softmax family, NaN for the median); means, variances and medians of an all-masked
slice are NaN and softmax rows of one are NaN, as in PyTorch. Written with
differentiable ops, so gradients flow to the unmasked elements. PyTorch's
`MaskedTensor` class is not provided.
"""
import math

from . import _dtype
from ._tensor import Tensor

__all__ = ["sum", "prod", "cumsum", "cumprod", "amax", "amin", "argmax", "argmin", "mean",
           "median", "logsumexp", "logaddexp", "norm", "var", "std", "softmax",
           "log_softmax", "softmin", "normalize"]


def _where(input, mask, fill):
    """input where mask, else `fill` (mask None: input as it is)."""
    if mask is None:
        return input
    from .ops.pointwise_select import where
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool:
        raise ValueError("masked ops expect a boolean mask tensor")
    return where(mask, input, fill)


def _count(input, mask, dim, keepdim):
    """How many elements each reduction sees (a float tensor)."""
    from .ops.creation import ones_like
    m = ones_like(input, dtype=_dtype.bool) if mask is None else mask.expand(input.shape)
    d = input.dtype if input.dtype.is_floating_point else _dtype.get_default_dtype()
    return m.to(d).sum(_dims(dim, input), keepdim=keepdim)


def _dims(dim, input):
    return tuple(range(input.dim())) if dim is None else dim


def _low(input):
    return -math.inf if input.dtype.is_floating_point else _dtype.iinfo(input.dtype).min


def _high(input):
    return math.inf if input.dtype.is_floating_point else _dtype.iinfo(input.dtype).max


def _cast(input, dtype):
    return input if dtype is None else input.to(dtype)


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The sum of the unmasked elements."""
    return _where(input, mask, 0).sum(_dims(dim, input), keepdim=keepdim, dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The product of the unmasked elements (1 for none)."""
    x = _cast(_where(input, mask, 1), dtype)
    return x.prod() if dim is None else x.prod(dim, keepdim=keepdim)


def cumsum(input, dim, *, dtype=None, mask=None):
    """Running sums where masked-out elements count as 0."""
    return _where(input, mask, 0).cumsum(dim, dtype=dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    """Running products where masked-out elements count as 1."""
    return _where(input, mask, 1).cumprod(dim, dtype=dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The largest unmasked element (-inf for none)."""
    return _cast(_where(input, mask, _low(input)), dtype).amax(_dims(dim, input), keepdim)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The smallest unmasked element (inf for none)."""
    return _cast(_where(input, mask, _high(input)), dtype).amin(_dims(dim, input), keepdim)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The index of the largest unmasked element (in the input's dtype, as PyTorch's)."""
    x = _cast(_where(input, mask, _low(input)), dtype)
    return x.argmax(dim, keepdim).to(x.dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The index of the smallest unmasked element (in the input's dtype)."""
    x = _cast(_where(input, mask, _high(input)), dtype)
    return x.argmin(dim, keepdim).to(x.dtype)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The mean of the unmasked elements (NaN for none)."""
    x = _cast(input, dtype)
    return sum(x, dim, keepdim=keepdim, mask=mask) / _count(x, mask, dim, keepdim)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """The median of the unmasked elements along `dim` (NaN for none)."""
    x = _cast(input, dtype)
    if not x.dtype.is_floating_point:
        x = x.to(_dtype.get_default_dtype())
    return _where(x, mask, math.nan).nanmedian(dim, keepdim=keepdim).values


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """log(sum(exp(x))) over the unmasked elements (-inf for none)."""
    return _cast(_where(input, mask, -math.inf), dtype).logsumexp(_dims(dim, input), keepdim)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """log(exp(input) + exp(other)) with masked-out elements as exp(-inf) = 0."""
    from .ops.pointwise_math import logaddexp as _logaddexp
    return _logaddexp(_cast(_where(input, input_mask, -math.inf), dtype),
                      _cast(_where(other, other_mask, -math.inf), dtype))


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The vector `ord`-norm of the unmasked elements."""
    from .ops.reduction_stats import vector_norm
    fill = math.inf if ord == -math.inf else 0
    return vector_norm(_where(input, mask, fill), ord, dim, keepdim, dtype=dtype)


def _var(input, dim, unbiased, keepdim, dtype, mask):
    x = _cast(input, dtype)
    n = _count(x, mask, dim, True)
    mu = sum(x, dim, keepdim=True, mask=mask) / n
    dev = _where(x - mu, mask, 0)
    denom = n - (1 if unbiased else 0)
    out = (dev * dev).sum(_dims(dim, x), keepdim=True) / denom
    from .ops.pointwise_select import where
    out = where(denom > 0, out, math.nan)
    return out if keepdim else out.squeeze(_dims(dim, x))


def var(input, dim=None, unbiased=None, *, keepdim=False, dtype=None, mask=None):
    """The variance of the unmasked elements (NaN where too few)."""
    return _var(input, dim, True if unbiased is None else unbiased, keepdim, dtype, mask)


def std(input, dim=None, unbiased=None, *, keepdim=False, dtype=None, mask=None):
    """The standard deviation of the unmasked elements."""
    return var(input, dim, unbiased, keepdim=keepdim, dtype=dtype, mask=mask).sqrt()


def softmax(input, dim, *, dtype=None, mask=None):
    """Softmax over the unmasked elements (0 at masked ones; NaN rows where all are)."""
    return _cast(_where(input, mask, -math.inf), dtype).softmax(dim)


def log_softmax(input, dim, *, dtype=None, mask=None):
    """log_softmax over the unmasked elements (-inf at masked ones)."""
    return _cast(_where(input, mask, -math.inf), dtype).log_softmax(dim)


def softmin(input, dim, *, dtype=None, mask=None):
    """softmax(-input) over the unmasked elements."""
    return softmax(-input, dim, dtype=dtype, mask=mask)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """The unmasked elements divided by their `ord`-norm along `dim` (0 at masked ones)."""
    x = _cast(_where(input, mask, 0), dtype)
    n = norm(x, ord, dim, keepdim=True)
    return x / n.clamp(min=eps)
