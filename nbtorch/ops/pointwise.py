"""Elementwise ops with broadcasting and PyTorch's type promotion.

Each op is an autograd Function built from a table row: the kernel name (a
scalar body in `kernels/scalar.py`), how the result dtype is chosen, and the
backward formula written with nbtorch ops. The CPU kernel of every op here is
the Numba ufunc of its scalar body (`kernels/cpu/pointwise.py`).
"""
import numpy as np

from .. import _dtype
from .._tensor import Tensor, empty
from .._registry import register_kernel, get_kernel
from ..autograd.function import Function
from ._common import (broadcast_shapes, result_device, sum_to, tensor_method)
from ._inplace import inplace_guard

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
           "neg", "negative", "exp", "log", "relu", "eq", "ne", "lt", "le", "gt", "ge",
           "greater", "less", "greater_equal", "less_equal", "not_equal"]

_F16 = _dtype.float16
_F32 = _dtype.float32


def _cpu_ufunc_kernel(name):
    """A CPU kernel calling the ufunc of scalar body `name`; float16 computes in float32."""
    from nbtorch.kernels.cpu import pointwise as k
    ufunc = k.get(name)

    def kernel(out, *args):
        if out.dtype == np.float16 or any(getattr(a, "dtype", None) == np.float16
                                          for a in args):
            args = tuple(a.astype(np.float32) if getattr(a, "dtype", None) == np.float16
                         else a for a in args)
            tmp = np.empty(out.shape, np.float32 if out.dtype == np.float16 else out.dtype)
            ufunc(*args, tmp)
            out[...] = tmp
        else:
            ufunc(*args, out)
    kernel.__name__ = name
    kernel.__qualname__ = f"cpu.pointwise.{name}"
    return kernel


def _operand(x, dtype, device):
    if isinstance(x, Tensor):
        if x.dtype is not dtype:
            x = x.to(dtype)
        if x.device != device:
            x = x.to(device)
        return x._array
    return dtype.np.type(x)


def _shape(x):
    return x._shape if isinstance(x, Tensor) else ()


def pointwise(op, inputs, compute_dtype, out_dtype=None, out=None):
    """Run elementwise kernel `op` over broadcast `inputs` into a new (or given) tensor."""
    device = result_device(op, *inputs)
    if len(inputs) == 1:
        shape = inputs[0]._shape
    else:
        shape = broadcast_shapes(*(_shape(x) for x in inputs))
    if out is None:
        out = empty(shape, out_dtype or compute_dtype, device)
    args = tuple(_operand(x, compute_dtype, device) for x in inputs)
    if out.numel():
        get_kernel(op, device.type)(out._array, *args)
    return out


# ---- binary arithmetic ---------------------------------------------------------

def _promote(a, b):
    return _dtype.result_type(a, b)


class Add(Function):
    @staticmethod
    def forward(ctx, a, b, alpha=1):
        ctx.shapes = (_shape(a), _shape(b))
        ctx.alpha = alpha
        dtype = _promote(a, b)
        if alpha != 1:
            b = b * alpha
        return pointwise("add", (a, b), dtype)

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        gb = g if ctx.alpha == 1 else g * ctx.alpha
        return (sum_to(g, sa) if ctx.needs_input_grad[0] else None,
                sum_to(gb, sb) if ctx.needs_input_grad[1] else None, None)


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b, alpha=1):
        ctx.shapes = (_shape(a), _shape(b))
        ctx.alpha = alpha
        dtype = _promote(a, b)
        if dtype is _dtype.bool:
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        if alpha != 1:
            b = b * alpha
        return pointwise("sub", (a, b), dtype)

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        return (sum_to(g, sa) if ctx.needs_input_grad[0] else None,
                sum_to(-g * ctx.alpha, sb) if ctx.needs_input_grad[1] else None, None)


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(*(x if isinstance(x, Tensor) else None for x in (a, b)))
        ctx.scalars = (a, b)
        ctx.shapes = (_shape(a), _shape(b))
        return pointwise("mul", (a, b), _promote(a, b))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        a = ctx.scalars[0] if a is None else a
        b = ctx.scalars[1] if b is None else b
        sa, sb = ctx.shapes
        return (sum_to(g * b, sa) if ctx.needs_input_grad[0] else None,
                sum_to(g * a, sb) if ctx.needs_input_grad[1] else None)


class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(*(x if isinstance(x, Tensor) else None for x in (a, b)))
        ctx.scalars = (a, b)
        ctx.shapes = (_shape(a), _shape(b))
        dtype = _promote(a, b)
        if not dtype.is_floating_point:
            dtype = _dtype.get_default_dtype()
        return pointwise("div", (a, b), dtype)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        a = ctx.scalars[0] if a is None else a
        b = ctx.scalars[1] if b is None else b
        sa, sb = ctx.shapes
        return (sum_to(g / b, sa) if ctx.needs_input_grad[0] else None,
                sum_to(-g * a / (b * b), sb) if ctx.needs_input_grad[1] else None)


def _check_operand(op, x):
    if not isinstance(x, (Tensor, int, float, bool, np.number, np.bool_)):
        raise TypeError(f"{op}(): argument 'other' must be Tensor or Number, not "
                        f"{type(x).__name__}")


def add(input, other, *, alpha=1, out=None):
    """input + alpha * other, broadcast, with PyTorch's type promotion."""
    _check_operand("add", other)
    return _with_out(Add.apply(input, other, alpha), out)


def sub(input, other, *, alpha=1, out=None):
    """input - alpha * other."""
    _check_operand("sub", other)
    return _with_out(Sub.apply(input, other, alpha), out)


def mul(input, other, *, out=None):
    """input * other."""
    _check_operand("mul", other)
    return _with_out(Mul.apply(input, other), out)


def div(input, other, *, rounding_mode=None, out=None):
    """input / other (true division; rounding_mode 'trunc' or 'floor' rounds the quotient)."""
    _check_operand("div", other)
    if rounding_mode is None:
        return _with_out(Div.apply(input, other), out)
    from . import pointwise_more as pm
    return _with_out(pm.div_rounded(input, other, rounding_mode), out)


def _with_out(result, out):
    if out is None:
        return result
    if out._shape != result._shape:
        raise RuntimeError(f"out= tensor has shape {list(out.shape)} but the result has shape "
                           f"{list(result.shape)}")
    out.copy_(result)
    return out


subtract, multiply, divide, true_divide = sub, mul, div, div


# ---- unary ---------------------------------------------------------------------

class Neg(Function):
    @staticmethod
    def forward(ctx, x):
        if x.dtype is _dtype.bool:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not "
                               "supported. If you are trying to invert a mask, use the `~` or "
                               "`logical_not()` operator instead.")
        return pointwise("neg", (x,), x.dtype)

    @staticmethod
    def backward(ctx, g):
        return -g


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        out = pointwise("exp", (x,), _float(x.dtype))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * out


class Log(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return pointwise("log", (x,), _float(x.dtype))

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g / x


class Relu(Function):
    @staticmethod
    def forward(ctx, x):
        out = pointwise("relu", (x,), x.dtype)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * (out > 0)


def _float(d):
    return d if d.is_floating_point else _dtype.get_default_dtype()


def neg(input, *, out=None):
    return _with_out(Neg.apply(input), out)


def exp(input, *, out=None):
    """e ** input, elementwise."""
    return _with_out(Exp.apply(input), out)


def log(input, *, out=None):
    """Natural logarithm (-inf at 0, nan below)."""
    return _with_out(Log.apply(input), out)


def relu(input, inplace=False):
    """max(input, 0)."""
    return Relu.apply(input)


negative = neg


# ---- comparisons (no gradient) -------------------------------------------------

def _compare(op):
    def fn(input, other, *, out=None):
        _check_operand(op, other)
        return _with_out(pointwise(op, (input, other), _promote(input, other),
                                   _dtype.bool), out)
    fn.__name__ = op
    fn.__doc__ = f"Elementwise `{op}` comparison; a bool tensor."
    return fn


eq, ne, lt, le, gt, ge = (_compare(n) for n in ("eq", "ne", "lt", "le", "gt", "ge"))
greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne

for _n in ("add", "sub", "mul", "div", "neg", "exp", "log", "relu", "eq", "ne", "lt", "le",
           "gt", "ge"):
    register_kernel(_n, "cpu", _cpu_ufunc_kernel(_n))


# ---- in-place forms and operators ----------------------------------------------

def _inplace(fn_cls, op):
    def method(self, other, *args, **kwargs):
        _check_operand(op, other)
        dtype = _promote(self, other)
        if op == "div" and not dtype.is_floating_point:
            dtype = _dtype.get_default_dtype()
        if not _dtype.can_cast(dtype, self.dtype):
            raise RuntimeError(f"result type {dtype.name.capitalize()} can't be cast to the "
                               f"desired output type {self.dtype.name.capitalize()}")
        shape = broadcast_shapes(self._shape, _shape(other))
        if shape != self._shape:
            raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the "
                               f"broadcast shape {list(shape)}")

        def raw():
            alpha = kwargs.get("alpha", 1)
            b = other if alpha == 1 else other * alpha
            if dtype is self.dtype:
                pointwise(op, (self, b), dtype, out=self)
            else:
                from .copy import raw_copy_
                raw_copy_(self, pointwise(op, (self, b), dtype))
            self._bump()
        return inplace_guard(self, fn_cls, (self, other) + args, raw, kwargs)
    method.__name__ = op + "_"
    return method


Tensor.add_ = _inplace(Add, "add")
Tensor.sub_ = _inplace(Sub, "sub")
Tensor.mul_ = _inplace(Mul, "mul")
Tensor.div_ = _inplace(Div, "div")
Tensor.__iadd__ = Tensor.add_
Tensor.__isub__ = Tensor.sub_
Tensor.__imul__ = Tensor.mul_
Tensor.__itruediv__ = Tensor.div_


def add_raw_(dst, src):
    """dst += src without autograd (gradient accumulation)."""
    pointwise("add", (dst, src), dst.dtype, out=dst)
    dst._bump()


def _rsub(self, other):
    return Sub.apply(other, self, 1) if not isinstance(other, Tensor) else sub(other, self)


def _rdiv(self, other):
    return Div.apply(other, self)


for _name, _fn in (("add", add), ("sub", sub), ("mul", mul), ("div", div)):
    setattr(Tensor, _name, _fn)
Tensor.__add__ = lambda self, other: Add.apply(self, other, 1) \
    if isinstance(other, (Tensor, int, float, bool, np.number)) else NotImplemented
Tensor.__radd__ = Tensor.__add__
Tensor.__sub__ = lambda self, other: Sub.apply(self, other, 1) \
    if isinstance(other, (Tensor, int, float, bool, np.number)) else NotImplemented
Tensor.__rsub__ = _rsub
Tensor.__mul__ = lambda self, other: Mul.apply(self, other) \
    if isinstance(other, (Tensor, int, float, bool, np.number)) else NotImplemented
Tensor.__rmul__ = Tensor.__mul__
Tensor.__truediv__ = lambda self, other: Div.apply(self, other) \
    if isinstance(other, (Tensor, int, float, bool, np.number)) else NotImplemented
Tensor.__rtruediv__ = _rdiv
Tensor.__neg__ = neg
Tensor.neg = Tensor.negative = neg
Tensor.exp = exp
Tensor.log = log
Tensor.relu = relu
for _n, _f in (("eq", eq), ("ne", ne), ("lt", lt), ("le", le), ("gt", gt), ("ge", ge)):
    setattr(Tensor, _n, _f)
    setattr(Tensor, f"__{_n}__", _f)
Tensor.greater, Tensor.less, Tensor.greater_equal, Tensor.less_equal = gt, lt, ge, le
Tensor.not_equal = ne
Tensor.__hash__ = lambda self: id(self)
