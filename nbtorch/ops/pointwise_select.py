"""Elementwise selection and blending: maximum/minimum, clamp, where, lerp, addcmul/addcdiv.

Gradients follow PyTorch at the kinks: `maximum`/`minimum` split a tie
equally between both inputs, `clamp` passes the gradient at the boundary,
`fmax`/`fmin` give it to the input they returned.
"""
import math

import numpy as np

from .. import _dtype
from .._device import CPU
from .._registry import _KERNELS, get_kernel
from .._scalars import checked, wrap as wrap_scalar
from .._tensor import Tensor, Storage, _LAYOUTS, _layout, wrap
from ..autograd import function as _function, grad_mode
from ..autograd.function import APPLY_WRAPPERS, Function, renamed, unrecorded
from ._common import sum_to
from ._small_calls import _QUIET_RUN, _SMALL, _SMALL_LIMIT, _SmallKeys, _resolve_small
from ._elementwise import (Binary, Elementwise, check_number, run_elementwise,
                           shape_of, type_name, native_out_of)

__all__ = ["maximum", "minimum", "fmax", "fmin", "clamp", "clip",
           "clamp_min", "clamp_max", "where", "lerp", "addcmul", "addcdiv"]


# ---- maximum / minimum / fmax / fmin ------------------------------------------------

class Maximum(Binary):
    kernel = "maximum"

    @staticmethod
    def grad(ctx, g, a, b, out):
        half = where(a == b, g * 0.5, g)
        return where(a < b, 0.0, half), where(b < a, 0.0, half)


class Minimum(Binary):
    kernel = "minimum"

    @staticmethod
    def grad(ctx, g, a, b, out):
        half = where(a == b, g * 0.5, g)
        return where(a > b, 0.0, half), where(b > a, 0.0, half)


class Fmax(Binary):
    kernel = "fmax"

    @staticmethod
    def grad(ctx, g, a, b, out):
        take_a = (a >= b) | (b != b)
        return where(take_a, g, 0.0), where(take_a, 0.0, g)


class Fmin(Binary):
    kernel = "fmin"

    @staticmethod
    def grad(ctx, g, a, b, out):
        take_a = (a <= b) | (b != b)
        return where(take_a, g, 0.0), where(take_a, 0.0, g)


def _binary_fn(cls, name, doc):
    def fn(input, other, *, out=None):
        if not isinstance(other, Tensor):        # PyTorch takes no Python number here
            raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not "
                            f"{type(other).__name__}")
        return cls.call((input, other), out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    native_out_of(cls)(fn)
    setattr(Tensor, name, fn)
    return fn


maximum = _binary_fn(Maximum, "maximum",
                     "Elementwise maximum; NaN propagates; a tie splits the gradient.")
minimum = _binary_fn(Minimum, "minimum",
                     "Elementwise minimum; NaN propagates; a tie splits the gradient.")
fmax = _binary_fn(Fmax, "fmax", "Elementwise maximum ignoring NaN (NaN only if both are).")
fmin = _binary_fn(Fmin, "fmin", "Elementwise minimum ignoring NaN (NaN only if both are).")
max_elementwise = maximum


# ---- clamp --------------------------------------------------------------------------

class Clamp(Function):
    """clamp(x, min, max); either bound may be None, a number or a tensor."""

    @staticmethod
    def result_dtype(x, lo, hi):
        return _dtype.result_type(*(v for v in (x, lo, hi) if v is not None))

    @staticmethod
    def compute(x, lo, hi, out=None):
        d = Clamp.result_dtype(x, lo, hi)
        if lo is None:
            return run_elementwise("clamp_max", (x, hi), d, out=out)
        if hi is None:
            return run_elementwise("clamp_min", (x, lo), d, out=out)
        return run_elementwise("clamp", (x, lo, hi), d, out=out)

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(*(v if isinstance(v, Tensor) else None for v in (x, lo, hi)))
        ctx.bounds = (lo, hi)
        ctx.shapes = tuple(shape_of(v) for v in (x, lo, hi))
        return Clamp.compute(x, lo, hi)

    @staticmethod
    def backward(ctx, g):
        x, tlo, thi = ctx.saved_tensors
        lo = ctx.bounds[0] if tlo is None else tlo
        hi = ctx.bounds[1] if thi is None else thi
        need = ctx.needs_input_grad
        inside = None
        if lo is not None:
            inside = x >= lo
        if hi is not None:
            inside = (x <= hi) if inside is None else inside & (x <= hi)
        gx = where(inside, g, 0.0) if need[0] else None
        glo = ghi = None
        if need[1]:
            sel = x < lo
            if hi is not None:
                sel = sel & (lo < hi)
            glo = sum_to(where(sel, g, 0.0), ctx.shapes[1])
        if need[2]:
            sel = x > hi
            if lo is not None:
                sel = sel | (hi < lo)
            ghi = sum_to(where(sel, g, 0.0), ctx.shapes[2])
        return (sum_to(gx, ctx.shapes[0]) if gx is not None else None), glo, ghi


def _clamp_args(lo, hi):
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    for name, v in (("min", lo), ("max", hi)):
        if v is not None:
            check_number("clamp", v, name)
    return lo, hi


_ClampScalars = renamed(Clamp, "ClampBackward1")     # PyTorch's clamp(Scalar) node
_new_tensor = Tensor.__new__


def _clamp_bounds(x, lo, hi):
    """Integer bounds of an integer tensor converted as PyTorch does (uint8: -2 is 254,
    300 is an error)."""
    if isinstance(x, Tensor) and not x.dtype.is_floating_point and x.dtype is not _dtype.bool:
        lo = checked(lo, x.dtype) if isinstance(lo, int) and not isinstance(lo, bool) else lo
        hi = checked(hi, x.dtype) if isinstance(hi, int) and not isinstance(hi, bool) else hi
    return lo, hi


_NUMBERS = (float, int, type(None))


def clamp(input, min=None, max=None, *, out=None):
    """Limit input to [min, max]; bounds are numbers, tensors (broadcast) or None.

    Where min > max the result is max, as in PyTorch. The gradient passes where
    min <= input <= max (boundary included).

    Example:
        >>> nbtorch.clamp(nbtorch.tensor([-2., 0.5, 3.]), min=0, max=1)
        tensor([0.0000, 0.5000, 1.0000])
    """
    if out is None and input.__class__ is Tensor:
        res = _unrecorded_clamp(input, min, max, False)
        if res is not None:
            return res
        if (min.__class__ in _NUMBERS and max.__class__ in _NUMBERS
                and (min is not None or max is not None) and unrecorded(input)):
            d = input.dtype
            if d.is_floating_point:
                # number bounds of a floating tensor, nothing recorded: the kernel straight
                # (the dtype is the input's; no Function, no promotion rules: 11.6 -> 4 us)
                if min is None:
                    return run_elementwise("clamp_max", (input, max), d)
                if max is None:
                    return run_elementwise("clamp_min", (input, min), d)
                return run_elementwise("clamp", (input, min, max), d)
    lo, hi = _clamp_bounds(input, *_clamp_args(min, max))
    if out is None:
        tensor_bound = isinstance(lo, Tensor) or isinstance(hi, Tensor)
        return (Clamp if tensor_bound else _ClampScalars).apply(input, lo, hi)
    Clamp.compute(input, lo, hi, out=out)
    out._bump()
    return out


def clamp_(self, min=None, max=None):
    """In-place clamp."""
    if self.__class__ is Tensor:
        res = _unrecorded_clamp(self, min, max, True)
        if res is not None:
            return res
    lo, hi = _clamp_bounds(self, *_clamp_args(min, max))
    return Elementwise.inplace.__func__(Clamp, self, (self, lo, hi))


def clamp_min(input, min):
    """max(input, min) elementwise."""
    return clamp(input, min=min)


def clamp_max(input, max):
    """min(input, max) elementwise."""
    return clamp(input, max=max)


_CLAMP_DTYPES = frozenset((_dtype.float32, _dtype.float64, _dtype.int64, _dtype.int32,
                           _dtype.int16, _dtype.int8, _dtype.uint8))
_EXACT_DOUBLE = 1 << 53     # ints up to this are exact as a Python float (one rounding)
_CALLS = {}     # (dtype, lo, hi) -> `_clamp_call`'s answer, when neither bound is -0.0
# the clamp kernels' `_SMALL` keys by number of operands (with a lower bound)
_CLAMP_KEYS = (None, None, _SmallKeys("clamp_min", 2), _SmallKeys("clamp", 3))
_CLAMP_MAX = _SmallKeys("clamp_max", 2)
_STATE = grad_mode.STATE


def _positive_zero(v):
    """False for -0.0 (equal to 0.0 and 0 as a key, but not the same bound)."""
    return v.__class__ is not float or math.copysign(1.0, v) > 0


def _clamp_call(d, lo, hi):
    """(class of lo, class of hi, the kernel's `_SmallKeys`, operand count, lo, hi) of
    a small clamp of a `d` tensor with Python-number bounds `lo`, `hi` (either None) that
    keep its dtype: each bound as the kernel reads it, a 0-d array of `d` (NumPy's ufunc
    reads one ~0.25 us sooner than a Python float; ints of a floating `d` within 2**53 as
    that float, wrap's one rounding; an integer `d`'s bounds `checked` as the general path
    does, uint8's -2 is 254); a float beyond `d`'s finite range stays a float (cast to inf
    in the call, where NumPy's overflow warning is off). None where the call is not such
    a small clamp (a float bound of an integer tensor promotes; other bounds; errors)."""
    args = []
    for v in (lo, hi):
        c = v.__class__
        if v is None:
            args.append(None)
            continue
        if c is int:
            if d.is_floating_point:
                if not -_EXACT_DOUBLE <= v <= _EXACT_DOUBLE:
                    return None
                v = float(v)
            else:
                try:
                    v = checked(v, d)
                except (RuntimeError, OverflowError):
                    return None
        elif c is not float or not d.is_floating_point:
            return None
        low, high = _RANGES.get(d) or _range(d)
        args.append(np.array(v, d.np) if v != v or low <= v <= high else v)
    if lo is None:
        if hi is None:
            return None
        return (lo.__class__, hi.__class__, _CLAMP_MAX, 2, None, args[1])
    n = 2 if hi is None else 3
    return (lo.__class__, hi.__class__, _CLAMP_KEYS[n], n, args[0], args[1])


def _unrecorded_clamp(x, lo, hi, inplace):
    """clamp(x, lo, hi) (or clamp_ with `inplace`) for a contiguous CPU tensor `x` of a
    float32/float64/integer dtype under `_SMALL_LIMIT` elements with Python-number bounds
    that keep its dtype (`_clamp_call`, cached per dtype and bounds), nothing to record or
    watch: the kernel's pre-resolved ufunc loop ("clamp", "clamp_min" or "clamp_max")
    called with the bounds as the kernel would read them, so the same bits, without
    Function.apply, the promotion rules and run_elementwise's layers (8x16 float32
    ``x.clamp(0, 1)`` ~14 -> ~2.5 us). The in-place form writes x's own array and bumps
    its version twice, as the general path's run_elementwise(out=x) and in-place wrapper
    do. None where any of that does not hold (the general path then does it all, errors
    included)."""
    d = x.dtype
    if (d not in _CLAMP_DTYPES or x.device is not CPU or APPLY_WRAPPERS[0]
            or _function.TRACE_HOOK[0] is not None):
        return None
    if _STATE.enabled and (x._requires_grad or inplace and x._base is not None
                           and x._base._requires_grad):
        return None
    shape = x._shape
    size, strides, numel = _LAYOUTS.get(shape) or _layout(shape)
    if x._strides != strides or not 0 < numel < _SMALL_LIMIT:
        return None
    cl, ch = lo.__class__, hi.__class__
    if (cl is not float and cl is not int and lo is not None
            or ch is not float and ch is not int and hi is not None):
        return None                     # (tensor bounds, lists: the general path)
    call = _CALLS.get((d, lo, hi))
    if (call is None or call[0] is not cl or call[1] is not ch
            or not (lo or _positive_zero(lo)) or not (hi or _positive_zero(hi))):
        call = _clamp_call(d, lo, hi)
        if call is None:
            return None
        if (lo or _positive_zero(lo)) and (hi or _positive_zero(hi)):
            if len(_CALLS) >= 256:
                _CALLS.clear()
            _CALLS[(d, lo, hi)] = call
    _, _, keys, n, a, b = call
    kernel = _KERNELS.get(keys.kernel_key)
    small = keys.by_dtype.get(d)
    if small is None or small[0] is not kernel:
        if kernel is None:              # not resolved yet: the general path's first call
            return None
        small = _SMALL.get((keys.name, d, d, n))
        if small is None or small[0] is not kernel:
            small = _resolve_small(keys.name, kernel, d, d, n)
        if small[1] is None:            # a user's kernel, or a loop not compiled yet
            return None
        keys.by_dtype[d] = small
    ufunc = small[1]
    xa = x._arr
    if xa is None:
        xa = x._array
    try:                                # (positional operands: a *args call with a
        if n == 3:                      # keyword takes NumPy's slow path, ~0.3 us)
            data = (_QUIET_RUN(ufunc, xa, a, b, xa, signature=small[2]) if inplace else
                    _QUIET_RUN(ufunc, xa, a, b, signature=small[2]))
        else:
            v = b if a is None else a
            data = (_QUIET_RUN(ufunc, xa, v, xa, signature=small[2]) if inplace else
                    _QUIET_RUN(ufunc, xa, v, signature=small[2]))
    except RuntimeError:                # another thread is in the context: the layers
        return None
    if inplace:
        x._bump()
        x._bump()
        return x
    if not size:                        # 0-d: the ufunc returned a NumPy scalar
        data = np.asarray(data)
    return _new_tensor(Tensor)._init(
        Storage(data if len(size) == 1 else data.reshape(-1), CPU), 0, size, strides, d, data)


clip = clamp
Tensor.clamp = Tensor.clip = clamp
Tensor.clamp_ = Tensor.clip_ = clamp_
Tensor.clamp_min, Tensor.clamp_max = clamp_min, clamp_max
Tensor.clamp_min_ = lambda self, min: clamp_(self, min=min)
Tensor.clamp_max_ = lambda self, max: clamp_(self, max=max)


# ---- where ---------------------------------------------------------------------------

_SMALL_SELECT = 1 << 12     # elements: larger selects take the kernel (its threads)
_WHERE_CPU = ("where", "cpu")
_OWN_WHERE = [None]         # the registered CPU "where" kernel, once seen to be nbtorch's own
def own_where_kernel():
    """True while the registered CPU "where" kernel is nbtorch's own, NumPy's select (a
    user's kernel runs itself): one dict look-up once it has been seen."""
    kernel = _KERNELS.get(_WHERE_CPU)
    if kernel is None or kernel is not _OWN_WHERE[0]:
        kernel = get_kernel("where", "cpu")
        if getattr(kernel, "ufunc_name", None) != "where":
            return False
        _OWN_WHERE[0] = kernel
    return True


def small_where(cond, x, y, d):
    """where(cond, x, y) computed in dtype `d` by NumPy's `where` when every operand is on
    the CPU and small, each tensor already of dtype `d` (numbers are cast to it, as the
    kernel casts them), `d` not half, the registered "where" kernel is nbtorch's own (a
    user's kernel runs itself) and no graph capture or profiler watches (a capture records
    the elementwise call); None otherwise, or where the shapes do not broadcast (the
    kernel's path names them). A select copies values, so the bits are the kernel's
    (where of 8x16 10 -> 6.7 us, masked_fill 12.5 -> 6.4)."""
    if (APPLY_WRAPPERS[0] or d.is_half or cond.device.type != "cpu"
            or cond.numel() >= _SMALL_SELECT or not own_where_kernel()):
        return None
    for v in (x, y):
        if v.__class__ is Tensor and (v.dtype is not d or v.device.type != "cpu"
                                      or v.numel() >= _SMALL_SELECT):
            return None
    a = x._array if x.__class__ is Tensor else wrap_scalar(x, d)
    b = y._array if y.__class__ is Tensor else wrap_scalar(y, d)
    try:
        data = np.where(cond._array, a, b)
    except ValueError:
        return None
    return wrap(data, cond.device)


def plain_small(t):
    """True when `t` is a small CPU tensor laid out C-contiguously with its shape's own
    strides: NumPy's select over such operands (and broadcast ones) writes a C-ordered
    result whose strides are those of its shape, so `fresh_select` may skip `wrap`."""
    layout = _LAYOUTS.get(t._shape) or _layout(t._shape)
    return layout[2] < _SMALL_SELECT and t._strides == layout[1] and t.device is CPU


def fresh_select(data, d):
    """The CPU tensor of dtype `d` that `wrap` makes of `data`, NumPy's select over
    `plain_small` operands (C-ordered, its shape's strides), without wrap's inspection."""
    size, strides, _ = _LAYOUTS.get(data.shape) or _layout(data.shape)
    return _new_tensor(Tensor)._init(
        Storage(data if len(size) == 1 else data.reshape(-1), CPU), 0, size, strides, d, data)


def unwatched():
    """True when no graph capture, profiler or tracer watches the ops (they must see every
    call: the fast paths below then step aside)."""
    return not APPLY_WRAPPERS[0] and _function.TRACE_HOOK[0] is None


def _keeps(c, d):
    """True when a Python number of class `c` beside a tensor of dtype `d` leaves the
    result `d` (PyTorch's promotion: a float beside a floating tensor, an int beside any
    but a bool or complex one)."""
    if c is float:
        return d.is_floating_point
    return c is int and d is not _dtype.bool and not d.is_complex


_RANGES = {}        # dtype -> (lowest, highest) finite value, as Python numbers


def _range(d):
    if d.is_floating_point:
        top = float(np.finfo(d.np).max)
        r = (-top, top)
    elif d is _dtype.bool or d.is_complex:
        r = (1, 0)                                  # (no number taken directly)
    else:
        info = np.iinfo(d.np)
        r = (int(info.min), int(info.max))
    _RANGES[d] = r
    return r


def value_array(v, d, check=False):
    """Python number `v` as a 0-d array of dtype `d` holding what `wrap_scalar` makes of it,
    after `checked` with `check` (NumPy's select reads a 0-d array ~0.4 us faster than a
    NumPy scalar): a float within a floating `d`'s finite range, or an int within an integer
    `d`'s, directly (both pass `checked` unchanged; the same C cast), any other value by
    those two."""
    if v.__class__ is (float if d.is_floating_point else int):
        lo, hi = _RANGES.get(d) or _range(d)
        if lo <= v <= hi:
            return np.array(v, d.np)
    return np.asarray(wrap_scalar(checked(v, d) if check else v, d))


def _unrecorded_where(cond, x, y):
    """where(cond, x, y) with nothing to record or watch, for `plain_small` tensors of one
    dtype `d` (one of x, y may be a number that `d` keeps), `d` neither half nor limited,
    nbtorch's own "where" kernel: `small_where`'s NumPy select without Function.apply, the
    promotion rules and `wrap` (8x16 float32 ``where(c, x, 0.0)`` 7.5 -> 3.6 us). None
    where any of that does not hold, or the shapes do not broadcast (the general path
    then names them)."""
    cx, cy = x.__class__, y.__class__
    if cx is Tensor:
        d = x.dtype
        if (y.dtype is not d) if cy is Tensor else not _keeps(cy, d):
            return None
    elif cy is Tensor:
        d = y.dtype
        if not _keeps(cx, d):
            return None
    else:
        return None
    if (cond.__class__ is not Tensor or cond.dtype is not _dtype.bool or d.is_half
            or d.limited or APPLY_WRAPPERS[0] or _function.TRACE_HOOK[0] is not None
            or grad_mode.STATE.enabled and (cx is Tensor and x._requires_grad
                                            or cy is Tensor and y._requires_grad)
            or _KERNELS.get(_WHERE_CPU) is not _OWN_WHERE[0] and not own_where_kernel()
            or not plain_small(cond)):
        return None
    try:
        a, b = _select_operand(x, cond, d), _select_operand(y, cond, d)
        if a is None or b is None:
            return None
        data = np.where(cond._array, a, b)
    except (ValueError, OverflowError):     # shapes, a number d cannot hold: the general
        return None                         # path's errors
    return fresh_select(data, d)


def _select_operand(v, cond, d):
    """What `_unrecorded_where` hands NumPy for operand `v`: a tensor's array (one of
    cond's shape and strides on the CPU, else a `plain_small` one), a number as
    `value_array`; None for a tensor neither."""
    if v.__class__ is not Tensor:
        return value_array(v, d)
    if (v._strides != cond._strides or v._shape != cond._shape or v.device is not CPU) \
            and not plain_small(v):
        return None
    return v._array


class Where(Function):
    @staticmethod
    def forward(ctx, cond, x, y):
        ctx.save_for_backward(cond)
        ctx.shapes = (shape_of(x), shape_of(y))
        d = _dtype.result_type(x, y)
        out = small_where(cond, x, y, d)
        if out is not None:
            return out
        return run_elementwise("where", (cond, x, y), (_dtype.bool, d, d), d)

    @staticmethod
    def backward(ctx, g):
        cond, = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = sum_to(where(cond, g, 0.0), ctx.shapes[0]) if need[1] else None
        gy = sum_to(where(cond, 0.0, g), ctx.shapes[1]) if need[2] else None
        return None, gx, gy


def where(condition, input=None, other=None, *, out=None):
    """input where condition is True, else other (either may be a number), broadcast.

    Example:
        >>> x = nbtorch.tensor([-1., 2.])
        >>> nbtorch.where(x > 0, x, 0.0)
        tensor([0., 2.])
    """
    if out is None and input is not None:
        res = _unrecorded_where(condition, input, other)
        if res is not None:
            return res
    if input is None and other is None:
        from . import indexing_gather
        return indexing_gather.nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor) or condition.dtype is not _dtype.bool:
        got = type_name(condition.dtype) if isinstance(condition, Tensor) else "Number"
        raise RuntimeError("where expected condition to be a boolean tensor, but got a "
                           f"tensor with dtype {got}")
    check_number("where", input, "input")
    check_number("where", other, "other")
    res = Where.apply(condition, input, other)
    if out is not None:
        out.copy_(res)
        return out
    return res


Tensor.where = lambda self, condition, other: where(condition, self, other)


# ---- lerp, addcmul, addcdiv: three tensors (or scalars) and a value --------------------

_INTEGER_ADDCDIV = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv "
    "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
    "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
    "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
    "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
    "for all dtypes.")


class _Ternary(Function):
    """Base: out = kernel(a, b, c[, value]) with grads from `grad(...)` summed to shapes."""

    kernel = None

    @classmethod
    def compute(cls, a, b, c, *value, out=None):
        d = _dtype.result_type(a, b, c)
        return run_elementwise(cls.kernel, (a, b, c) + value, d, out=out)

    @staticmethod
    def forward(ctx, a, b, c, *value):
        cls = ctx._forward_cls
        ctx.save_for_backward(*(v if isinstance(v, Tensor) else None for v in (a, b, c)))
        ctx.scalars = tuple(None if isinstance(v, Tensor) else v for v in (a, b, c))
        ctx.shapes = tuple(shape_of(v) for v in (a, b, c))
        ctx.value = value
        return cls.compute(a, b, c, *value)

    @staticmethod
    def backward(ctx, g):
        cls = ctx._forward_cls
        saved = [s if t is None else t for t, s in zip(ctx.saved_tensors, ctx.scalars)]
        grads = cls.grad(g, *saved, *ctx.value)
        need = ctx.needs_input_grad
        return tuple(sum_to(gr, shp) if n and gr is not None else None
                     for gr, shp, n in zip(grads, ctx.shapes, need)) + (None,) * len(ctx.value)


class Lerp(_Ternary):
    kernel = "lerp"

    @staticmethod
    def grad(g, start, end, weight):
        return g * (1 - weight), g * weight, g * (end - start)


class Addcmul(_Ternary):
    kernel = "addcmul"

    @staticmethod
    def grad(g, a, t1, t2, value):
        return g, g * (t2 * value), g * (t1 * value)


class Addcdiv(_Ternary):
    kernel = "addcdiv"

    @classmethod
    def compute(cls, a, b, c, *value, out=None):
        if all(isinstance(t, Tensor) and not (t.dtype.is_floating_point or t.dtype.is_complex)
               for t in (b, c)):
            raise RuntimeError(_INTEGER_ADDCDIV)
        return super().compute(a, b, c, *value, out=out)

    @staticmethod
    def grad(g, a, t1, t2, value):
        return g, g * value / t2, -g * value * t1 / (t2 * t2)


def _call3(cls, args, out):
    if out is None:
        return cls.apply(*args)
    cls.compute(*args, out=out)
    out._bump()
    return out


def lerp(input, end, weight, *, out=None):
    """input + weight * (end - input); weight is a number or a tensor.

    Example:
        >>> nbtorch.lerp(nbtorch.tensor([0., 10.]), nbtorch.tensor([10., 20.]), 0.5)
        tensor([ 5., 15.])
    """
    check_number("lerp", weight, "weight")
    if isinstance(input, Tensor) and input.dtype.is_complex:    # no complex lerp body
        r = input + weight * (end - input)
        return r if out is None else out.copy_(r)
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        from .reduction import dtype_label
        kind = "tensor" if isinstance(weight, Tensor) else "scalar"
        raise NotImplementedError(f"\"lerp_kernel_{kind}\" not implemented for "
                                  f"'{dtype_label(input.dtype)}'")
    return _call3(Lerp, (input, end, weight), out)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """input + value * tensor1 * tensor2."""
    return _call3(Addcmul, (input, tensor1, tensor2, value), out)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """input + value * tensor1 / tensor2."""
    return _call3(Addcdiv, (input, tensor1, tensor2, value), out)


def _inplace3(cls, fn_name):
    def method(self, b, c, value=None):
        args = (self, b, c) if value is None else (self, b, c, value)
        return Elementwise.inplace.__func__(cls, self, args)
    method.__name__ = fn_name + "_"
    return method


Lerp.result_dtype = Addcmul.result_dtype = Addcdiv.result_dtype = staticmethod(
    lambda a, b, c, *v: _dtype.result_type(a, b, c))
Tensor.lerp = lerp
Tensor.lerp_ = _inplace3(Lerp, "lerp")
Tensor.addcmul = addcmul
Tensor.addcdiv = addcdiv
Tensor.addcmul_ = lambda self, t1, t2, *, value=1: _inplace3(Addcmul, "addcmul")(
    self, t1, t2, value)
Tensor.addcdiv_ = lambda self, t1, t2, *, value=1: _inplace3(Addcdiv, "addcdiv")(
    self, t1, t2, value)
