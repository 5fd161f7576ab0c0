"""Copies and conversions: `copy_`, `fill_`, `clone`, `contiguous`, `to`, dtype casts."""
import math

import numpy as np

from .. import _dtype
from .. import _memory_format as _mf
from .._memory_format import is_plain as _plain
from .._device import CPU
from .._tensor import canonical_device as to_device
from .._tensor import Tensor, Storage, empty, _LAYOUTS, _layout
from .._kernel_args import copy_values, fill_values
from .._scalars import checked
from .._lazy import kernel_module
from .._registry import _KERNELS, get_kernel
from ..autograd import function as _function
from ..autograd.function import APPLY_WRAPPERS, Function, unrecorded
from ..autograd import grad_mode
from ._common import tensor_method, sum_to, check_same_device
from .._dtype import type_name
from ._inplace import inplace_guard

__all__ = ["clone"]


def _check_copy_shapes(dst, src):
    if len(src._shape) > len(dst._shape) or any(
            n != 1 and n != m for n, m in zip(reversed(src._shape), reversed(dst._shape))):
        raise RuntimeError(f"The size of tensor a ({dst.shape[-1] if dst.dim() else 1}) must "
                           f"match the size of tensor b ({src.shape[-1] if src.dim() else 1}) "
                           f"at non-singleton dimension {dst.dim() - 1}")


def raw_copy_(dst, src):
    """Copy values (any devices, any dtypes) into `dst` without autograd."""
    if src.device != dst.device:
        from .transfer import transfer
        src = transfer(src, dst.device)
    copy_values(dst, src)
    dst._bump()
    return dst


class Copy(Function):
    """dst.copy_(src): gradient flows to src (summed to its shape), none to old dst."""

    @staticmethod
    def forward(ctx, dst, src):
        ctx.src_meta = (src._shape, src.dtype, src.device)
        out = empty(dst._shape, dst.dtype, dst.device)
        raw_copy_(out, src)
        return out

    @staticmethod
    def backward(ctx, g):
        shape, dtype, device = ctx.src_meta
        gs = sum_to(g, shape)
        if gs.device != device:
            gs = gs.to(device)
        return None, gs.to(dtype)


@tensor_method()
def copy_(self, src, non_blocking=False):
    """Copy `src` into this tensor in place (broadcasting, casting, across devices)."""
    if self.__class__ is Tensor and src.__class__ is Tensor and _unrecorded_copy(self, src):
        return self
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    _check_copy_shapes(self, src)
    return inplace_guard(self, Copy, (self, src), lambda: raw_copy_(self, src))


@tensor_method()
def fill_(self, value):
    """Fill in place with a scalar (or a 0-d tensor)."""
    if self.__class__ is Tensor and _unrecorded_fill(self, value):
        return self
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.dim()} dimensions.")
        if value.requires_grad or self.requires_grad:
            return self.copy_(value.expand(self._shape) if self.dim() else value)
        value = value.item()
    else:
        value = checked(value, self.dtype)   # -1 fills a uint8 with 255, 300 is an error
    if self.requires_grad and grad_mode.STATE.enabled and self.is_leaf:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    # no overlap check: elements sharing memory all get the same value (PyTorch fills an
    # expanded tensor too)
    if self.numel():
        fill_values(self, value)
    self._bump()
    if self.grad_fn is not None and grad_mode.STATE.enabled:
        from .creation import zeros
        return self.copy_(zeros((), dtype=self.dtype, device=self.device) + value)
    return self


@tensor_method()
def zero_(self):
    if self.__class__ is Tensor and _unrecorded_fill(self, 0):
        return self
    return self.fill_(0)


# ---- small unrecorded CPU copies and fills: NumPy's, as the copy launchers do ----------

_SMALL_COPY = 1 << 14     # elements: NumPy's copy, as the copy launcher does below this
_PLAIN = frozenset((_dtype.float32, _dtype.float64, _dtype.int64, _dtype.int32, _dtype.int16,
                    _dtype.int8, _dtype.uint8, _dtype.bool))
_EXACT_DOUBLE = 1 << 53   # ints up to this are exact as a Python float
_CASTS = {}               # (source dtype, destination dtype) -> NumPy's cast is safe
_OWN = {}                 # registry key -> nbtorch's own launcher of it, once looked up
_FINITE_MAX = {_dtype.float32: float(np.finfo(np.float32).max),
               _dtype.float64: float(np.finfo(np.float64).max)}
_STATE = grad_mode.STATE


def _own(key):
    """True while the registered kernel of `key` (("copy_" or "fill_", "cpu")) is nbtorch's
    own launcher (a user's kernel runs itself): one look-up once it has been seen."""
    kernel = _KERNELS.get(key)
    own = _OWN.get(key)
    if own is None or kernel is not own:
        own = _OWN[key] = getattr(kernel_module("cpu.copy"), key[0])
        if kernel is None:
            kernel = get_kernel(*key)
    return kernel is own


def _safe_cast(sd, d):
    """True when NumPy casts `sd` to `d` without loss or warning ("safe": float32 ->
    float64, int32 -> float64, bool -> any...): the value the copy kernel's cast gives
    (the same conversion instruction); float -> int, narrowing and overflowing casts,
    where NumPy may warn, take the kernel."""
    ok = _CASTS.get((sd, d))
    if ok is None:
        ok = _CASTS[(sd, d)] = sd in _PLAIN and d in _PLAIN and bool(
            np.can_cast(sd.np, d.np, "safe"))
    return ok


def _watched(t):
    """True when autograd must see a write into or read of CPU tensor `t` (grad mode on
    and `t` or its base requires grad) or a wrapper (capture, profiler) or tracer watches."""
    if APPLY_WRAPPERS[0] or _function.TRACE_HOOK[0] is not None:
        return True
    if _STATE.enabled:
        b = t._base
        return t._requires_grad or (b is not None and b._requires_grad)
    return False


def _dense_array(t):
    """The C-contiguous array of CPU tensor `t` under `_SMALL_COPY` elements, or None where
    `t` is larger, empty or laid out otherwise."""
    shape = t._shape
    layout = _LAYOUTS.get(shape) or _layout(shape)
    if t._strides != layout[1] or not 0 < layout[2] < _SMALL_COPY:
        return None
    a = t._arr
    return t._array if a is None else a


def _unrecorded_copy(dst, src):
    """dst.copy_(src) for plain CPU tensors of one shape, C-contiguous, under `_SMALL_COPY`
    elements, of one dtype or a `_safe_cast` pair, over different memory, nothing to
    record or watch, nbtorch's own copy kernel: NumPy's copy into dst's own array (the
    bits the launcher's dense copy writes) and one version bump, as raw_copy_ (8x16
    float32 ~4.5 -> ~1.3 us). False where any of that does not hold (the general path
    then does it all)."""
    d, sd = dst.dtype, src.dtype
    if (dst._shape != src._shape or dst.device is not CPU or src.device is not CPU
            or (sd is not d or d not in _PLAIN) and not _safe_cast(sd, d)
            or _watched(dst) or _STATE.enabled and src._requires_grad
            or _KERNELS.get(_COPY_CPU) is not _OWN.get(_COPY_CPU) and not _own(_COPY_CPU)):
        return False
    da, sa = _dense_array(dst), _dense_array(src)
    if (da is None or sa is None or dst._storage is src._storage
            or _may_overlap(dst, src, da, sa)):
        return False                    # (memory shared: the kernel's order of writes)
    da[...] = sa                        # (a safe cast, or none: np.copyto's values)
    dst._bump()
    return True


def _may_overlap(a, b, aa, ba):
    """False when the memory of tensors `a` and `b` (arrays `aa`, `ba`) cannot meet: both
    storages own their buffers (two allocations), or NumPy's bounds say so."""
    if a._storage.data.base is None and b._storage.data.base is None:
        return False
    return np.may_share_memory(aa, ba)


def _unrecorded_fill(t, value):
    """t.fill_(value) for a plain CPU tensor of a `_PLAIN` dtype under `_SMALL_COPY`
    elements (any layout: every element gets the value, as the launcher writes it) and a
    Python float or int `value`, nothing to record or watch, nbtorch's own fill kernel:
    the value `checked` as fill_ does (its errors raised here) and converted as the
    launcher does (``d.np.type(value)``; a float, or an int within 2**53, goes to
    ndarray.fill as that float: the same C cast), then ndarray.fill and one version bump
    (8x16 float32 zero_ ~2.8 -> ~0.9 us). False where any of that does not hold."""
    d = t.dtype
    if (d not in _PLAIN or t.device is not CPU or APPLY_WRAPPERS[0]
            or _function.TRACE_HOOK[0] is not None):
        return False
    if _STATE.enabled:
        b = t._base
        if t._requires_grad or t.grad_fn is not None or b is not None and b._requires_grad:
            return False
    layout = _LAYOUTS.get(t._shape) or _layout(t._shape)
    if (layout[2] >= _SMALL_COPY
            or _KERNELS.get(_FILL_CPU) is not _OWN.get(_FILL_CPU) and not _own(_FILL_CPU)):
        return False
    c = value.__class__
    if d.is_floating_point:
        if c is float:
            if abs(value) > _FINITE_MAX[d] and abs(value) != math.inf:
                checked(value, d)       # raises PyTorch's overflow error
        elif c is int:
            value = (float(value) if -_EXACT_DOUBLE <= value <= _EXACT_DOUBLE
                     else d.np.type(value))
        else:
            return False
    elif c is int or c is float:
        value = checked(value, d)       # -1 fills a uint8 with 255, 300 is an error
        if d is _dtype.bool:
            value = d.np.type(value)
    else:
        return False
    if layout[2]:
        a = t._arr
        (t._array if a is None else a).fill(value)
    t._bump()
    return True


_COPY_CPU, _FILL_CPU = ("copy_", "cpu"), ("fill_", "cpu")


def empty_in_format(shape, dtype, device, fmt=None, like=None):
    """A new uninitialised tensor laid out in memory format `fmt` (see _memory_format)."""
    if fmt is None or fmt is _mf.contiguous_format:
        return empty(shape, dtype, device)
    strides = _mf.strides_for(shape, fmt, like)
    n = 1
    for d in shape:
        n *= d
    base = empty((n,), dtype, device)
    out = base._view(tuple(shape), strides, 0)
    out._base = None
    return out


def with_format(t, fmt, like=None):
    """`t`, or a copy of it in memory format `fmt` (no autograd: for fresh tensors)."""
    if fmt is None or fmt is _mf.contiguous_format and t.is_contiguous():
        return t
    if tuple(t._strides) == _mf.strides_for(t._shape, fmt, like):
        return t
    out = empty_in_format(t._shape, t.dtype, t.device, fmt, like)
    copy_values(out, t)
    return out


class Clone(Function):
    @staticmethod
    def forward(ctx, x, fmt=None):
        out = empty_in_format(x._shape, x.dtype, x.device, fmt, x)
        copy_values(out, x)
        return out

    @staticmethod
    def backward(ctx, g):
        return g, None


@tensor_method()
def clone(self, *, memory_format=None):
    """A copy with its own storage; gradients flow back to the original.

    Laid out as `memory_format` says; the default, preserve_format, keeps the strides of
    a dense input and the dim order of any other (as PyTorch does).
    """
    fmt = _mf.check_format("clone", memory_format)
    if fmt is None or fmt is _mf.preserve_format:
        fmt = None if _plain(self) else _mf.preserve_format
    if fmt is None or fmt is _mf.contiguous_format:
        out = _numpy_contiguous(self)   # small, unrecorded: one np.copyto (8x16 6.0 -> ~3 us)
        if out is not None:
            return out
    return Clone.apply(self, fmt)


def _numpy_contiguous(x):
    """A contiguous copy of small CPU tensor `x` by NumPy (ndarray.copy: what np.copyto
    into a fresh contiguous tensor writes, ~0.5 us sooner), for an unrecorded call
    (nothing needs its grad, no capture or profiler watching) while the registered copy
    kernel is nbtorch's own, whose launcher does the same copy at this size: the Clone
    node and the launcher's layers skipped (t().contiguous() of 8x16 9.5 -> 4 us). None
    for anything else."""
    shape = x._shape
    size, strides, numel = _LAYOUTS.get(shape) or _layout(shape)
    if (x.device.type != "cpu" or x.dtype.is_half or numel >= _SMALL_COPY or not unrecorded(x)
            or _KERNELS.get(_COPY_CPU) is not _OWN.get(_COPY_CPU) and not _own(_COPY_CPU)):
        return None
    data = x._array.copy()
    return Tensor.__new__(Tensor)._init(
        Storage(data if len(size) == 1 else data.reshape(-1), x.device), 0, size, strides,
        x.dtype, data)


@tensor_method()
def contiguous(self, memory_format=None):
    """This tensor if already laid out in `memory_format` (default contiguous), else a
    copy that is."""
    fmt = _mf.check_format("contiguous", memory_format)
    if fmt is None or fmt is _mf.contiguous_format:
        if self.is_contiguous():
            return self
        out = _numpy_contiguous(self)
        return out if out is not None else Clone.apply(self)
    if fmt is _mf.preserve_format or _mf.is_format(self._shape, self._strides, fmt):
        return self
    return Clone.apply(self, fmt)


class ToDtype(Function):
    _backward_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, dtype):
        ctx.dtype = x.dtype
        out = (empty(x._shape, dtype, x.device) if _plain(x) else
               empty_in_format(x._shape, dtype, x.device, _mf.preserve_format, x))
        copy_values(out, x)
        return out

    @staticmethod
    def backward(ctx, g):
        if g.dtype.is_complex and not ctx.dtype.is_complex:
            g = g.real                  # a real input gets the real part, without a warning
        return g.to(ctx.dtype), None


class ToDevice(Function):
    @staticmethod
    def forward(ctx, x, device, non_blocking):
        from .transfer import transfer
        ctx.device = x.device
        return transfer(x, device, non_blocking)

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.device), None, None


def _parse_to(args, kwargs):
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, _dtype.dtype):
            dtype = a
        elif a is not None:
            if isinstance(a, type) or isinstance(a, np.dtype):
                dtype = _dtype.to_dtype(a)
            else:
                device = a
    return dtype, device, kwargs


@tensor_method()
def to(self, *args, **kwargs):
    """Convert dtype and/or move to a device: ``t.to('cuda')``, ``t.to(torch.float64)``."""
    if not kwargs and len(args) == 1 and args[0].__class__ is _dtype.dtype:
        d = args[0]
        if d is self.dtype:
            return self
        if self.__class__ is Tensor:
            out = _unrecorded_cast(self, d)
            if out is not None:
                return out
    dtype, device, kwargs = _parse_to(args, kwargs)
    copy = kwargs.pop("copy", False)
    non_blocking = kwargs.pop("non_blocking", False)
    fmt = _mf.check_format("to", kwargs.pop("memory_format", None))
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    t = self
    if device is not None:
        dev = to_device(device)
        if dev != t.device:
            t = ToDevice.apply(t, dev, non_blocking)
            copy = False
    if dtype is not None:
        d = _dtype.to_dtype(dtype)
        if d is not t.dtype:
            t = ToDtype.apply(t, d)
            copy = False
    if copy:
        t = t.clone(memory_format=fmt)
    elif fmt is not None and fmt is not _mf.preserve_format:
        t = t.contiguous(memory_format=fmt)
    return t


def _unrecorded_cast(x, d):
    """x.to(d) for a plain C-contiguous CPU tensor under `_SMALL_COPY` elements and a
    `_safe_cast` to `d`, nothing to record or watch, nbtorch's own copy kernel: NumPy's
    astype (the values the launcher's cast writes) into a fresh tensor, skipping
    Function.apply and ToDtype's layers (8x16 float32 x.double() ~6.5 -> ~1.7 us). None
    where any of that does not hold."""
    shape = x._shape
    size, strides, numel = _LAYOUTS.get(shape) or _layout(shape)
    if (x.device is not CPU or x._strides != strides or not 0 < numel < _SMALL_COPY
            or not _safe_cast(x.dtype, d) or _watched(x)
            or _KERNELS.get(_COPY_CPU) is not _OWN.get(_COPY_CPU) and not _own(_COPY_CPU)):
        return None
    xa = x._arr
    data = (x._array if xa is None else xa).astype(d.np)
    return Tensor.__new__(Tensor)._init(
        Storage(data if len(size) == 1 else data.reshape(-1), CPU), 0, size, strides, d, data)


def _caster(d):
    def cast(self, memory_format=None):
        if self.dtype is d:             # what to() gives: this tensor itself
            return self
        if self.__class__ is Tensor:
            out = _unrecorded_cast(self, d)
            if out is not None:
                return out
        return self.to(d)
    cast.__doc__ = f"``self.to({d})``"
    return cast


for _name, _d in (("float", _dtype.float32), ("double", _dtype.float64),
                  ("half", _dtype.float16), ("bfloat16", _dtype.bfloat16),
                  ("long", _dtype.int64), ("int", _dtype.int32),
                  ("short", _dtype.int16), ("char", _dtype.int8), ("byte", _dtype.uint8),
                  ("bool", _dtype.bool)):
    setattr(Tensor, _name, _caster(_d))


@tensor_method()
def type_as(self, other):
    return self.to(other.dtype)


@tensor_method("type")
def type_(self, dtype=None, non_blocking=False):
    """The legacy type name ('torch.BFloat16Tensor', 'torch.cuda.FloatTensor'), or a cast."""
    if dtype is None:
        prefix = "torch.cuda." if self.device.type == "cuda" else "torch."
        return prefix + type_name(self.dtype) + "Tensor"
    from .._tensor_types import from_type
    legacy = from_type(dtype)               # torch.DoubleTensor, 'torch.cuda.LongTensor'
    if legacy is not None:
        return self.to(device=legacy[1] if legacy[1] != self.device.type else self.device,
                       dtype=legacy[0], non_blocking=non_blocking)
    if isinstance(dtype, str):
        raise ValueError(f"invalid type: '{dtype}'")
    return self.to(dtype)


@tensor_method()
def cpu(self, memory_format=None):
    return self.to("cpu")


@tensor_method()
def cuda(self, device=None, non_blocking=False, memory_format=None):
    dev = "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int)
                                         else device)
    return self.to(dev, non_blocking=non_blocking)


@tensor_method()
def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    from .creation import tensor
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


def _new(fn):
    def method(self, *size, dtype=None, device=None, requires_grad=False, **kw):
        from . import creation
        if "size" in kw:                 # new_zeros(size=(2, 3)), as PyTorch accepts
            if size:
                raise TypeError(f"new_{fn}() got multiple values for argument 'size'")
            size = (tuple(kw.pop("size")),)
        return getattr(creation, fn)(*size, dtype=dtype or self.dtype,
                                     device=device or self.device,
                                     requires_grad=requires_grad)
    method.__name__ = "new_" + fn
    return method


for _fn in ("empty", "zeros", "ones"):
    setattr(Tensor, "new_" + _fn, _new(_fn))


@tensor_method()
def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    from .creation import full
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


def check_same_device_copy(a, b):
    return check_same_device("copy_", a, b)
