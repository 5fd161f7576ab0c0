"""`nbtorch.special`: PyTorch's torch.special namespace.

Most names are the ops nbtorch already has under other names (gammaln is lgamma, psi is
digamma, expit is sigmoid, gammainc is igamma...); the rest are the special functions of
`ops/pointwise_special.py` (with gradients: erfcx, ndtr, ndtri, log_ndtr, entr, xlog1py,
zeta, i0/i0e/i1/i1e) and `ops/pointwise_bessel.py` (no gradients, as in PyTorch: Bessel,
Airy, orthogonal polynomials). Every kernel computes in float64 and rounds once, so
float32 results are within an ulp of the exact values; float64 accuracy is stated in the
kernel modules (`kernels/scalar_special.py`, `scalar_bessel.py`).

Example:
    >>> import nbtorch
    >>> nbtorch.special.ndtr(nbtorch.tensor([0.0, 1.0]))
    tensor([0.5000, 0.8413])
"""
from .ops.pointwise_math import erf, erfc, erfinv, exp2, expm1, log1p, logit, xlogy
from .ops.pointwise_math import sigmoid as expit
from .ops.pointwise_float import sinc
from .ops.pointwise_more import round
from .ops.pointwise_special import (digamma, entr, erfcx, i0, i0e, i1, i1e, igamma, igammac,
                                    lgamma, log_ndtr, mvlgamma, ndtr, ndtri, polygamma,
                                    xlog1py, zeta)
from .ops.pointwise_bessel import *  # noqa: F401,F403
from .ops.pointwise_bessel import __all__ as _bessel_names
from .ops import softmax as _softmax
from .ops.reduction_stats import logsumexp

__all__ = ["airy_ai", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit",
           "expm1", "gammainc", "gammaincc", "gammaln", "i0", "i0e", "i1", "i1e", "log1p",
           "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy", "zeta"]
__all__ = sorted(set(__all__) | set(_bessel_names))

psi = digamma
gammaln = lgamma
gammainc = igamma
gammaincc = igammac


def multigammaln(input, p, *, out=None):
    """The log of the multivariate gamma function of dimension p (torch.mvlgamma)."""
    return mvlgamma(input, p, out=out)


def softmax(input, dim, *, dtype=None):
    """exp(input) / sum(exp(input)) along `dim` (computed in `dtype` when given)."""
    return _softmax.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """log(softmax(input)) along `dim`, without overflow."""
    return _softmax.log_softmax(input, dim, dtype=dtype)
