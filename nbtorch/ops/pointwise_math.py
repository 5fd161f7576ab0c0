"""Elementwise math: exponentials and logarithms, roots, trigonometric and hyperbolic
functions, sigmoid/logit, erf, xlogy.

Integer and bool inputs compute in the default float dtype (PyTorch's rule for
these ops). Each backward is written with nbtorch ops next to its forward;
`tanh` and `sigmoid` also name a fused gradient kernel that runs when no
double-backward graph is being recorded.
"""
import math

from .._tensor import Tensor
from ._elementwise import Binary, Elementwise, check_number, unary_api, native_out_of

__all__ = ["exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin",
           "cos", "tan", "asin", "acos", "atan", "arcsin", "arccos", "arctan", "atan2",
           "arctan2", "sinh", "cosh", "tanh", "sigmoid", "logit", "erf", "erfc", "erfinv",
           "xlogy", "logaddexp", "hypot"]

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


class _FloatUnary(Elementwise):
    result = "float"


# ---- exponentials and logarithms ------------------------------------------------------

class Exp(_FloatUnary):
    kernel, save, grad_kernel = "exp", "out", "mul"

    @staticmethod
    def grad(g, x, out):
        return g * out


class Exp2(_FloatUnary):
    kernel, save = "exp2", "out"

    @staticmethod
    def grad(g, x, out):
        return g * (out * _LN2)


class Expm1(_FloatUnary):
    kernel, save = "expm1", "out"

    @staticmethod
    def grad(g, x, out):
        return g * (out + 1)


class Log(_FloatUnary):
    kernel = "log"

    @staticmethod
    def grad(g, x, out):
        return g / x


class Log2(_FloatUnary):
    kernel = "log2"

    @staticmethod
    def grad(g, x, out):
        return g / (x * _LN2)


class Log10(_FloatUnary):
    kernel = "log10"

    @staticmethod
    def grad(g, x, out):
        return g / (x * _LN10)


class Log1p(_FloatUnary):
    kernel = "log1p"
    _backward_name = "Log1PBackward0"       # PyTorch's spelling

    @staticmethod
    def grad(g, x, out):
        return g / (x + 1)


class Sqrt(_FloatUnary):
    kernel, save = "sqrt", "out"

    @staticmethod
    def grad(g, x, out):
        return g / (out * 2)          # inf at 0, as in PyTorch


class Rsqrt(_FloatUnary):
    kernel, save = "rsqrt", "out"

    @staticmethod
    def grad(g, x, out):
        return g * (out * out * out * -0.5)


exp = unary_api(Exp, "exp", "e ** input.")
exp2 = unary_api(Exp2, "exp2", "2 ** input.")
expm1 = unary_api(Expm1, "expm1", "exp(input) - 1, accurate near 0.")
log = unary_api(Log, "log", "Natural logarithm (-inf at 0, NaN below).")
log2 = unary_api(Log2, "log2", "Base-2 logarithm.")
log10 = unary_api(Log10, "log10", "Base-10 logarithm.")
log1p = unary_api(Log1p, "log1p", "log(1 + input), accurate near 0.")
sqrt = unary_api(Sqrt, "sqrt", "Square root (NaN below 0; gradient inf at 0).")
rsqrt = unary_api(Rsqrt, "rsqrt", "1 / sqrt(input).")


# ---- trigonometric and hyperbolic -----------------------------------------------------

class Sin(_FloatUnary):
    kernel = "sin"

    @staticmethod
    def grad(g, x, out):
        return g * cos(x)


class Cos(_FloatUnary):
    kernel = "cos"

    @staticmethod
    def grad(g, x, out):
        return g * -sin(x)


class Tan(_FloatUnary):
    kernel, save = "tan", "out"

    @staticmethod
    def grad(g, x, out):
        return g * (out * out + 1)


class Asin(_FloatUnary):
    kernel = "asin"

    @staticmethod
    def grad(g, x, out):
        return g * rsqrt(1 - x * x)


class Acos(_FloatUnary):
    kernel = "acos"

    @staticmethod
    def grad(g, x, out):
        return g * -rsqrt(1 - x * x)


class Atan(_FloatUnary):
    kernel = "atan"

    @staticmethod
    def grad(g, x, out):
        return g / (x * x + 1)


class Sinh(_FloatUnary):
    kernel = "sinh"

    @staticmethod
    def grad(g, x, out):
        return g * cosh(x)


class Cosh(_FloatUnary):
    kernel = "cosh"

    @staticmethod
    def grad(g, x, out):
        return g * sinh(x)


class Tanh(_FloatUnary):
    kernel, save, grad_kernel = "tanh", "out", "tanh_grad"

    @staticmethod
    def grad(g, x, out):
        return g * (1 - out * out)


class Atan2(Binary):
    kernel, result = "atan2", "float"

    @staticmethod
    def grad(ctx, g, a, b, out):
        """d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2), through a reciprocal that is
        0 at the origin (PyTorch's: gradients 0 and -0 there, not NaN)."""
        r = a * a + b * b
        recip = r.reciprocal().masked_fill(r == 0, 0.0)
        return g * b * recip, g * -a * recip


sin = unary_api(Sin, "sin", "Sine (radians).")
cos = unary_api(Cos, "cos", "Cosine (radians).")
tan = unary_api(Tan, "tan", "Tangent (radians).")
asin = arcsin = unary_api(Asin, "asin", "Inverse sine.")
acos = arccos = unary_api(Acos, "acos", "Inverse cosine.")
atan = arctan = unary_api(Atan, "atan", "Inverse tangent.")
sinh = unary_api(Sinh, "sinh", "Hyperbolic sine.")
cosh = unary_api(Cosh, "cosh", "Hyperbolic cosine.")
tanh = unary_api(Tanh, "tanh", "Hyperbolic tangent.")
for _n in ("asin", "acos", "atan"):
    setattr(Tensor, "arc" + _n[1:], getattr(Tensor, _n))
    setattr(Tensor, "arc" + _n[1:] + "_", getattr(Tensor, _n + "_"))


@native_out_of(Atan2)
def atan2(input, other, *, out=None):
    """The angle of (other, input) in radians, quadrant-aware.

    Example:
        >>> nbtorch.atan2(nbtorch.tensor([1.]), nbtorch.tensor([-1.]))
        tensor([2.3562])
    """
    check_number("atan2", other)
    return Atan2.call((input, other), out)


arctan2 = atan2
Tensor.atan2 = Tensor.arctan2 = atan2
Tensor.atan2_ = Tensor.arctan2_ = lambda self, other: Atan2.inplace(self, (self, other))


# ---- sigmoid, logit, erf --------------------------------------------------------------

class Sigmoid(_FloatUnary):
    kernel, save, grad_kernel = "sigmoid", "out", "sigmoid_grad"

    @staticmethod
    def grad(g, x, out):
        return g * (out * (1 - out))


class Logit(_FloatUnary):
    kernel = "logit"

    @staticmethod
    def grad(g, x, out, eps):
        gx = g / (x * (1 - x))
        if eps < 0:
            return gx
        from .pointwise_select import where
        return where((x < eps) | (x > 1 - eps), 0.0, gx)


class Erf(_FloatUnary):
    kernel = "erf"

    @staticmethod
    def grad(g, x, out):
        return g * (exp(-(x * x)) * _TWO_OVER_SQRT_PI)


class Erfc(_FloatUnary):
    kernel = "erfc"

    @staticmethod
    def grad(g, x, out):
        return g * (exp(-(x * x)) * -_TWO_OVER_SQRT_PI)


class Erfinv(_FloatUnary):
    kernel, save = "erfinv", "out"

    @staticmethod
    def grad(g, x, out):
        return g * (exp(out * out) * (math.sqrt(math.pi) / 2))


sigmoid = unary_api(Sigmoid, "sigmoid", "1 / (1 + exp(-input)), computed without overflow.")
erfinv = unary_api(Erfinv, "erfinv", "The inverse error function (+-inf at +-1).")
erf = unary_api(Erf, "erf", "The error function.")
erfc = unary_api(Erfc, "erfc", "1 - erf(input), accurate for large input.")


def logit(input, eps=None, *, out=None):
    """log(p / (1 - p)); with `eps`, p is first clamped to [eps, 1 - eps].

    Example:
        >>> nbtorch.logit(nbtorch.tensor([0.5]))
        tensor([0.])
    """
    return Logit.call((input, -1.0 if eps is None else float(eps)), out)


Tensor.logit = lambda self, eps=None: Logit.apply(self, -1.0 if eps is None else float(eps))
Tensor.logit_ = lambda self, eps=None: Logit.inplace(
    self, (self, -1.0 if eps is None else float(eps)))


class Xlogy(Binary):
    kernel, result = "xlogy", "float"

    @staticmethod
    def grad(ctx, g, x, y, out):
        need = ctx.needs_input_grad
        gx = gy = None
        if need[0]:          # PyTorch: xlogy(g, y), zeroed where x == 0 and y <= 0
            from .pointwise_select import where
            gx = where((x == 0) & (y <= 0), 0.0, xlogy(g, y))
        if need[1]:
            gy = g * x / y
        return gx, gy


@native_out_of(Xlogy)
def xlogy(input, other, *, out=None):
    """input * log(other), defined as 0 where input == 0 (unless other is NaN).

    Example:
        >>> nbtorch.xlogy(nbtorch.tensor([0., 2.]), nbtorch.tensor([0., 1.]))
        tensor([0., 0.])
    """
    check_number("xlogy", other)
    return Xlogy.call((input, other), out)


Tensor.xlogy = xlogy
Tensor.xlogy_ = lambda self, other: Xlogy.inplace(self, (self, other))


class Logaddexp(Binary):
    kernel, result, save = "logaddexp", "float_only", "a b out"

    @staticmethod
    def grad(ctx, g, a, b, out):
        need = ctx.needs_input_grad
        return (g * exp(a - out) if need[0] else None), (g * exp(b - out) if need[1] else None)


class Hypot(Binary):
    kernel, result, save = "hypot", "float_only", "a b out"

    @staticmethod
    def grad(ctx, g, a, b, out):
        need = ctx.needs_input_grad
        return (g * a / out if need[0] else None), (g * b / out if need[1] else None)


@native_out_of(Logaddexp)
def logaddexp(input, other, *, out=None):
    """log(exp(input) + exp(other)), without overflow."""
    check_number("logaddexp", other)
    return Logaddexp.call((input, other), out)


@native_out_of(Hypot)
def hypot(input, other, *, out=None):
    """sqrt(input**2 + other**2), without overflow."""
    check_number("hypot", other)
    return Hypot.call((input, other), out)


Tensor.logaddexp, Tensor.hypot = logaddexp, hypot
Tensor.hypot_ = lambda self, other: Hypot.inplace(self, (self, other))
