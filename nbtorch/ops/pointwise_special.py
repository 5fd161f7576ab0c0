"""Special functions with gradients: the gamma family (lgamma, digamma, polygamma, the
regularised incomplete gammas igamma/igammac, mvlgamma), and torch.special's erfcx, ndtr,
ndtri, log_ndtr, entr, xlog1py, zeta, i0/i0e/i1/i1e (`nbtorch.special` exports them).

Bodies in `kernels/scalar.py` and `kernels/scalar_special.py`/`scalar_bessel.py` compute
in float64 and round once. Backward formulas are PyTorch's, written with these ops, so
gradients of any order exist (lgamma' = digamma, digamma' = polygamma(1, .), ...). igamma,
igammac and zeta are differentiable in their second argument only, as in PyTorch.
"""

import math

from .. import _dtype
from .._tensor import Tensor
from ._elementwise import Binary, Elementwise, check_number, unary_api

__all__ = ["lgamma", "digamma", "polygamma", "igamma", "igammac", "i0", "i0_", "mvlgamma"]


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


# ---- torch.special's error-function family, entropy, zeta, I0/I1 ------------------------
# (bodies in kernels/scalar_special.py and scalar_bessel.py; exported by nbtorch.special)

_SQRT_2PI = 2.5066282746310002
_TWO_OVER_SQRT_PI = 1.1283791670955126


class _Float(Elementwise):
    result = "float"


class Erfcx(_Float):
    kernel, save = "erfcx", "x out"

    @staticmethod
    def grad(g, x, out):
        return g * (x * out * 2 - _TWO_OVER_SQRT_PI)


class Ndtr(_Float):
    kernel = "ndtr"

    @staticmethod
    def grad(g, x, out):
        from .pointwise_math import exp
        return g * (exp(x * x * -0.5) / _SQRT_2PI)


class Ndtri(_Float):
    kernel, save = "ndtri", "out"

    @staticmethod
    def grad(g, x, out):
        from .pointwise_math import exp
        return g * (exp(out * out * 0.5) * _SQRT_2PI)


class LogNdtr(_Float):
    kernel, save = "log_ndtr", "x out"

    @staticmethod
    def grad(g, x, out):
        from .pointwise_math import exp
        return g * (exp(-(out + x * x * 0.5)) / _SQRT_2PI)


class Entr(_Float):
    kernel = "entr"

    @staticmethod
    def grad(g, x, out):
        from .pointwise_math import log
        return g * -(log(x) + 1)


class I0(_Float):
    kernel = "i0"

    @staticmethod
    def grad(g, x, out):
        return g * i1(x)


class I0e(_Float):
    kernel, save = "i0e", "x out"

    @staticmethod
    def grad(g, x, out):
        return g * (i1e(x) - x.sign() * out)


class I1(_Float):
    kernel, save = "i1", "x out"

    @staticmethod
    def grad(g, x, out):
        from .pointwise_select import where
        return g * where(x == 0, 0.5, i0(x) - out / x)


class I1e(_Float):
    kernel, save = "i1e", "x out"

    @staticmethod
    def grad(g, x, out):
        from .pointwise_select import where
        return g * where(x == 0, 0.5, i0e(x) - out * (x.sign() + 1 / x))


erfcx = unary_api(Erfcx, "erfcx", "exp(x**2) erfc(x), the scaled complementary error "
                  "function (no overflow or underflow).", methods=False, inplace=False)
ndtr = unary_api(Ndtr, "ndtr", "The standard normal CDF (erfc(-x / sqrt 2) / 2).",
                 methods=False, inplace=False)
ndtri = unary_api(Ndtri, "ndtri", "The inverse of ndtr (-inf at 0, inf at 1, NaN outside).",
                  methods=False, inplace=False)
log_ndtr = unary_api(LogNdtr, "log_ndtr", "log(ndtr(x)), accurate far into both tails.",
                     methods=False, inplace=False)
entr = unary_api(Entr, "entr", "-x log x (0 at 0, -inf below).", methods=False,
                 inplace=False)
i0 = unary_api(I0, "i0", "The modified Bessel function of the first kind of order 0.")
i0e = unary_api(I0e, "i0e", "exp(-|x|) I0(x).", methods=False, inplace=False)
i1 = unary_api(I1, "i1", "The modified Bessel function of the first kind of order 1.",
               methods=False, inplace=False)
i1e = unary_api(I1e, "i1e", "exp(-|x|) I1(x).", methods=False, inplace=False)
i0_ = Tensor.i0_


class Xlog1py(Binary):
    kernel, result = "xlog1py", "float"

    @staticmethod
    def grad(ctx, g, x, y, out):
        from .pointwise_select import where
        need = ctx.needs_input_grad
        gx = where((x == 0) & (y <= -1), 0.0, xlog1py(g, y)) if need[0] else None
        return gx, (g * x / (y + 1) if need[1] else None)


def xlog1py(input, other, *, out=None):
    """input * log1p(other), 0 where input == 0 (unless other is NaN); either may be a number.

    Example:
        >>> nbtorch.special.xlog1py(nbtorch.tensor([0., 2.]), nbtorch.tensor([-1., 0.]))
        tensor([0., 0.])
    """
    check_number("xlog1py", other)
    check_number("xlog1py", input, "input")
    return Xlog1py.call((input, other), out)


class Zeta(Binary):
    kernel, result, save = "zeta", "float", "a b"

    @staticmethod
    def grad(ctx, g, x, q, out):
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("the derivative for 'zeta: self' is not implemented.")
        return None, g * -x * zeta(x + 1.0, q)


def zeta(input, other, *, out=None):
    """The Hurwitz zeta function sum_k (k + other)**-input (either may be a number).

    Example:
        >>> nbtorch.special.zeta(nbtorch.tensor([2.]), 1.)        # pi**2 / 6
        tensor([1.6449])
    """
    check_number("zeta", other)
    check_number("zeta", input, "input")
    return Zeta.call((input, other), out)


def mvlgamma(input, p, *, out=None):
    """The log of the multivariate gamma function of dimension p: sum_j lgamma(input - j/2)
    + p (p - 1) / 4 log(pi) (torch.mvlgamma, torch.special.multigammaln).

    Example:
        >>> nbtorch.mvlgamma(nbtorch.tensor([2.5]), 1)            # lgamma(2.5)
        tensor([0.2847])
    """
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"mvlgamma(): argument 'p' must be int, not {type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = input if input.dtype.is_floating_point else input.to(_dtype.get_default_dtype())
    total = lgamma(x)
    for j in range(1, p):
        total = total + lgamma(x - j / 2)
    total = total + p * (p - 1) / 4 * math.log(math.pi)
    if out is not None:
        out.copy_(total)
        return out
    return total


def _mvlgamma_(self, p):
    if not self.dtype.is_floating_point:
        from .pointwise_float import _cast_error
        _cast_error(self)
    return self.copy_(mvlgamma(self.clone(), p))


Tensor.mvlgamma, Tensor.mvlgamma_ = mvlgamma, _mvlgamma_
Tensor.igamma_ = lambda self, other: Igamma.inplace(self, (self, other))
Tensor.igammac_ = lambda self, other: Igammac.inplace(self, (self, other))
