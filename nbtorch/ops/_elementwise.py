"""The machinery every elementwise op shares: dispatch, dtype rules, out=, in-place.

An elementwise op is an autograd `Function` subclass of `Elementwise` that
names its scalar kernel (a body in `kernels/scalar.py`, listed in the table of
`kernels/elementwise.py` that registers it on every device) and its dtype rule,
and writes its backward beside the forward. `Elementwise` supplies:

- `compute(*args, out=None)`: the forward without autograd (also the raw path
  of the in-place form and of ``out=``),
- `forward`/`backward` for one-tensor ops with scalar parameters, where the
  subclass gives `grad(g, x, out, *params)` with nbtorch ops (so double
  backward works) and optionally a fused `grad_kernel` used when no graph of
  the backward is being recorded,
- `call(args, out)` and `inplace(self, args)`: the public function's and the
  Tensor method's bodies.
"""
import numpy as np

from .. import _dtype
from .._dtype import type_name
from .._conventions import native_out
from .._scalars import wrap
from .._tensor import Tensor, Storage, empty, _LAYOUTS, _layout
from .._registry import _KERNELS, get_kernel
from ..autograd import anomaly_mode, grad_mode
from ..autograd.function import (APPLY_WRAPPERS, Function, _apply_recorded,
                                  _detach_saved_outputs)
from ..autograd.saved_hooks import ACTIVE as SAVED_HOOKS, pack_saved
from ..autograd.graph import NO_EDGE, gradient_edge
from ._common import broadcast_shapes, result_device, sum_to
from ._output_layout import dense_order, output_strides, permuted
from .._memory_format import non_overlapping_and_dense
from ._elementwise_operands import (half_params, half_pointwise as _half_pointwise,
                                   has_half as _has_half, operand as _operand)
from .._overlap import check_no_internal_overlap, check_no_partial_overlap
from ._inplace import inplace_guard
from ._small_calls import (_MID_LIMIT, _QUIET_RUN, _SMALL, _SMALL_LIMIT, _SmallKeys,
                           _dense_into, _resolve_small,
                           _small_result, _ufunc_into)

__all__ = ["run_elementwise", "tensor_operator", "tensor_method", "Elementwise", "Binary",
           "unary_api", "native_out_of", "check_number", "promote", "shape_of", "float_dtype",
           "type_name", "NUMBER"]

NUMBER = (int, float, bool, complex, np.number, np.bool_)
_SCALAR_TYPES = frozenset((int, float, bool, complex))
_STATE = grad_mode.STATE
_EXACT_INT = 1 << 24      # ints up to this size are exact in float32 (and float64)
_ANOMALY = anomaly_mode.STATE
_new_tensor = Tensor.__new__


def shape_of(x):
    return x._shape if isinstance(x, Tensor) else ()


def _same_device(x, y):
    a, b = x.device, y.device
    return a is b or (a.type == b.type and a.index == b.index)


def run_elementwise(op, inputs, compute_dtype, out_dtype=None, out=None):
    """Run elementwise kernel `op` over broadcast `inputs` into a new (or given) tensor.

    Inputs (tensors or Python scalars) are cast to `compute_dtype` (or, given a
    tuple, each to its own dtype); the result has `out_dtype` (default:
    `compute_dtype`). With `out`, its shape must be the broadcast shape; a
    different dtype is written through a cast copy. This is every elementwise
    op's hot path, so the one- and two-operand cases skip the general checks.
    On the CPU, half operands (float16, bfloat16) compute in float32.
    """
    out_dtype = out_dtype or compute_dtype
    if compute_dtype.__class__ is not tuple and compute_dtype.limited:   # uint16-64, float8
        from .._limited import elementwise
        return elementwise(op, inputs, compute_dtype, out_dtype, out)
    x = inputs[0]
    n = len(inputs)
    if (out is None and n <= 2 and x.__class__ is Tensor and x.dtype is compute_dtype
            and not compute_dtype.is_half):
        # the hot path: one tensor, or two same-device tensors of one shape, or a tensor
        # and a Python number, all already of the compute dtype
        device = x.device
        xa = x._arr
        if xa is None:
            xa = x._array
        raw = False                     # args[1] a Python float, given to NumPy as is
        if n == 1:
            args = (xa,)
        else:
            y = inputs[1]
            cls = y.__class__
            if cls is float and compute_dtype.is_floating_point:
                # NumPy rounds it to the loop's dtype as wrap() would, ~110 ns sooner
                args, raw = (xa, y), True
            elif (cls is int and compute_dtype.is_floating_point
                  and -_EXACT_INT <= y <= _EXACT_INT):
                # x > 0, x + 1: an int every float dtype here holds exactly is that
                # float (float(y) ~40 ns, wrap ~300)
                args, raw = (xa, float(y)), True
            elif cls in _SCALAR_TYPES:
                args = (xa, wrap(y, compute_dtype))     # uint8_tensor + 300 wraps
            elif (cls is Tensor and y.dtype is compute_dtype and x._shape == y._shape
                  and (y.device is device or _same_device(x, y))):
                ya = y._arr
                args = (xa, y._array if ya is None else ya)
            else:
                args = None
        if args is not None:
            shape = x._shape
            size, strides, numel = _LAYOUTS.get(shape) or _layout(shape)
            if x._strides != strides or (n == 2 and y.__class__ is Tensor
                                         and y._strides != strides):
                args = None             # a strided input: the result may follow its layout
        if args is not None:
            if device.type != "cpu" or numel >= _SMALL_LIMIT or not numel:
                if (numel < _MID_LIMIT and numel and not raw and device.type == "cpu"
                        and (n == 1 or y.__class__ is Tensor)):
                    kernel = _KERNELS.get((op, "cpu")) or get_kernel(op, "cpu")
                    small = _SMALL.get((op, compute_dtype, out_dtype, n))
                    if small is None or small[0] is not kernel:
                        small = _resolve_small(op, kernel, compute_dtype, out_dtype, n)
                    if small[7]:
                        out = empty(shape, out_dtype, device)
                        _ufunc_into(small, args, out._array)
                        return out
                elif (numel >= _MID_LIMIT and device.type == "cpu"
                      and (n == 1 or raw or y.__class__ is Tensor)
                      and (len(shape) == 1 or shape[0] != 1)):
                    kernel = _KERNELS.get((op, "cpu")) or get_kernel(op, "cpu")
                    small = _SMALL.get((op, compute_dtype, out_dtype, n))
                    if small is None or small[0] is not kernel:
                        small = _resolve_small(op, kernel, compute_dtype, out_dtype, n)
                    dense = small[9] if raw else small[8]
                    if dense is not None:           # a large dense call: the split loop
                        if raw:
                            args = (xa, wrap(y, compute_dtype))
                        out = empty(shape, out_dtype, device)
                        dense(out._array, args)
                        return out
                if raw:
                    args = (xa, wrap(y, compute_dtype))
                out = empty(shape, out_dtype, device)
                if numel:
                    (_KERNELS.get((op, device.type)) or get_kernel(op, device.type))(
                        out._array, *args)
                return out
            # a small CPU call: the kernel's ufunc loop called directly (pre-resolved per
            # op and dtypes, checked against the registry), NumPy allocating the output
            kernel = _KERNELS.get((op, "cpu")) or get_kernel(op, "cpu")
            small = _SMALL.get((op, compute_dtype, out_dtype, n))
            if small is None or small[0] is not kernel:
                small = _resolve_small(op, kernel, compute_dtype, out_dtype, n)
            ufunc = small[1]
            if ufunc is not None and size:
                try:
                    if small[6] if raw else small[5]:
                        data = (_QUIET_RUN(ufunc, args[0], args[1]) if n == 2
                                else _QUIET_RUN(ufunc, args[0]))
                    else:
                        data = (_QUIET_RUN(ufunc, args[0], args[1], signature=small[2])
                                if n == 2 else _QUIET_RUN(ufunc, args[0], signature=small[2]))
                except RuntimeError:    # another thread is in the context: the path below
                    pass
                else:
                    return _new_tensor(Tensor)._init(
                        Storage(data if len(size) == 1 else data.reshape(-1), device), 0,
                        size, strides, out_dtype, data)
            if raw:
                args = (xa, wrap(y, compute_dtype))
            data = np.empty(numel, out_dtype.np)
            arr = data if len(size) == 1 else data.reshape(size)
            out = _new_tensor(Tensor)._init(Storage(data, device), 0, size, strides,
                                            out_dtype, arr)
            if ufunc is None:
                kernel(arr, *args)
            else:
                _ufunc_into(small, args, arr)
            return out
    given = out is not None
    if n == 1:
        device, shape = x.device, x._shape
    elif n == 2 and x.__class__ is Tensor and (
            (y := inputs[1]).__class__ in _SCALAR_TYPES
            or (y.__class__ is Tensor and x._shape == y._shape and _same_device(x, y))):
        device, shape = x.device, x._shape
    else:
        device = result_device(op, *inputs)
        shape = broadcast_shapes(*(shape_of(i) for i in inputs))
    if out is None:
        strides = output_strides(shape, inputs) if _any_strided(inputs) else None
        out = empty(shape, out_dtype, device)
        if strides is not None:         # the inputs' layout (see _output_layout)
            out = _new_tensor(Tensor)._init(out._storage, 0, out._shape, strides, out_dtype)
            _compute_permuted(op, inputs, compute_dtype, out_dtype, out, device)
            if (n <= 2 and device.type == "cpu" and compute_dtype is out_dtype
                    and compute_dtype.is_floating_point and not compute_dtype.is_half
                    and _SMALL.get((op, compute_dtype, out_dtype, n)) is None):
                # resolved here too, so that the next such call can skip these layers
                # (`_small_calls._permuted_result`, which reads the entry)
                _resolve_small(op, _KERNELS.get((op, "cpu")) or get_kernel(op, "cpu"),
                               compute_dtype, out_dtype, n)
            return out
    else:
        if out._shape != shape:
            raise RuntimeError(f"output with shape {list(out._shape)} doesn't match the "
                               f"broadcast shape {list(shape)}")
        if out.dtype is not out_dtype or not out.is_contiguous():
            if out.dtype is out_dtype and non_overlapping_and_dense(shape, out._strides):
                # a transposed or permuted out (x.t().mul_(2)): the loop runs in its order
                _compute_permuted(op, inputs, compute_dtype, out_dtype, out, device)
            else:
                # an overlapping or gapped out (out=base[:, 0]): the kernels write their
                # output densely, so the result is computed apart and copied in
                from .copy import raw_copy_
                return raw_copy_(out, run_elementwise(op, inputs, compute_dtype, out_dtype))
            out._bump()
            return out
    if given and n <= 2 and device.type == "cpu" and _dense_into(op, inputs, compute_dtype,
                                                               out_dtype, out):
        out._bump()
        return out
    _compute(op, inputs, compute_dtype, out_dtype, out, device)
    if given:
        out._bump()                     # an in-place write: saved copies must notice
    return out


def _any_strided(inputs):
    """True when some tensor input is not C-contiguous (its result may keep its layout)."""
    for i in inputs:
        if isinstance(i, Tensor):
            layout = _LAYOUTS.get(i._shape) or _layout(i._shape)
            if i._strides != layout[1]:
                return True
    return False


def _compute(op, inputs, compute_dtype, out_dtype, out, device):
    """Kernel `op` over `inputs` into the contiguous `out` of their broadcast shape."""
    if 0 in out._shape:
        return
    if device.type == "cpu" and _has_half(compute_dtype, out_dtype):
        _half_pointwise(op, inputs, compute_dtype, out, device)
        return
    x = inputs[0]
    if compute_dtype.__class__ is tuple:
        args = [_operand(i, d, device) for i, d in zip(inputs, compute_dtype)]
    elif len(inputs) == 1 and x.dtype is compute_dtype:
        args = (x._array,)
    else:
        args = [_operand(i, compute_dtype, device) for i in inputs]
    kernel = _KERNELS.get((op, device.type)) or get_kernel(op, device.type)
    kernel(out._array, *args)


def _compute_permuted(op, inputs, compute_dtype, out_dtype, out, device):
    """`_compute` into a dense but not C-ordered `out`: every operand viewed in the dim
    order that makes `out` C-contiguous, so the loop reads and writes in memory order."""
    shape = out._shape
    order = dense_order(shape, out._strides)
    ndim = len(shape)
    out_c = out._view(tuple(shape[d] for d in order), tuple(out._strides[d] for d in order))
    _compute(op, [permuted(i, order, ndim) for i in inputs], compute_dtype, out_dtype,
             out_c, device)


def tensor_operator(cls, generic):
    """The Python operator of binary op `cls` (``a + b``): `generic` (the operator through
    ``cls.apply``), with its most common small case answered first by `_small_result`: a
    contiguous floating CPU tensor with a tensor of its dtype, shape and layout or a Python
    float (or an int a float dtype holds exactly, as that float), nothing recorded. ``a + b``
    on one element 2.2 -> 1.5 us, ``a * 2.0`` 2.9 -> 1.7 (NumPy's own a + b: 0.3 us;
    PyTorch's 1.1 and 2.4). Everything else, and anything a
    wrapper or a swapped kernel must see, takes `generic`."""
    op = _SmallKeys(cls.kernel, 2)

    def operator(self, other):
        c = other.__class__
        if (c is int and -_EXACT_INT <= other <= _EXACT_INT and self.__class__ is Tensor
                and self.dtype.is_floating_point):
            c, value = float, float(other)  # x * 2: that float, as run_elementwise takes it
        else:
            value = other
        if ((c is Tensor or c is float) and self.__class__ is Tensor and not APPLY_WRAPPERS[0]
                and not (_STATE.enabled and (self._requires_grad
                                             or c is Tensor and other._requires_grad))):
            out = _small_result(op, self, value, c)
            if out is not None:
                return out
        return generic(self, other)
    operator.__name__ = generic.__name__
    return operator


def tensor_method(cls):
    """The Tensor method of unary op `cls` (``x.exp()``): ``cls.apply(x)``, with the small
    unrecorded case answered first by `_small_result` (x.exp() on one element 2.0 ->
    1.2 us; PyTorch 1.0) when the op's unrecorded call is run_elementwise alone
    (`cls._fast`)."""
    op = _SmallKeys(cls.kernel, 1)
    if not cls._fast:
        return lambda self: cls.apply(self)

    def method(self):
        if (self.__class__ is Tensor and not APPLY_WRAPPERS[0]
                and not (_STATE.enabled and self._requires_grad)):
            out = _small_result(op, self, None, None)
            if out is not None:
                return out
        return cls.apply(self)
    return method


def promote(a, b):
    """`_dtype.result_type(a, b)`, with the common cases (same-dtype tensors, a float
    tensor and a float, a numeric tensor and an int) answered without the general rules."""
    if a.__class__ is Tensor:
        d = a.dtype
        cls = b.__class__
        if cls is Tensor:
            if b.dtype is d:
                return d
        elif cls is float:
            if d.is_floating_point:
                return d
        elif cls is int and d.category:          # int or float tensor (not bool)
            return d
    return _dtype.result_type(a, b)


def check_number(op, x, name="other"):
    """TypeError like PyTorch's when an operand is neither a Tensor nor a number."""
    if not isinstance(x, (Tensor,) + NUMBER):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor or Number, not "
                        f"{type(x).__name__}")


def float_dtype(dtype):
    """Integer and bool inputs of floating ops compute in the default float dtype (complex
    ones stay complex)."""
    return dtype if dtype.is_floating_point or dtype.is_complex else \
        _dtype.get_default_dtype()


class Elementwise(Function):
    """Base of the elementwise ops: one tensor `x` and scalar parameters by default.

    Subclasses set `kernel` (scalar body name), `result` ('same', 'float' for
    ops that make ints float, 'float_only' to refuse ints, 'bool'), `save`
    ('x', 'out', 'both' or '') and a static `grad(g, x, out, *params)`.
    """

    kernel = None
    result = "same"
    _untracked_compute = True   # Function.apply calls compute() when nothing is recorded
    save = "x"
    grad_kernel = None          # fused (g, saved) -> grad body for first-order backward
    _keeps_float = False        # see __init_subclass__

    @classmethod
    def result_dtype(cls, x, *params):
        d = x.dtype
        rule = cls.result
        if rule == "same":
            return d
        if rule == "bool":
            return _dtype.bool
        if rule == "float_only" and not d.is_floating_point:
            raise NotImplementedError(f'"{cls.kernel}" not implemented for \'{type_name(d)}\'')
        return float_dtype(d)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # True when the op's dtype rule is the base one and keeps a floating dtype as is
        # (every rule but 'bool'): compute() then skips result_dtype for float operands
        # (or one a subclass marks `_float_result_is_input`: its own rule, for non-float
        # operands only - bool squares to int64, -bool raises)
        owner = next(k for k in cls.__mro__ if "result_dtype" in k.__dict__)
        cls._keeps_float = ((owner.__module__ == __name__
                             or "_float_result_is_input" in owner.__dict__)
                            and cls.result != "bool")
        # True when, on floating operands of one dtype, compute() is run_elementwise
        # alone (the base compute, or one a subclass marks `_plain_compute`): `apply`
        # then calls it directly
        owner = next(k for k in cls.__mro__ if "compute" in k.__dict__)
        cls._fast = (cls._keeps_float and cls._untracked_compute
                     and (owner.__module__ == __name__ or "_plain_compute" in owner.__dict__))
        # and when its forward is the base one: a recorded call is then `_record_fast`
        # (1 with Elementwise's forward: x and number parameters; 2 with Binary's)
        owner = next(k for k in cls.__mro__ if "forward" in k.__dict__)
        cls._record_fast = (0 if not cls._fast or owner.__module__ != __name__ else
                            2 if owner.__name__ == "Binary" else 1)

    @classmethod
    def apply(cls, *args, **kwargs):
        """`Function.apply` (whose wrappers, a graph capture's or the profiler's, see
        every call), with the calls that record nothing answered first: floating
        operands of one dtype go straight to `run_elementwise`. This is every
        elementwise op's and operator's entry."""
        if APPLY_WRAPPERS[0] or not cls._fast:
            return Function.apply.__func__(cls, *args, **kwargs)
        state = _STATE
        if state.enabled:
            for a in args:
                if isinstance(a, Tensor) and a._requires_grad:
                    kind = cls._record_fast
                    if kind and not kwargs and not _ANOMALY.enabled:
                        d = _fast_dtype(args, kind)
                        if d is not None:
                            return _record_fast(cls, args, d, kind)
                    return _apply_recorded(cls, args, kwargs, state)
        x = args[0]
        if not kwargs and x.__class__ is Tensor:
            d = x.dtype
            if d.is_floating_point and not d.is_half:
                if len(args) == 1:
                    return run_elementwise(cls.kernel, args, d)
                if len(args) == 2:
                    y = args[1]
                    c = y.__class__
                    if (c is Tensor and y.dtype is d) or c is float or c is int:
                        return run_elementwise(cls.kernel, args, d)
        return cls.compute(*args, **kwargs) if kwargs else cls.compute(*args)

    @classmethod
    def compute(cls, x, *params, out=None):
        if not params and cls._keeps_float and x.__class__ is Tensor \
                and x.dtype.is_floating_point:
            return run_elementwise(cls.kernel, (x,), x.dtype, None, out)
        d = cls.result_dtype(x, *params)
        if params:
            params = half_params(d, params)
        return run_elementwise(cls.kernel, (x,) + params, d, out=out)

    @staticmethod
    def forward(ctx, x, *params):
        cls = ctx._forward_cls
        out = cls.compute(x, *params)
        if True not in ctx.needs_input_grad:
            return out                  # nothing will be recorded: skip the bookkeeping
        save = cls.save
        if save:                        # save_for_backward, inlined (the tensors are ours)
            ctx._saved = ((x, x._storage.version) if save != "out" else None,
                          (out, out._storage.version) if save != "x" else None)
        ctx.params = params
        return out

    @staticmethod
    def backward(ctx, g):
        if g.dtype.is_complex:
            return _holomorphic(Elementwise._real_backward, ctx, g)
        return Elementwise._real_backward(ctx, g)

    @staticmethod
    def _real_backward(ctx, g):
        cls = ctx._forward_cls
        # the fused grad kernel serves a first-order backward (and a graph capture's,
        # which never differentiates its record again); create_graph needs the formula
        if (cls.grad_kernel is not None and (not _STATE.enabled or _STATE.first_order)
                and not g.dtype.is_complex):
            saved = ctx._saved_data(1 if cls.save == "out" else 0)
            gx = run_elementwise(cls.grad_kernel, (g, saved) + tuple(ctx.params), g.dtype)
        else:
            x, out = ctx.saved_tensors if cls.save else (None, None)
            gx = cls.grad(g, x, out, *ctx.params)
        return (gx,) + (None,) * len(ctx.params)

    @staticmethod
    def grad(g, x, out, *params):
        raise NotImplementedError

    @classmethod
    def call(cls, args, out=None):
        """The public function's body: `apply`, or `compute` into a given `out`."""
        if out is None:
            return cls.apply(*args)
        if _STATE.enabled and any(isinstance(a, Tensor) and a._requires_grad for a in args):
            raise RuntimeError(f"{cls.kernel}(): functions with out=... arguments don't "
                               "support automatic differentiation, but one of the arguments "
                               "requires grad.")
        cls.compute(*args, out=out)
        out._bump()
        return out

    @classmethod
    def inplace(cls, self, args, kwargs=None):
        """The in-place Tensor method's body: checks, then the raw kernel or autograd."""
        if not kwargs and getattr(cls, "_fast", False) and self.__class__ is Tensor:
            done = _inplace_fast(cls, self, args)
            if done is not None:
                return done
        kwargs = kwargs or {}
        shape = broadcast_shapes(*(shape_of(a) for a in args if isinstance(a, Tensor)))
        if shape != self._shape:
            raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the "
                               f"broadcast shape {list(shape)}")
        d = cls.result_dtype(*args, **kwargs)
        if d is not self.dtype and not _dtype.can_cast(d, self.dtype):
            raise RuntimeError(f"result type {type_name(d)} can't be cast to the desired "
                               f"output type {type_name(self.dtype)}")

        def raw():
            cls.compute(*args, out=self, **kwargs)
            self._bump()
        return inplace_guard(self, cls, args, raw, kwargs)


def _inplace_fast(cls, self, args):
    """`x.op_(y)` in its common case, the way `run_elementwise`'s small path runs `x op y`:
    x a floating (not half) CPU tensor, y a Python number or a tensor of x's dtype, shape
    and device, nothing to record. Writes x and bumps its version; None when the case does
    not apply (the general path then does it all). x.add_(1) on one element: 9 -> 3.3 us."""
    d = self.dtype
    if (self.device.type != "cpu" or not d.is_floating_point or d.is_half or d.limited
            or APPLY_WRAPPERS[0] or len(args) > 2):
        return None
    y = args[1] if len(args) == 2 else None
    c = y.__class__
    if c is Tensor:
        if y.dtype is not d or y._shape != self._shape or y.device is not self.device:
            return None
    elif y is not None and c is not float and c is not int:
        return None
    if _STATE.enabled and (self._requires_grad or (c is Tensor and y._requires_grad) or (
            self._base is not None and self._base._requires_grad)):
        return None
    check_no_internal_overlap(self)
    if c is Tensor:
        check_no_partial_overlap(self, (y,))
    xa = self._arr if self._arr is not None else self._array
    if y is None:
        operands = (xa,)
    elif c is Tensor:
        operands = (xa, y._arr if y._arr is not None else y._array)
    else:
        operands = (xa, y if c is float else wrap(y, d))
    op = cls.kernel
    kernel = _KERNELS.get((op, "cpu")) or get_kernel(op, "cpu")
    if xa.size < _SMALL_LIMIT:
        small = _SMALL.get((op, d, d, len(operands)))
        if small is None or small[0] is not kernel:
            small = _resolve_small(op, kernel, d, d, len(operands))
        if small[1] is not None:
            _ufunc_into(small, operands, xa)
            self._bump()
            return self
    if operands[-1].__class__ is float:
        operands = (xa, wrap(operands[1], d))
    if not xa.flags.c_contiguous and non_overlapping_and_dense(self._shape, self._strides):
        # x.t().mul_(2): the loop runs in x's memory order (a Numba ufunc loop runs in
        # the output's index order, transposing here)
        order = dense_order(self._shape, self._strides)
        xa = xa.transpose(order)
        operands = tuple(a.transpose(order) if a.__class__ is np.ndarray else a
                         for a in operands)
    if xa.size:
        kernel(xa, *operands)
    self._bump()
    return self


def _fast_dtype(args, kind):
    """The dtype of a recorded call `_record_fast` may run: a floating (not half) tensor
    with, for a binary op (`kind` 2), a tensor of its dtype or a Python number, for a
    unary one (1), Python-number parameters."""
    x = args[0]
    if not isinstance(x, Tensor):
        return None
    d = x.dtype
    if not d.is_floating_point or d.is_half:
        return None
    if kind == 1:
        for p in args[1:]:
            if p.__class__ is not float and p.__class__ is not int:
                return None
        return d
    if len(args) == 2:
        y = args[1]
        c = y.__class__
        if c is float or c is int or (isinstance(y, Tensor) and y.dtype is d):
            return d
    return None


def _record_fast(cls, args, d, kind):
    """A recorded call of an op with the base forward (Elementwise's or Binary's) on
    floating operands of dtype `d`: what Function.apply does - the forward with its
    saves, then `_record` - in one step, for a single fresh output (run_elementwise
    records nothing, so grad mode is left as it is). Every recorded elementwise op of a
    training step comes here."""
    ctx = cls._backward_cls()
    out = run_elementwise(cls.kernel, args, d)
    a = args[0]
    save = cls.save
    if a._requires_grad:
        fn = a.grad_fn
        edge_a = (fn, a._output_nr) if fn is not None else gradient_edge(a)
        meta_a = (a._shape, d, a.device)
    else:
        edge_a, meta_a = NO_EDGE, None
    if kind == 1:                       # Elementwise.forward's saves
        n = len(args)
        ctx.params = args[1:]
        ctx.needs_input_grad = (True,) + (False,) * (n - 1)
        ctx.next_functions = (edge_a,)
        ctx._input_meta = (meta_a,)
        if n > 1:
            ctx._arg_pos = (0,)
        saves_out = save and save != "x"
        if save:
            ctx._saved = ((a, a._storage.version) if save != "out" else None,
                          (out, out._storage.version) if saves_out else None)
    else:                               # Binary.forward's
        ctx.params = ()
        b = args[1]
        tb = isinstance(b, Tensor)
        save = cls._save_table[meta_a is not None][tb and b._requires_grad]
        saves_out = save and "out" in save
        ctx.shapes = (a._shape, b._shape if tb else ())
        if save:
            ctx.scalars = (None, None if tb else b)
            ctx._saved = ((a, a._storage.version) if "a" in save else None,
                          (b, b._storage.version) if tb and "b" in save else None,
                          (out, out._storage.version) if "out" in save else None)
        if not tb:
            ctx.needs_input_grad = (meta_a is not None, False)
            ctx.next_functions = (edge_a,)
            ctx._input_meta = (meta_a,)
            ctx._arg_pos = (0,)
        elif b._requires_grad:
            fn = b.grad_fn
            ctx.needs_input_grad = (meta_a is not None, True)
            ctx.next_functions = (edge_a, (fn, b._output_nr) if fn is not None
                                  else gradient_edge(b))
            ctx._input_meta = (meta_a, (b._shape, d, b.device))
        else:
            ctx.needs_input_grad = (meta_a is not None, False)
            ctx.next_functions = (edge_a, NO_EDGE)
            ctx._input_meta = (meta_a, None)
    ctx._output_meta = ((out._shape, d, out.device),)
    out.grad_fn = ctx
    out._requires_grad = True
    if saves_out:
        _detach_saved_outputs(ctx)      # no out -> node -> out cycle
    if SAVED_HOOKS[0] and save:
        pack_saved(ctx)
    return out


class Binary(Elementwise):
    """Base of ops over two broadcast operands (tensors or scalars) and parameters.

    `grad(ctx, g, a, b, out, *params)` returns (grad_a, grad_b) at the broadcast
    shape; `backward` sums them back to each input's shape. `save` lists what
    `grad` needs among 'a', 'b', 'out' (scalars are always available); `saves(need_a,
    need_b)` narrows it to what the gradients asked for need, as PyTorch saves (x * 2.0
    keeps no tensor, so writing into x afterwards is no error).
    """

    save = "ab"

    @classmethod
    def saves(cls, need_a, need_b):
        return cls.save

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)     # saves() tabulated: a per-call index, no call
        cls._save_table = tuple(tuple(cls.saves(a, b) for b in (False, True))
                                for a in (False, True))

    @classmethod
    def result_dtype(cls, a, b, *params):
        d = promote(a, b)
        rule = cls.result
        if rule == "same":
            return d
        if rule == "bool":
            return _dtype.bool
        if rule == "float_only" and not d.is_floating_point:
            raise NotImplementedError(f'"{cls.kernel}" not implemented for \'{type_name(d)}\'')
        return float_dtype(d)

    @classmethod
    def compute(cls, a, b, *params, out=None):
        if not params and cls._keeps_float and a.__class__ is Tensor:
            d = a.dtype                 # promote()'s fast cases, for a floating `a`
            if d.is_floating_point and (b.__class__ is Tensor and b.dtype is d
                                        or b.__class__ is float or b.__class__ is int):
                return run_elementwise(cls.kernel, (a, b), d, None, out)
        d = cls.result_dtype(a, b, *params)
        cd = promote(a, b) if cls.result == "bool" else d
        if params:
            params = half_params(cd, params)
        return run_elementwise(cls.kernel, (a, b) + params, cd, d, out=out)

    @staticmethod
    def forward(ctx, a, b, *params):
        cls = ctx._forward_cls
        out = cls.compute(a, b, *params)
        if True not in ctx.needs_input_grad:
            return out                  # nothing will be recorded: skip the bookkeeping
        ctx.params = params
        ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
        ctx.shapes = (a._shape if ta else (), b._shape if tb else ())
        need = ctx.needs_input_grad
        save = cls._save_table[need[0]][need[1]]
        if save:
            ctx.scalars = (None if ta else a, None if tb else b)
            ctx._saved = (                      # save_for_backward, inlined
                (a, a._storage.version) if ta and "a" in save else None,
                (b, b._storage.version) if tb and "b" in save else None,
                (out, out._storage.version) if "out" in save else None)
        return out

    @staticmethod
    def backward(ctx, g):
        if g.dtype.is_complex:
            return _holomorphic(Binary._real_backward, ctx, g)
        return Binary._real_backward(ctx, g)

    @staticmethod
    def _real_backward(ctx, g):
        cls = ctx._forward_cls
        if cls.save:
            a, b, out = ctx.saved_tensors
            sa, sb = ctx.scalars
            a = sa if a is None else a
            b = sb if b is None else b
        else:
            a = b = out = None
        ga, gb = cls.grad(ctx, g, a, b, out, *ctx.params)
        need = ctx.needs_input_grad
        shape_a, shape_b = ctx.shapes
        return ((sum_to(ga, shape_a) if need[0] and ga is not None else None,
                 sum_to(gb, shape_b) if need[1] and gb is not None else None)
                + (None,) * len(ctx.params))


def _holomorphic(real_backward, ctx, g):
    """A complex gradient through a holomorphic op, PyTorch's convention: g * conj(f'(z)),
    which is conj(formula(conj(g))) for the real formula g * f'(x) (see ops/complex.py)."""
    from .complex import conj
    grads = real_backward(ctx, conj(g))
    return tuple(conj(t) if isinstance(t, Tensor) else t for t in grads)


def native_out_of(cls):
    """A decorator marking a public function of op `cls` `native_out` (it writes a plain
    `out=` itself) when the op keeps a floating input's dtype."""
    return lambda fn: native_out(fn) if cls._keeps_float else fn


def unary_api(cls, name, doc, methods=True, inplace=True):
    """The public function `name(input, *, out=None)` of unary op `cls`, plus Tensor methods."""
    method = tensor_method(cls)

    def fn(input, *, out=None):
        return method(input) if out is None else cls.call((input,), out)
    if cls._keeps_float:                # a floating result of the input's dtype
        native_out(fn)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    if methods:
        setattr(Tensor, name, method)
        getattr(Tensor, name).__doc__ = doc
    if inplace:
        def method_(self):
            return cls.inplace(self, (self,))
        method_.__name__ = name + "_"
        setattr(Tensor, name + "_", method_)
    return fn
