"""Elementwise arithmetic and comparisons, and the home of every elementwise op.

Each op is an autograd Function (see `_elementwise.py`): the scalar kernel it
runs (a body in `kernels/scalar.py`, compiled for the CPU into a Numba ufunc
by `kernels/cpu/ufuncs.py`), its dtype rule, and its backward written with
nbtorch ops beside the forward. This module holds `add`/`sub`/`mul`/`div`/
`neg`, the comparisons and the Python operators; the other families live in
`pointwise_more.py` (division variants, powers, rounding, clamping),
`pointwise_math.py` (exp/log/trig/...), `pointwise_activation.py` and
`logical.py`, and are re-exported here, so ``from .ops.arithmetic import *``
brings every elementwise op.
"""
import numpy as np

from .. import _dtype
from .._conventions import native_out
from .._tensor import Tensor
from ._elementwise import (Binary, Elementwise, NUMBER, check_number, run_elementwise, promote,
                           tensor_method, tensor_operator)
from ._inplace import written_back

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
           "neg", "negative", "eq", "ne", "lt", "le", "gt", "ge", "greater", "less",
           "greater_equal", "less_equal", "not_equal", "rsub"]


# ---- add / sub / mul / div -------------------------------------------------------

def _scaled(op, a, b, alpha):
    """b * alpha for add/sub's `alpha` (PyTorch refuses a float alpha for integer inputs,
    and a bool alpha unless the result is bool)."""
    if alpha.__class__ is bool and _dtype.result_type(a, b) is not _dtype.bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if alpha == 1:
        return b
    if isinstance(alpha, float) and not _dtype.result_type(a, b).is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a "
                           "floating point number.")
    if isinstance(b, Tensor):
        d = _dtype.result_type(a, b)
        if b.dtype is not d:            # scaled in the result's dtype, as PyTorch (a
            b = b.to(d)                 # bfloat16 b times alpha was rounded to bfloat16)
    return b * alpha


class Add(Binary):
    kernel, save = "add", ""
    _plain_compute = True       # without alpha, compute is the base rule

    @classmethod
    def compute(cls, a, b, alpha=1, out=None):
        d = promote(a, b)
        if alpha.__class__ is not int or alpha != 1:    # the default alpha scales nothing
            b = _scaled("add", a, b, alpha)
        return run_elementwise("add", (a, b), d, out=out)

    @staticmethod
    def grad(ctx, g, a, b, out, alpha=1):
        return g, (g if alpha == 1 or not ctx.needs_input_grad[1] else g * alpha)


class Sub(Binary):
    kernel, save = "sub", ""
    _plain_compute = True       # without alpha, on floats, compute is the base rule

    @classmethod
    def compute(cls, a, b, alpha=1, out=None):
        d = promote(a, b)
        a_bool, b_bool = (isinstance(t, Tensor) and t.dtype is _dtype.bool for t in (a, b))
        if a_bool and b_bool:
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        if a_bool or b_bool:
            raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                               "supported. If you are trying to invert a mask, use the `~` or "
                               "`logical_not()` operator instead.")
        return run_elementwise("sub", (a, _scaled("sub", a, b, alpha)), d, out=out)

    @staticmethod
    def grad(ctx, g, a, b, out, alpha=1):
        if not ctx.needs_input_grad[1]:
            return g, None
        return g, (-g if alpha == 1 else g * -alpha)


class Mul(Binary):
    kernel = "mul"

    @classmethod
    def saves(cls, need_a, need_b):     # d(ab)/da = b, d(ab)/db = a
        return ("a" if need_b else "") + ("b" if need_a else "")

    @staticmethod
    def grad(ctx, g, a, b, out):
        need = ctx.needs_input_grad
        return (g * b if need[0] else None), (g * a if need[1] else None)


class Div(Binary):
    kernel, result = "div", "float"

    @classmethod
    def saves(cls, need_a, need_b):     # d(a/b)/da = 1/b, d(a/b)/db = -a/b^2
        return ("a" if need_b else "") + ("b" if need_a or need_b else "")

    @staticmethod
    def grad(ctx, g, a, b, out):
        need = ctx.needs_input_grad
        return (g / b if need[0] else None), (-g * ((a / b) / b) if need[1] else None)


@native_out
def add(input, other, *, alpha=1, out=None):
    """input + alpha * other, broadcast, with PyTorch's type promotion.

    Example:
        >>> nbtorch.add(nbtorch.tensor([1., 2.]), 1, alpha=2)
        tensor([3., 4.])
    """
    check_number("add", other)
    if alpha.__class__ is int and alpha == 1:       # as `input + other`: the fast paths
        return _add(input, other) if out is None else Add.call((input, other), out)
    return Add.call((input, other, alpha), out)


@native_out
def sub(input, other, *, alpha=1, out=None):
    """input - alpha * other (bool tensors are refused, as in PyTorch).

    Example:
        >>> nbtorch.sub(nbtorch.tensor([1., 2.]), 1)
        tensor([0., 1.])
    """
    check_number("sub", other)
    if alpha.__class__ is int and alpha == 1:
        return _sub(input, other) if out is None else Sub.call((input, other), out)
    return Sub.call((input, other, alpha), out)


def rsub(input, other, *, alpha=1):
    """other - alpha * input."""
    return Sub.apply(other, input * alpha if alpha != 1 else input, 1)


@native_out
def mul(input, other, *, out=None):
    """input * other, broadcast.

    Example:
        >>> nbtorch.mul(nbtorch.tensor([1., 2.]), 3)
        tensor([3., 6.])
    """
    check_number("mul", other)
    return _mul(input, other) if out is None else Mul.call((input, other), out)


@native_out
def div(input, other, *, rounding_mode=None, out=None):
    """input / other: true division, or rounded with rounding_mode 'trunc' or 'floor'.

    Integer inputs give a float result for true division and an integer one
    when rounded, as in PyTorch.

    Example:
        >>> nbtorch.div(nbtorch.tensor([-3, 7]), 2, rounding_mode="floor")
        tensor([-2,  3])
    """
    check_number("div", other)
    if rounding_mode is None:
        return _div(input, other) if out is None else Div.call((input, other), out)
    from . import pointwise_more
    return pointwise_more.div_rounded(input, other, rounding_mode, out=out)


subtract, multiply, divide, true_divide = sub, mul, div, div


# ---- neg -------------------------------------------------------------------------

class Neg(Elementwise):
    kernel, save = "neg", ""
    _float_result_is_input = True   # -x of a float x keeps its dtype: the small path applies

    @classmethod
    def result_dtype(cls, x):
        if x.dtype is _dtype.bool:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not "
                               "supported. If you are trying to invert a mask, use the `~` or "
                               "`logical_not()` operator instead.")
        return x.dtype

    @staticmethod
    def grad(g, x, out):
        return -g


def neg(input, *, out=None):
    """-input (refused for bool tensors: use `~` / `logical_not`)."""
    return Neg.call((input,), out)


negative = neg


# ---- comparisons (no gradient) -------------------------------------------------

class Compare(Binary):
    result, save = "bool", ""
    ordered = False         # lt, le, gt, ge: complex numbers have no order

    @classmethod
    def result_dtype(cls, a, b, *params):
        d = promote(a, b)
        if cls.ordered and d.is_complex:        # PyTorch's error, not the kernel's typing one
            device = (a if isinstance(a, Tensor) else b).device.type
            raise NotImplementedError(f'"{cls.kernel}_{device}" not implemented for '
                                      f"'{_dtype.type_name(d)}'")
        return _dtype.bool


_COMPARE = {}


def _compare(op, doc):
    cls = _COMPARE[op] = type(op.capitalize(), (Compare,),
                              {"kernel": op, "__module__": __name__,
                               "ordered": op not in ("eq", "ne")})

    def fn(input, other, *, out=None):
        check_number(op, other)
        return cls.compute(input, other, out=out)
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"input {doc} other, elementwise and broadcast: a bool tensor."
    return fn


eq = _compare("eq", "==")
ne = _compare("ne", "!=")
lt = _compare("lt", "<")
le = _compare("le", "<=")
gt = _compare("gt", ">")
ge = _compare("ge", ">=")
greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne


def add_raw_(dst, src):
    """dst += src without autograd (gradient accumulation); bumps dst's version."""
    run_elementwise("add", (dst, src), dst.dtype, out=dst)


# ---- Tensor methods, in-place forms and operators --------------------------------

def _method_inplace(cls, name):
    def method(self, other, *params, **kwargs):
        check_number(name, other)
        if kwargs:                      # alpha=...
            params = params + tuple(kwargs.values())
        return cls.inplace(self, (self, other) + params)
    method.__name__ = name + "_"
    return method


def _div_(self, other, *, rounding_mode=None):
    if rounding_mode is not None:
        from . import pointwise_more
        return pointwise_more.div_rounded_(self, other, rounding_mode)
    check_number("div", other)
    return Div.inplace(self, (self, other))


Tensor.add_ = _method_inplace(Add, "add")
Tensor.sub_ = Tensor.subtract_ = _method_inplace(Sub, "sub")
Tensor.mul_ = Tensor.multiply_ = _method_inplace(Mul, "mul")
Tensor.div_ = Tensor.divide_ = Tensor.true_divide_ = _div_
Tensor.neg_ = Tensor.negative_ = lambda self: Neg.inplace(self, (self,))
Tensor.__iadd__ = Tensor.add_
Tensor.__isub__ = Tensor.sub_
Tensor.__imul__ = Tensor.mul_
Tensor.__itruediv__ = Tensor.div_

for _name, _fn in (("add", add), ("sub", sub), ("mul", mul), ("div", div), ("rsub", rsub),
                   ("subtract", sub), ("multiply", mul), ("divide", div),
                   ("true_divide", div), ("neg", neg), ("negative", neg)):
    setattr(Tensor, _name, _fn)


def _array_operand(other):
    """A NumPy array met by a tensor operator, as the tensor PyTorch makes of it (NumPy
    defers these to the tensor: Tensor.__array_priority__); None for anything else."""
    if isinstance(other, np.ndarray):
        from .creation import as_tensor
        return as_tensor(other)
    return None


def _binary_operator(cls, reflected=False):
    if reflected:
        def op(self, other):
            if isinstance(other, NUMBER):
                return cls.apply(other, self)
            arr = _array_operand(other)
            return NotImplemented if arr is None else cls.apply(arr, self)
    else:
        def op(self, other):
            if other.__class__ is Tensor or isinstance(other, (Tensor,) + NUMBER):
                return cls.apply(self, other)
            arr = _array_operand(other)
            return NotImplemented if arr is None else cls.apply(self, arr)
    return op


# the operators, which the functions above call too when they have no out= (or alpha)
_add = Tensor.__add__ = Tensor.__radd__ = tensor_operator(Add, _binary_operator(Add))
_sub = Tensor.__sub__ = tensor_operator(Sub, _binary_operator(Sub))
Tensor.__rsub__ = _binary_operator(Sub, reflected=True)
_mul = Tensor.__mul__ = Tensor.__rmul__ = tensor_operator(Mul, _binary_operator(Mul))
_div = Tensor.__truediv__ = tensor_operator(Div, _binary_operator(Div))
def _rtruediv(self, other):
    """number / tensor, computed as PyTorch does: self.reciprocal() * other."""
    if isinstance(other, NUMBER):
        return self.reciprocal() * other
    arr = _array_operand(other)
    return NotImplemented if arr is None else Div.apply(arr, self)


Tensor.__rtruediv__ = _rtruediv
Tensor.__neg__ = tensor_method(Neg)
Tensor.__pos__ = lambda self: self


def _compare_operator(cls):
    kernel = cls.kernel

    def op(self, other):
        c = other.__class__
        if self.__class__ is Tensor:
            d = self.dtype
            if (d.is_floating_point and not d.is_half and not d.limited
                    and (c is float or c is int or c is Tensor and other.dtype is d)):
                # compute()'s answer for these (compute dtype d, a bool result) without its
                # promotion rules: 8x16 x == y ~2.6 -> ~2.1 us
                return run_elementwise(kernel, (self, other), d, _dtype.bool)
        if c is Tensor or isinstance(other, (Tensor,) + NUMBER):
            return cls.compute(self, other)
        arr = _array_operand(other)
        return NotImplemented if arr is None else cls.compute(self, arr)
    return op


for _n, _f in (("eq", eq), ("ne", ne), ("lt", lt), ("le", le), ("gt", gt), ("ge", ge)):
    setattr(Tensor, _n, _f)
    setattr(Tensor, f"__{_n}__", _compare_operator(_COMPARE[_n]))
Tensor.greater, Tensor.less, Tensor.greater_equal, Tensor.less_equal = gt, lt, ge, le
Tensor.not_equal = ne
Tensor.__hash__ = lambda self: id(self)


for _n, _f in (("eq", eq), ("ne", ne), ("lt", lt), ("le", le), ("gt", gt), ("ge", ge)):
    setattr(Tensor, _n + "_", written_back(_f))

# The other op families (their Tensor methods are installed on import).
from .pointwise_more import *  # noqa: E402,F401,F403
from .pointwise_select import *  # noqa: E402,F401,F403
from .pointwise_math import *  # noqa: E402,F401,F403
from .pointwise_activation import *  # noqa: E402,F401,F403
from .logical import *  # noqa: E402,F401,F403
from . import pointwise_more as _pm, pointwise_select as _ps  # noqa: E402
from . import pointwise_math as _pmath, pointwise_activation as _pa, logical as _lg  # noqa
__all__ = __all__ + _pm.__all__ + _ps.__all__ + _pmath.__all__ + _pa.__all__ + _lg.__all__
