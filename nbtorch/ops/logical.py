"""Logical and bitwise ops, float classification (isnan...), nan_to_num, isclose/equal.

Logical ops accept any dtype (nonzero is True) and return bool. Bitwise ops
take bool and integer tensors (the `&`, `|`, `^`, `~` operators). None of
these carry gradients except `nan_to_num`.
"""
import numpy as np

from .. import _dtype
from .._tensor import Tensor
from .._limited import no_kernel
from ._elementwise import (Binary, Elementwise, NUMBER, check_number, run_elementwise, type_name)
from ._inplace import written_back

__all__ = ["logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
           "bitwise_or", "bitwise_xor", "bitwise_not", "isnan", "isinf", "isfinite",
           "isposinf", "isneginf", "isreal", "nan_to_num", "isclose", "allclose", "equal"]


# ---- logical ----------------------------------------------------------------------------

class _Logical(Binary):
    result, save = "bool", ""


class LogicalAnd(_Logical):
    kernel = "logical_and"


class LogicalOr(_Logical):
    kernel = "logical_or"


class LogicalXor(_Logical):
    kernel = "logical_xor"


class LogicalNot(Elementwise):
    kernel, result, save = "logical_not", "bool", ""


def _logical_fn(cls, name):
    def fn(input, other, *, out=None):
        check_number(name, other)
        return cls.compute(input, other, out=out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name.split('_')[1].upper()} of the truth values; a bool tensor."
    setattr(Tensor, name, fn)

    setattr(Tensor, name + "_", written_back(fn))
    return fn


logical_and = _logical_fn(LogicalAnd, "logical_and")
logical_or = _logical_fn(LogicalOr, "logical_or")
logical_xor = _logical_fn(LogicalXor, "logical_xor")


def logical_not(input, *, out=None):
    """True where input is zero; a bool tensor."""
    if input.dtype.limited:
        no_kernel("logical_not_cpu", input.dtype)
    return LogicalNot.compute(input, out=out)


Tensor.logical_not = logical_not
Tensor.logical_not_ = lambda self: LogicalNot.inplace(self, (self,))


# ---- bitwise ----------------------------------------------------------------------------

class _Bitwise(Binary):
    save = ""

    @classmethod
    def result_dtype(cls, a, b):
        d = _dtype.result_type(a, b)
        if d.is_floating_point:
            raise NotImplementedError(f'"{cls.kernel}_cpu" not implemented for \'{type_name(d)}\'')
        return d


class BitwiseAnd(_Bitwise):
    kernel = "bitwise_and"


class BitwiseOr(_Bitwise):
    kernel = "bitwise_or"


class BitwiseXor(_Bitwise):
    kernel = "bitwise_xor"


class BitwiseNot(Elementwise):
    kernel, save = "bitwise_not", ""

    @classmethod
    def result_dtype(cls, x):
        if x.dtype.is_floating_point:
            raise NotImplementedError(f'"bitwise_not_cpu" not implemented for '
                               f'\'{type_name(x.dtype)}\'')
        return x.dtype

    @classmethod
    def compute(cls, x, out=None):
        d = cls.result_dtype(x)
        k = "logical_not" if d is _dtype.bool else "bitwise_not"
        return run_elementwise(k, (x,), d, out=out)


def _bitwise_fn(cls, name):
    def fn(input, other, *, out=None):
        check_number(name, other)
        return cls.compute(input, other, out=out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise bitwise {name.split('_')[1].upper()} of bool or integer tensors."
    setattr(Tensor, name, fn)

    def method_(self, other):
        check_number(name, other)
        return cls.inplace(self, (self, other))
    setattr(Tensor, name + "_", method_)

    def operator(self, other):
        if isinstance(other, (Tensor,) + NUMBER):
            return cls.compute(self, other)
        return NotImplemented
    return fn, operator, method_


bitwise_and, _and, _iand = _bitwise_fn(BitwiseAnd, "bitwise_and")
bitwise_or, _or, _ior = _bitwise_fn(BitwiseOr, "bitwise_or")
bitwise_xor, _xor, _ixor = _bitwise_fn(BitwiseXor, "bitwise_xor")
Tensor.__and__ = Tensor.__rand__ = _and
Tensor.__or__ = Tensor.__ror__ = _or
Tensor.__xor__ = Tensor.__rxor__ = _xor
Tensor.__iand__, Tensor.__ior__, Tensor.__ixor__ = _iand, _ior, _ixor


def bitwise_not(input, *, out=None):
    """~input: bitwise NOT of integers, logical NOT of bools."""
    return BitwiseNot.compute(input, out=out)


def _invert(self):
    """~x: bitwise_not of an integer or bool tensor (a TypeError for others, as PyTorch)."""
    if self.dtype.is_floating_point or self.dtype.is_complex:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return bitwise_not(self)


Tensor.bitwise_not = bitwise_not
Tensor.__invert__ = _invert
Tensor.bitwise_not_ = lambda self: BitwiseNot.inplace(self, (self,))


# ---- classification -----------------------------------------------------------------------

def _classify(kernel, int_value, doc):
    def fn(input):
        if not input.dtype.is_floating_point:
            from .creation import full
            return full(input.shape, int_value, dtype=_dtype.bool, device=input.device)
        return run_elementwise(kernel, (input,), input.dtype, _dtype.bool)
    fn.__name__ = fn.__qualname__ = kernel
    fn.__doc__ = doc
    setattr(Tensor, kernel, fn)
    return fn


isnan = _classify("isnan", False, "True where input is NaN.")
isinf = _classify("isinf", False, "True where input is +inf or -inf.")
isfinite = _classify("isfinite", True, "True where input is neither NaN nor infinite.")
isposinf = _classify("isposinf", False, "True where input is +inf.")
isneginf = _classify("isneginf", False, "True where input is -inf.")


def isreal(input):
    """True where the imaginary part is 0 (everywhere for real tensors)."""
    if input.dtype.is_complex:
        return input.imag == 0
    return isfinite(input) | ~isfinite(input)


Tensor.isreal = isreal


class NanToNum(Elementwise):
    kernel = "nan_to_num"

    @classmethod
    def compute(cls, x, nan, posinf, neginf, out=None):
        if not x.dtype.is_floating_point:
            return run_elementwise("add", (x, 0), x.dtype, out=out)
        d = x.dtype
        info = _dtype.finfo(d)
        posinf = info.max if posinf is None else posinf
        neginf = info.min if neginf is None else neginf
        return run_elementwise("nan_to_num", (x, nan, posinf, neginf), d, out=out)

    @staticmethod
    def grad(g, x, out, *params):
        from .pointwise_select import where
        return where(isfinite(x), g, 0.0)


def _replacements(op, nan, posinf, neginf):
    """(nan, posinf, neginf) as PyTorch's argument parser takes them: numbers or None
    (nan None means 0), a one-element tensor read as its number; anything else is a
    TypeError naming the argument."""
    values = []
    for name, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if isinstance(v, Tensor) and v.numel() == 1:
            v = v.item()
        if v is not None and not isinstance(v, NUMBER):
            raise TypeError(f"{op}(): argument '{name}' must be float, not "
                            f"{type(v).__name__}")
        values.append(v)
    if values[0] is None:
        values[0] = 0.0
    return values


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """Replace NaN by `nan` and +-inf by `posinf`/`neginf` (default: the dtype's extremes).

    Example:
        >>> nbtorch.nan_to_num(nbtorch.tensor([float('nan'), float('inf'), 1.]), posinf=9.)
        tensor([0., 9., 1.])
    """
    if input.dtype.is_complex and out is None:
        return _complex_nan_to_num(input, nan, posinf, neginf)
    if input.dtype.limited and out is None:
        if input.dtype in _dtype.UINTS:     # nothing to replace: a copy (no kernel compiled)
            from .copy import clone
            return clone(input)
        no_kernel("nan_to_num", input.dtype)    # float8: PyTorch has no kernel
    return NanToNum.call((input, *_replacements("nan_to_num", nan, posinf, neginf)), out)


def _complex_nan_to_num(x, nan, posinf, neginf):
    """A complex tensor's real and imaginary parts each replaced, as PyTorch's."""
    from .complex import complex as make_complex
    part = x.real.dtype
    reps = _replacements("nan_to_num", nan, posinf, neginf)
    return make_complex(NanToNum.apply(x.real.to(part), *reps),
                        NanToNum.apply(x.imag.to(part), *reps))


Tensor.nan_to_num = lambda self, nan=0.0, posinf=None, neginf=None: (
    nan_to_num(self, nan, posinf, neginf) if self.dtype.is_complex or self.dtype.limited else
    NanToNum.apply(self, *_replacements("nan_to_num", nan, posinf, neginf)))
Tensor.nan_to_num_ = lambda self, nan=0.0, posinf=None, neginf=None: NanToNum.inplace(
    self, (self, *_replacements("nan_to_num_", nan, posinf, neginf)))


# ---- closeness and equality ------------------------------------------------------------------

def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other|, elementwise; a bool tensor.

    Example:
        >>> nbtorch.isclose(nbtorch.tensor([1., 2.]), nbtorch.tensor([1. + 1e-9, 2.1]))
        tensor([ True, False])
    """
    if isinstance(other, Tensor) and input.dtype is not other.dtype:
        raise RuntimeError(f"{type_name(input.dtype)} did not match {type_name(other.dtype)}")
    d = _dtype.result_type(input, other)
    if not d.is_floating_point:
        return run_elementwise("eq", (input, other), d, _dtype.bool) if rtol == 0 and atol == 0 \
            else run_elementwise("isclose", (input, other, rtol, atol, False), _dtype.float64,
                           _dtype.bool)
    return run_elementwise("isclose", (input, other, rtol, atol, bool(equal_nan)), d, _dtype.bool)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True if `isclose` holds everywhere (a Python bool)."""
    return bool(np.all(isclose(input, other, rtol, atol, equal_nan)._host()))


def equal(input, other):
    """True if both tensors have the same shape and elements (a Python bool)."""
    if input.is_quantized:          # qparams and integers, as PyTorch's
        return input.equal(other)
    if input._shape != other._shape:
        return False
    d = _dtype.result_type(input, other)
    return bool(np.all(run_elementwise("eq", (input, other), d, _dtype.bool)._host()))


Tensor.isclose = isclose
Tensor.allclose = allclose
Tensor.equal = equal
