"""Arithmetic beyond + - * /: rounded division, remainders, powers, abs, rounding, sign.

Integer and floating inputs use different scalar bodies where the semantics
differ (floor division, remainder, fmod, pow); each op picks its kernel from
the promoted dtype. Integer division by zero is a RuntimeError, as in PyTorch.
"""
import builtins

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from ..autograd import function as _function
from ..autograd.function import unrecorded
from ._elementwise import (Binary, Elementwise, NUMBER, check_number, run_elementwise, promote,
                           shape_of, unary_api, native_out_of)
from ._common import broadcast_shapes

__all__ = ["floor_divide", "remainder", "fmod", "pow", "float_power", "abs", "absolute",
           "reciprocal", "square", "sign", "sgn", "floor", "ceil", "round", "trunc", "fix",
           "frac"]


def _check_int_divisor(a, b, dtype, kernel):
    """PyTorch raises for integer division by zero instead of returning garbage (a zero
    divisor of an empty result divides nothing), and has no bool kernel (`kernel`: the
    name its error gives)."""
    if dtype.is_floating_point:
        return
    if dtype is _dtype.bool:
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    if 0 in broadcast_shapes(shape_of(a), shape_of(b)):
        return
    zero = (b._host() == 0).any() if isinstance(b, Tensor) else b == 0
    if zero:
        raise RuntimeError("ZeroDivisionError")


def _int_or_float(kernel_float, kernel_int, dtype):
    return kernel_float if dtype.is_floating_point else kernel_int


# ---- rounded division, remainders -------------------------------------------------

class DivRounded(Binary):
    """div(a, b, rounding_mode='trunc'|'floor'): piecewise constant, so zero gradient."""
    save = ""

    @classmethod
    def compute(cls, a, b, mode, out=None):
        d = promote(a, b)
        _check_int_divisor(a, b, d, f"div_{mode}_cpu")
        k = "div_" + mode + ("" if d.is_floating_point else "_int")
        return run_elementwise(k, (a, b), d, out=out)

    @staticmethod
    def grad(ctx, g, a, b, out, mode):
        return g * 0, g * 0


def _mode(rounding_mode):
    if rounding_mode not in ("trunc", "floor"):
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                         f"but found '{rounding_mode}'")
    return rounding_mode


def div_rounded(input, other, rounding_mode, out=None):
    """div with rounding_mode 'trunc' (toward zero) or 'floor' (toward -inf)."""
    return DivRounded.call((input, other, _mode(rounding_mode)), out)


def div_rounded_(self, other, rounding_mode):
    check_number("div", other)
    return DivRounded.inplace(self, (self, other, _mode(rounding_mode)))


def floor_divide(input, other, *, out=None):
    """input // other, rounding toward -inf (Python's semantics).

    Example:
        >>> nbtorch.floor_divide(nbtorch.tensor([-7, 7]), 2)
        tensor([-4,  3])
    """
    check_number("floor_divide", other)
    return DivRounded.call((input, other, "floor"), out)


class Remainder(Binary):
    """Python's modulo: the result has the divisor's sign."""
    kernel = "remainder"

    @classmethod
    def compute(cls, a, b, out=None):
        d = promote(a, b)
        _check_int_divisor(a, b, d, "remainder_cpu")
        return run_elementwise(_int_or_float("remainder", "remainder_int", d), (a, b), d, out=out)

    @staticmethod
    def grad(ctx, g, a, b, out):
        need = ctx.needs_input_grad
        return g, (-g * DivRounded.apply(a, b, "floor") if need[1] else None)


class Fmod(Binary):
    """C's fmod: the result has the dividend's sign."""
    kernel = "fmod"

    @classmethod
    def compute(cls, a, b, out=None):
        d = promote(a, b)
        _check_int_divisor(a, b, d, "fmod_cpu")
        return run_elementwise(_int_or_float("fmod", "fmod_int", d), (a, b), d, out=out)

    @staticmethod
    def grad(ctx, g, a, b, out):
        need = ctx.needs_input_grad
        return g, (-g * DivRounded.apply(a, b, "trunc") if need[1] else None)


@native_out_of(Remainder)
def remainder(input, other, *, out=None):
    """Python-style modulus: input - floor(input / other) * other.

    Example:
        >>> nbtorch.remainder(nbtorch.tensor([-3., 3.]), 2)
        tensor([1., 1.])
    """
    check_number("remainder", other)
    return Remainder.call((input, other), out)


@native_out_of(Fmod)
def fmod(input, other, *, out=None):
    """C-style modulus (the sign of input).

    Example:
        >>> nbtorch.fmod(nbtorch.tensor([-3., 3.]), 2)
        tensor([-1.,  1.])
    """
    check_number("fmod", other)
    return Fmod.call((input, other), out)


# ---- powers -------------------------------------------------------------------------

# Float exponents PyTorch computes without pow() (its pow_tensor_scalar kernel): a copy,
# a square, a square root, a reciprocal square root, a reciprocal. powf per element was
# 14x slower than these at 128K float32 (Y.pow(0.5) 364 us, sqrt 27); the gradient of
# x ** 2 and hand-written norms ((v + eps) ** -0.5) hit them.
_SPECIAL_EXPONENTS = {1: ("mul", 1.0), 2: ("square",), 0.5: ("sqrt",), -0.5: ("rsqrt",),
                      -1: ("reciprocal",)}


class Pow(Binary):
    kernel, save = "pow_", "a b out"

    @classmethod
    def compute(cls, a, b, out=None):
        d = promote(a, b)
        if not (d.is_floating_point or d.is_complex):
            if isinstance(b, NUMBER) and b < 0:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            return run_elementwise("pow_int", (a, b), d, out=out)
        if isinstance(b, NUMBER) and isinstance(a, Tensor) and d.is_floating_point:
            special = _SPECIAL_EXPONENTS.get(b)
            if special is not None:
                return run_elementwise(special[0], (a,) + special[1:], d, out=out)
        return run_elementwise("pow_", (a, b), d, out=out)

    @staticmethod
    def grad(ctx, g, a, b, out):
        from .pointwise_select import where
        need = ctx.needs_input_grad
        ga = gb = None
        if need[0]:
            if isinstance(b, NUMBER):
                # b * a ** (b - 1); for b == 2 that is 2 * a (a ** 1 is a copy), the same bits
                ga = g * 0 if b == 0 else g * (a * b) if b == 2 else g * (b * a ** (b - 1))
            else:
                ga = g * where(b == 0, 0.0, b * a ** (b - 1))
        if need[1]:
            from .pointwise_math import log
            la = log(a) if isinstance(a, Tensor) else float(np.log(a)) if a > 0 else (
                -np.inf if a == 0 else np.nan)
            gb = g * (out * la)
            if isinstance(a, Tensor):
                gb = where((a == 0) & (b >= 0), 0.0, gb)
            elif a == 0:
                gb = where(b >= 0, 0.0, gb)
        return ga, gb


@native_out_of(Pow)
def pow(input, exponent, *, out=None):
    """input ** exponent; either may be a scalar (a scalar base gives `scalar ** tensor`).

    Integer tensors raised to negative integer scalars are refused, as in PyTorch.

    Example:
        >>> nbtorch.pow(nbtorch.tensor([1., 2., 3.]), 2)
        tensor([1., 4., 9.])
    """
    check_number("pow", exponent, "exponent")
    if out is None and (exponent.__class__ is int or exponent.__class__ is float):
        res = _special_power(input, exponent)
        if res is not None:
            return res
    return Pow.call((input, exponent), out)


def float_power(input, exponent, *, out=None):
    """input ** exponent computed in float64."""
    a = input.double() if isinstance(input, Tensor) else float(input)
    b = exponent.double() if isinstance(exponent, Tensor) else float(exponent)
    return Pow.call((a, b), out)


def _float_power_(self, exponent):
    if self.dtype is not _dtype.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{_dtype.type_name(self.dtype)} but the operation's result "
                           "requires dtype Double")
    b = exponent.double() if isinstance(exponent, Tensor) else float(exponent)
    return Pow.inplace(self, (self, b))


def _rpow(self, other):
    if isinstance(other, NUMBER):
        return Pow.apply(other, self)
    return NotImplemented


def _pow_op(self, other):
    if other.__class__ is int or other.__class__ is float:
        out = _special_power(self, other)
        if out is not None:
            return out
    if isinstance(other, (Tensor,) + NUMBER):
        return Pow.apply(self, other)
    return NotImplemented


def _special_power(x, b):
    """x ** b for a float tensor and one of `_SPECIAL_EXPONENTS` with nothing to record or
    watch: Pow.compute's kernel call without Function.apply (8x16 x ** 2 6.9 -> ~3 us);
    None otherwise."""
    special = _SPECIAL_EXPONENTS.get(b)
    if (special is None or x.__class__ is not Tensor or not x.dtype.is_floating_point
            or _function.TRACE_HOOK[0] is not None or not unrecorded(x)):
        return None
    return run_elementwise(special[0], (x,) + special[1:], x.dtype)


# ---- abs, reciprocal, square -------------------------------------------------------

class Abs(Elementwise):
    kernel = "abs_"
    _plain_compute = True       # on floats, compute is the base rule

    @classmethod
    def compute(cls, x, *params, out=None):
        if x.__class__ is Tensor and x.dtype is _dtype.bool:
            raise NotImplementedError('"abs_cpu" not implemented for \'Bool\'')
        return super().compute(x, *params, out=out)

    @staticmethod
    def grad(g, x, out):
        return g * sign(x)


class Reciprocal(Elementwise):
    kernel, result, save = "reciprocal", "float", "out"

    @staticmethod
    def grad(g, x, out):
        return -g * (out * out)            # PyTorch: -grad * (result * result)


class Square(Elementwise):
    kernel = "square"
    _float_result_is_input = True   # a float x squares to its dtype: the small path applies

    @classmethod
    def result_dtype(cls, x):
        return _dtype.int64 if x.dtype is _dtype.bool else x.dtype

    @staticmethod
    def grad(g, x, out):
        return g * (2 * x)


abs = unary_api(Abs, "abs", "|input|, elementwise (gradient 0 at 0, as in PyTorch).")


def _complex_aware_abs(real_abs, real_method):
    """abs of a complex tensor is real (its gradient g * sgn(z)): ops/complex.py."""
    def abs(input, *, out=None):
        if input.dtype.is_complex:
            from .complex import ComplexAbs
            r = ComplexAbs.apply(input)
            return r if out is None else out.copy_(r)
        return real_abs(input, out=out)

    def method(self):
        if self.dtype.is_complex:
            from .complex import ComplexAbs
            return ComplexAbs.apply(self)
        return real_method(self)
    abs.__doc__ = real_abs.__doc__
    return abs, method


abs, Tensor.abs = _complex_aware_abs(abs, Tensor.abs)
_real_abs_ = Tensor.abs_


def _abs_(self):
    if self.dtype.is_complex:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return _real_abs_(self)


Tensor.abs_ = _abs_
absolute = abs
Tensor.absolute, Tensor.absolute_ = Tensor.abs, Tensor.abs_
Tensor.__abs__ = Tensor.abs
reciprocal = unary_api(Reciprocal, "reciprocal", "1 / input (integers give floats).")
square = unary_api(Square, "square", "input * input.")


# ---- sign and rounding (piecewise constant: zero gradient) ---------------------------

class _Step(Elementwise):
    save = ""

    @staticmethod
    def grad(g, x, out):
        return g * 0


class Sign(_Step):
    kernel = "sign"

    @classmethod
    def compute(cls, x, out=None):
        if x.dtype.is_complex:
            raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support "
                                      "complex numbers. Please use torch.sgn instead.")
        if x.dtype is _dtype.bool:
            return run_elementwise("abs_", (x,), x.dtype, out=out)
        return run_elementwise("sign", (x,), x.dtype, out=out)


class _IntIdentity(_Step):
    """Rounding ops are the identity on integer tensors (a copy)."""

    @classmethod
    def compute(cls, x, *params, out=None):
        if x.dtype.is_complex:
            name = {"round_": "round", "round_decimals": "round"}.get(cls.kernel, cls.kernel)
            raise NotImplementedError(f"{name} is not supported for complex inputs")
        if not x.dtype.is_floating_point:
            if x.dtype.limited:         # uint16-64: a copy (no add kernel for them)
                from .copy import clone
                return clone(x) if out is None else out.copy_(x)
            return run_elementwise("add", (x, 0), x.dtype, out=out)
        return run_elementwise(cls.kernel, (x,) + params, x.dtype, out=out)


class Floor(_IntIdentity):
    kernel = "floor"


class Ceil(_IntIdentity):
    kernel = "ceil"


class Trunc(_IntIdentity):
    kernel = "trunc"


class Round(_IntIdentity):
    kernel = "round_"


class RoundDecimals(_IntIdentity):
    kernel = "round_decimals"


class Frac(Elementwise):
    kernel, save = "frac", ""
    _float_result_is_input = True

    @classmethod
    def result_dtype(cls, x):
        if not x.dtype.is_floating_point:
            raise NotImplementedError(f'"frac_cpu" not implemented for \'{x.dtype.name}\'')
        return x.dtype

    @staticmethod
    def grad(g, x, out):
        return g


sign = unary_api(Sign, "sign", "-1, 0 or 1 by the sign of input (0 for NaN, as in PyTorch).")
sgn = sign
Tensor.sgn, Tensor.sgn_ = Tensor.sign, Tensor.sign_
floor = unary_api(Floor, "floor", "Largest integer <= input.")
ceil = unary_api(Ceil, "ceil", "Smallest integer >= input.")
trunc = unary_api(Trunc, "trunc", "input rounded toward zero.")
fix = trunc
Tensor.fix, Tensor.fix_ = Tensor.trunc, Tensor.trunc_
frac = unary_api(Frac, "frac", "input - trunc(input).")


def _round_args(decimals):
    if decimals == 0:
        return Round, ()
    scale = 10.0 ** builtins.abs(decimals)
    return RoundDecimals, (scale if decimals > 0 else -scale,)


def round(input, *, decimals=0, out=None):
    """Round half to even, optionally to `decimals` digits (negative: tens, hundreds...).

    Example:
        >>> nbtorch.round(nbtorch.tensor([0.5, 1.5, 1.2345]), decimals=0)
        tensor([0., 2., 1.])
    """
    cls, params = _round_args(decimals)
    return cls.call((input,) + params, out)


def _round_method(self, decimals=0):
    cls, params = _round_args(decimals)
    return cls.apply(self, *params)


def _round_method_(self, decimals=0):
    cls, params = _round_args(decimals)
    return cls.inplace(self, (self,) + params)


Tensor.round, Tensor.round_ = _round_method, _round_method_


# ---- Tensor methods and operators --------------------------------------------------

def _binary_methods(name, fn, cls):
    setattr(Tensor, name, fn)

    def method_(self, other):
        check_number(name, other)
        return cls.inplace(self, (self, other))
    method_.__name__ = name + "_"
    setattr(Tensor, name + "_", method_)


_binary_methods("remainder", remainder, Remainder)
_binary_methods("fmod", fmod, Fmod)
_binary_methods("pow", pow, Pow)
Tensor.float_power, Tensor.float_power_ = float_power, _float_power_
Tensor.floor_divide = floor_divide
Tensor.floor_divide_ = lambda self, other: div_rounded_(self, other, "floor")
Tensor.__pow__ = _pow_op
Tensor.__rpow__ = _rpow
Tensor.__ipow__ = Tensor.pow_
Tensor.__floordiv__ = lambda self, other: DivRounded.apply(self, other, "floor") \
    if isinstance(other, (Tensor,) + NUMBER) else NotImplemented
Tensor.__rfloordiv__ = lambda self, other: DivRounded.apply(other, self, "floor") \
    if isinstance(other, NUMBER) else NotImplemented
Tensor.__ifloordiv__ = Tensor.floor_divide_
Tensor.__mod__ = lambda self, other: Remainder.apply(self, other) \
    if isinstance(other, (Tensor,) + NUMBER) else NotImplemented
Tensor.__rmod__ = lambda self, other: Remainder.apply(other, self) \
    if isinstance(other, NUMBER) else NotImplemented
Tensor.__imod__ = Tensor.remainder_
