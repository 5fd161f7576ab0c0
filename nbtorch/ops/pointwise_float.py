"""More elementwise math: inverse hyperbolics, deg2rad/rad2deg, sinc, copysign, signbit,
nextafter, ldexp, frexp, heaviside, logaddexp2, gcd/lcm, bit shifts, positive.

Bodies in `kernels/scalar_math.py` (float32 inverse hyperbolics vectorise through
`kernels/f32math.py`). Dtype rules, argument types and errors follow PyTorch:
the float functions make integers float, nextafter/logaddexp2/frexp refuse
them, gcd/lcm/shifts take integers only, heaviside needs one dtype. Backward
formulas are PyTorch's (heaviside's is not implemented there either).
"""
import math

from .. import _dtype
from .._dtype import type_name
from .._tensor import Tensor
from ..autograd.function import Function
from ._elementwise import (Binary, Elementwise, NUMBER, check_number, run_elementwise, promote,
                           unary_api, native_out_of)
from ._return_types import _struct

__all__ = ["asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg",
           "sinc", "copysign", "signbit", "nextafter", "ldexp", "frexp", "heaviside",
           "logaddexp2", "gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift",
           "positive", "asinh_", "acosh_", "atanh_", "arcsinh_", "arccosh_", "arctanh_",
           "deg2rad_", "rad2deg_", "sinc_", "gcd_", "lcm_", "ldexp_"]


def _check_tensor(op, x, name="other", pos=2):
    """TypeError like PyTorch's for ops whose operand must be a Tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


# ---- inverse hyperbolics, sinc -------------------------------------------------------

class _FloatUnary(Elementwise):
    result = "float"


class Asinh(_FloatUnary):
    kernel = "asinh"

    @staticmethod
    def grad(g, x, out):
        from .pointwise_math import rsqrt
        return g * rsqrt(x * x + 1)


class Acosh(_FloatUnary):
    kernel = "acosh"

    @staticmethod
    def grad(g, x, out):
        from .pointwise_math import rsqrt
        return g * rsqrt(x * x - 1)


class Atanh(_FloatUnary):
    kernel = "atanh"

    @staticmethod
    def grad(g, x, out):
        return g / (1 - x * x)


class Sinc(_FloatUnary):
    kernel = "sinc"

    @staticmethod
    def grad(g, x, out):
        from .pointwise_math import cos, sin
        from .pointwise_select import where
        px = x * math.pi
        d = (px * cos(px) - sin(px)) / (px * x)
        return g * where(x == 0, 0.0, d)


asinh = arcsinh = unary_api(Asinh, "asinh", "Inverse hyperbolic sine.")
acosh = arccosh = unary_api(Acosh, "acosh", "Inverse hyperbolic cosine (NaN below 1).")
atanh = arctanh = unary_api(Atanh, "atanh", "Inverse hyperbolic tangent (+-inf at +-1, NaN "
                                            "beyond).")
sinc = unary_api(Sinc, "sinc", "sin(pi x) / (pi x), 1 at 0 (the normalised sinc).")
for _n in ("asinh", "acosh", "atanh"):
    setattr(Tensor, "arc" + _n[1:], getattr(Tensor, _n))
    setattr(Tensor, "arc" + _n[1:] + "_", getattr(Tensor, _n + "_"))
asinh_ = arcsinh_ = Tensor.asinh_
acosh_ = arccosh_ = Tensor.acosh_
atanh_ = arctanh_ = Tensor.atanh_
sinc_ = Tensor.sinc_


def _angle_fn(name, factor, doc):
    def fn(input, *, out=None):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        x = input if input.dtype.is_floating_point else input.to(_dtype.get_default_dtype())
        if out is not None:
            from .arithmetic import mul
            return mul(x, factor, out=out)
        return x * factor

    def method_(self):
        return self.mul_(factor) if self.dtype.is_floating_point else _cast_error(self)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    setattr(Tensor, name, lambda self: fn(self))
    setattr(Tensor, name + "_", method_)
    return fn, method_


def _cast_error(t):
    d = _dtype.get_default_dtype()
    raise RuntimeError(f"result type {type_name(d)} can't be cast to the desired output type "
                       f"{type_name(t.dtype)}")


deg2rad, deg2rad_ = _angle_fn("deg2rad", math.pi / 180, "Degrees to radians (input * pi/180).")
rad2deg, rad2deg_ = _angle_fn("rad2deg", 180 / math.pi, "Radians to degrees (input * 180/pi).")


def positive(input):
    """input itself (unary +); a bool tensor is refused, as in PyTorch."""
    if input.dtype is _dtype.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


Tensor.positive = positive


# ---- sign bits, neighbours, exponents ------------------------------------------------

class Copysign(Binary):
    kernel, result, save = "copysign", "float", "a out"

    @staticmethod
    def grad(ctx, g, a, b, out):
        from .pointwise_select import where
        ga = g * where(a == 0, 0.0, out / a) if ctx.needs_input_grad[0] else None
        return ga, (g * 0 if ctx.needs_input_grad[1] else None)


@native_out_of(Copysign)
def copysign(input, other, *, out=None):
    """|input| with the sign of `other` (a tensor or a number); integers give floats.

    Example:
        >>> nbtorch.copysign(nbtorch.tensor([1., -2.]), -0.0)
        tensor([-1., -2.])
    """
    check_number("copysign", other)
    return Copysign.call((input, other), out)


Tensor.copysign = copysign
Tensor.copysign_ = lambda self, other: Copysign.inplace(self, (self, other))


def signbit(input, *, out=None):
    """True where input's sign bit is set (-0.0 included; integers: input < 0)."""
    d = _dtype.uint8 if input.dtype is _dtype.bool else input.dtype
    return run_elementwise("signbit", (input,), d, _dtype.bool, out=out)


Tensor.signbit = signbit


class Nextafter(Binary):
    kernel, result, save = "nextafter", "float_only", ""

    @classmethod
    def result_dtype(cls, a, b):
        d = promote(a, b)
        if not d.is_floating_point:
            raise NotImplementedError(f'"nextafter_cpu" not implemented for '
                                      f"'{type_name(d)}'")
        return d

    @staticmethod
    def grad(ctx, g, a, b, out):
        return g, g * 0


@native_out_of(Nextafter)
def nextafter(input, other, *, out=None):
    """The next floating-point value after input towards other (other if equal)."""
    _check_tensor("nextafter", other)
    return Nextafter.call((input, other), out)


Tensor.nextafter = nextafter
Tensor.nextafter_ = lambda self, other: Nextafter.inplace(self, (self, other))


def ldexp(input, other, *, out=None):
    """input * 2**other (PyTorch's definition: a multiply by a power of two).

    Example:
        >>> nbtorch.ldexp(nbtorch.tensor([1.]), nbtorch.tensor([3]))
        tensor([8.])
    """
    _check_tensor("ldexp", other)
    from .arithmetic import mul
    return mul(input, 2.0 ** other, out=out)


def ldexp_(self, other):
    _check_tensor("ldexp_", other)
    return self.mul_(2.0 ** other)


Tensor.ldexp, Tensor.ldexp_ = ldexp, ldexp_

_Frexp = _struct("frexp", ("mantissa", "exponent"))


class Frexp(Function):
    """(mantissa, exponent) with input = mantissa * 2**exponent; d mantissa = g / 2**e."""

    @staticmethod
    def forward(ctx, x):
        m = run_elementwise("frexp_mantissa", (x,), x.dtype)
        e = run_elementwise("frexp_exponent", (x,), x.dtype, _dtype.int32)
        ctx.mark_non_differentiable(e)
        ctx.save_for_backward(e)
        return m, e

    @staticmethod
    def backward(ctx, gm, ge):
        e, = ctx.saved_tensors
        return gm / 2.0 ** e


def frexp(input, *, out=None):
    """(mantissa, exponent): input = mantissa * 2**exponent, |mantissa| in [0.5, 1), an
    int32 exponent (both 0 for 0; inf and NaN keep their mantissa with exponent 0).

    Example:
        >>> nbtorch.frexp(nbtorch.tensor([8.])).exponent
        tensor([4], dtype=torch.int32)
    """
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = Frexp.apply(input)
    if out is not None:
        out[0].copy_(m)
        out[1].copy_(e)
        return _Frexp(*out)
    return _Frexp(m, e)


Tensor.frexp = frexp


class Heaviside(Binary):
    kernel, save = "heaviside", ""

    @classmethod
    def result_dtype(cls, a, b):
        if a.dtype is not b.dtype:
            raise RuntimeError("heaviside is not yet implemented for tensors with different "
                               "dtypes.")
        return a.dtype

    @staticmethod
    def grad(ctx, g, a, b, out):
        raise RuntimeError("derivative for aten::heaviside is not implemented")


def heaviside(input, values, *, out=None):
    """0 where input < 0, 1 where input > 0, `values` where input == 0 (same dtypes).

    Example:
        >>> nbtorch.heaviside(nbtorch.tensor([-1., 0., 2.]), nbtorch.tensor(0.5))
        tensor([0.0000, 0.5000, 1.0000])
    """
    _check_tensor("heaviside", values, "values")
    return Heaviside.call((input, values), out)


Tensor.heaviside = heaviside
Tensor.heaviside_ = lambda self, values: Heaviside.inplace(self, (self, values))


class Logaddexp2(Binary):
    kernel, result, save = "logaddexp2", "float_only", "a b out"

    @classmethod
    def result_dtype(cls, a, b):
        d = promote(a, b)
        if not d.is_floating_point:
            raise NotImplementedError(f'"logaddexp2_cpu" not implemented for '
                                      f"'{type_name(d)}'")
        return d

    @staticmethod
    def grad(ctx, g, a, b, out):
        from .pointwise_math import exp2
        need = ctx.needs_input_grad
        return (g * exp2(a - out) if need[0] else None), (g * exp2(b - out) if need[1] else None)


@native_out_of(Logaddexp2)
def logaddexp2(input, other, *, out=None):
    """log2(2**input + 2**other), without overflow."""
    _check_tensor("logaddexp2", other)
    return Logaddexp2.call((input, other), out)


Tensor.logaddexp2 = logaddexp2


# ---- integers: gcd, lcm, shifts --------------------------------------------------------

class _IntBinary(Binary):
    save = ""

    @classmethod
    def result_dtype(cls, a, b, *params):
        d = promote(a, b)
        if d.is_floating_point or d is _dtype.bool:
            raise NotImplementedError(f'"{cls.cpu_name}" not implemented for '
                                      f"'{type_name(d)}'")
        return d

    @classmethod
    def grad(cls, ctx, g, a, b, out, *params):
        raise RuntimeError(f"derivative for aten::{cls.kernel} is not implemented")


class Gcd(_IntBinary):
    kernel, cpu_name = "gcd", "gcd_cpu"


class Lcm(_IntBinary):
    kernel, cpu_name = "lcm", "lcm_cpu"


def gcd(input, other, *, out=None):
    """Greatest common divisor of |input| and |other| (integers; gcd(0, 0) = 0)."""
    _check_tensor("gcd", other)
    return Gcd.call((input, other), out)


def lcm(input, other, *, out=None):
    """Least common multiple |input * other| / gcd (integers; 0 if either is 0)."""
    _check_tensor("lcm", other)
    return Lcm.call((input, other), out)


Tensor.gcd, Tensor.lcm = gcd, lcm
gcd_ = Tensor.gcd_ = lambda self, other: Gcd.inplace(self, (self, other))
lcm_ = Tensor.lcm_ = lambda self, other: Lcm.inplace(self, (self, other))


class _Shift(_IntBinary):
    @classmethod
    def compute(cls, a, b, out=None):
        d = cls.result_dtype(a, b)
        return run_elementwise(cls.kernel, (a, b, d.itemsize * 8), d, out=out)


class LeftShift(_Shift):
    kernel, cpu_name = "bitwise_left_shift", "lshift_cpu"


class RightShift(_Shift):
    kernel, cpu_name = "bitwise_right_shift", "rshift_cpu"


def _shift_fn(cls, name):
    def fn(input, other, *, out=None):
        if not isinstance(input, Tensor):
            check_number(name, input, "input")
            _check_tensor(name, other)
        check_number(name, other)
        return cls.call((input, other), out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"input {'<<' if cls is LeftShift else '>>'} other on integers, wrapping to "
                  "the dtype's width; shifts by a negative amount or by the width or more give "
                  "0 (left) or the sign fill (right), as in PyTorch.")

    def method_(self, other):
        check_number(name, other)
        return cls.inplace(self, (self, other))

    def operator(self, other):
        if isinstance(other, (Tensor,) + NUMBER):
            return cls.apply(self, other)
        return NotImplemented

    def reflected(self, other):
        if isinstance(other, NUMBER):
            return cls.apply(other, self)
        return NotImplemented
    setattr(Tensor, name, fn)
    setattr(Tensor, name + "_", method_)
    return fn, operator, reflected, method_


bitwise_left_shift, _lshift, _rlshift, _ilshift = _shift_fn(LeftShift, "bitwise_left_shift")
bitwise_right_shift, _rshift, _rrshift, _irshift = _shift_fn(RightShift, "bitwise_right_shift")
Tensor.__lshift__, Tensor.__rlshift__, Tensor.__ilshift__ = _lshift, _rlshift, _ilshift
Tensor.__rshift__, Tensor.__rrshift__, Tensor.__irshift__ = _rshift, _rrshift, _irshift
