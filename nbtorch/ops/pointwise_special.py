"""The gamma-function family: lgamma, digamma, polygamma, and the regularised
incomplete gammas igamma/igammac (torch.lgamma & co).

A minimal set, added for `nbtorch.distributions` (Gamma, Beta, Dirichlet,
StudentT... log-densities and entropies). Bodies in `kernels/scalar.py` compute
in float64 and round once; each backward is the next function of the family,
so gradients of any order exist: lgamma' = digamma, digamma' = polygamma(1, .),
polygamma(n, .)' = polygamma(n + 1, .). igamma and igammac are differentiable in
their second argument only, as in PyTorch.
"""

from .._tensor import Tensor
from ._elementwise import Binary, Elementwise, check_number, unary_api

__all__ = ["lgamma", "digamma", "polygamma", "igamma", "igammac"]


class Lgamma(Elementwise):
    kernel, result = "lgamma", "float"

    @staticmethod
    def grad(g, x, out):
        return g * digamma(x)


class Digamma(Elementwise):
    kernel, result = "digamma", "float"

    @staticmethod
    def grad(g, x, out):
        return g * polygamma(1, x)


class Polygamma(Elementwise):
    kernel, result = "polygamma", "float"

    @staticmethod
    def grad(g, x, out, n):
        return g * Polygamma.apply(x, n + 1.0)


lgamma = unary_api(Lgamma, "lgamma", "log|Gamma(input)| (+inf at 0 and the negative "
                   "integers).")
digamma = unary_api(Digamma, "digamma", "psi(input), the derivative of lgamma (-inf at 0, "
                    "NaN at the negative integers).")


def _order(n):
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return float(n)


def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma (n = 0 is digamma itself).

    Example:
        >>> nbtorch.polygamma(1, nbtorch.tensor([1.0]))       # pi**2 / 6
        tensor([1.6449])
    """
    return Polygamma.call((input, _order(n)), out)


Tensor.polygamma = lambda self, n: Polygamma.apply(self, _order(n))
Tensor.polygamma_ = lambda self, n: Polygamma.inplace(self, (self, _order(n)))


class _Igamma(Binary):
    result = "float_only"
    sign = 1.0

    @classmethod
    def grad(cls, ctx, g, a, x, out):
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{cls.kernel}: input' is not "
                                      "implemented.")
        from .pointwise_math import exp, xlogy
        density = exp(xlogy(a - 1, x) - x - lgamma(a))      # d P(a, x) / dx
        return None, g * density * cls.sign


class Igamma(_Igamma):
    kernel = "igamma"


class Igammac(_Igamma):
    kernel, sign = "igammac", -1.0


def igamma(input, other, *, out=None):
    """The regularised lower incomplete gamma P(input, other) (torch.special.gammainc).

    Example:
        >>> nbtorch.igamma(nbtorch.tensor([1.0]), nbtorch.tensor([1.0]))   # 1 - 1/e
        tensor([0.6321])
    """
    check_number("igamma", other)
    return Igamma.call((input, other), out)


def igammac(input, other, *, out=None):
    """The regularised upper incomplete gamma Q = 1 - P (torch.special.gammaincc)."""
    check_number("igammac", other)
    return Igammac.call((input, other), out)


Tensor.igamma = igamma
Tensor.igammac = igammac
