"""Pre-resolved NumPy ufunc calls for small CPU tensors: the elementwise ops' fast path.

Below `_SMALL_LIMIT` elements a kernel call's own checks (threads, SIMD, layouts) cost
more than the arithmetic, so an op whose CPU kernel is a NumPy ufunc (`kernels/cpu/
ufuncs.py`) is called as that ufunc directly, with its loop resolved once per op and dtype
(`_SMALL`) and NumPy's floating-point errors ignored as the kernels do: the same loop, so
the same bits. `run_elementwise` uses the entries inline; `_small_result` answers a whole
unrecorded ``a + b`` / ``x.exp()`` before any other layer runs.
"""
import numpy as np

from .._memory_format import non_overlapping_and_dense
from .._registry import _KERNELS, get_kernel
from .._scalars import wrap
from .._tensor import Tensor, Storage, _LAYOUTS, _layout, empty

_new_tensor = Tensor.__new__


def _quiet_run():
    """`run(fn, *args, **kw)`: fn called in a context of its own where NumPy ignores
    floating-point errors (PyTorch never warns about inf or nan results). Entering a
    context costs ~20 ns where setting and resetting NumPy's error state costs ~150;
    a context is entered by one thread at a time (RuntimeError in another)."""
    try:
        from numpy._core.umath import _extobj_contextvar, _make_extobj
    except ImportError:  # pragma: no cover - other NumPy versions: no small-call path
        return None
    import contextvars
    ctx = contextvars.Context()
    ctx.run(_extobj_contextvar.set, _make_extobj(all="ignore"))
    return ctx.run

_SMALL = {}     # (op, compute dtype, out dtype, operands) -> pre-resolved CPU ufunc call
_SMALL_LIMIT = 1 << 12  # elements; larger calls take the kernel's own checks (threads, SIMD)
_QUIET_RUN = _quiet_run()
# Dense same-shape tensor operands up to here (the kernels' serial range) take the same
# pre-resolved ufunc call into an allocated output, where the op has no SIMD loop of its
# own (`_SMALL` entry [7]): the kernel would make that very call after its checks
# (16K float32 mul 7.4 -> ~5 us); scalar operands keep the kernel's blocked loop. From
# here such calls take the kernel's split path directly (`_SMALL` entry [8]).
_MID_LIMIT = 1 << 17


def _small_result(op, x, y, c):
    """run_elementwise's small CPU call for unrecorded `op` (its `_SmallKeys`) on a
    contiguous floating tensor `x` under `_SMALL_LIMIT` elements and `y` (None for a unary
    op, a Python float, or a tensor of x's dtype, shape and layout: `c` is its class; one
    of two tensors may be a single value broadcast, as the gradient of a sum is), skipping
    the layers between (the same pre-resolved ufunc call, so the same bits); None where any
    of that, or the call's resolution, does not hold. The caller has checked that nothing
    is recorded and no wrapper (graph capture, profiler) is installed."""
    d = x.dtype
    small = op.by_dtype.get(d)
    kernel = _KERNELS.get(op.kernel_key)
    if small is None or small[0] is not kernel:         # first call, or a swapped kernel
        small = _SMALL.get((op.name, d, d, op.n))
        if small is None or small[0] is not kernel:     # (a user's kernel runs itself)
            return None
        op.by_dtype[d] = small
    if small[1] is None or not d.is_floating_point:
        return None
    shape = x._shape
    layout = _LAYOUTS.get(shape) or _layout(shape)
    xa, device = x._arr, x.device
    if not 0 < layout[2] < _SMALL_LIMIT or device.type != "cpu":
        if layout[2] >= _MID_LIMIT and device.type == "cpu":
            return _dense_result(small, x, y, c, shape, layout[1], xa)
        return None
    strides = layout[1]
    if c is Tensor:
        if (y.dtype is not d or y._shape != shape
                or not (y.device is device or y.device == device)):
            return None
        ya = y._arr
        if x._strides != strides or xa is None:
            # one value broadcast (a reduction's gradient, `g.expand(shape)`) with a dense
            # tensor: the value as a NumPy scalar, as the loop would read it every time
            if y._strides != strides or ya is None:
                return None
            xa = _broadcast_value(x)
        elif y._strides != strides or ya is None:
            ya = _broadcast_value(y)
        if xa is None or ya is None:
            return None
        y = ya
    elif x._strides != strides or xa is None:
        return None
    try:
        if small[6] if c is float else small[5]:
            data = _QUIET_RUN(small[1], xa) if y is None else _QUIET_RUN(small[1], xa, y)
        else:
            data = (_QUIET_RUN(small[1], xa, signature=small[2]) if y is None else
                    _QUIET_RUN(small[1], xa, y, signature=small[2]))
    except RuntimeError:                # another thread is in the context: the layers
        return None
    size = layout[0]
    if not size:                # 0-d operands: the ufunc returned a NumPy scalar, not a view
        data = np.asarray(data)
    return _new_tensor(Tensor)._init(
        Storage(data if len(size) == 1 else data.reshape(-1), device), 0, size, layout[1],
        d, data)


def _dense_result(small, x, y, c, shape, strides, xa):
    """`_small_result`'s large case: contiguous same-shape tensor operands from `_MID_LIMIT`
    elements run the kernel's split path (`ufuncs.dense_call`, the `_SMALL` entry [8]
    run_elementwise would call for them) into a fresh tensor, skipping the layers between
    (a 10^6-element float32 add's Python: 7.0 -> 5.6 us, and after the kernel has streamed
    12 MB through the caches, 14.2 -> 12.8); a tensor and a Python float (``x * 0.5``)
    take the kernel's one-value loop (`ufuncs.dense_value_call`, entry [9]) with the value
    as run_elementwise gives it to the kernel (`wrap`). None where neither applies."""
    dense = small[9] if c is float else small[8]
    if dense is None:
        return None
    if x._strides != strides:
        return _permuted_result(dense, x, y, c, shape)
    if xa is None:
        return None
    if len(shape) > 1 and shape[0] == 1:                # a (1, ..., n) result: rows.py's
        return None
    if c is float:
        args = (xa, wrap(y, x.dtype))
    elif c is Tensor:
        ya = y._arr
        if (ya is None or y.dtype is not x.dtype or y._shape != shape
                or y._strides != strides or not (y.device is x.device or y.device == x.device)):
            return None
        args = (xa, ya)
    else:
        args = (xa,)
    out = empty(shape, x.dtype, x.device)
    dense(out._array, args)
    return out


def _dense_into(op, inputs, compute_dtype, out_dtype, out):
    """The hot path's large dense call (the kernel's split loop, `_SMALL` entry [8], or
    [9] for a tensor and a Python float) into a given C-contiguous `out` sharing no memory
    with the inputs (``add(a, b, out=o)``: 10^6 float32 96 -> 83 us; the general path
    found the same loop through ~30 more Python calls). False where that does not hold
    (an `out` that is an input runs the in-place loops of the general path)."""
    x = inputs[0]
    shape = out._shape
    if (x.__class__ is not Tensor or x.dtype is not compute_dtype
            or compute_dtype.is_half or x._shape != shape
            or (len(shape) > 1 and shape[0] == 1)):
        return False
    size, strides, numel = _LAYOUTS.get(shape) or _layout(shape)
    if numel < _MID_LIMIT or out._strides != strides or x._strides != strides:
        return False
    oa, xa = out._array, x._array
    raw = False
    if len(inputs) == 1:
        args = (xa,)
    else:
        y = inputs[1]
        if y.__class__ is float and compute_dtype.is_floating_point:
            args, raw = (xa, wrap(y, compute_dtype)), True
        elif (y.__class__ is Tensor and y.dtype is compute_dtype and y._shape == shape
              and y._strides == strides and (y.device is x.device or y.device == x.device)):
            args = (xa, y._array)
            if np.may_share_memory(args[1], oa):
                return False
        else:
            return False
    if np.may_share_memory(xa, oa):
        return False
    kernel = _KERNELS.get((op, "cpu")) or get_kernel(op, "cpu")
    small = _SMALL.get((op, compute_dtype, out_dtype, len(inputs)))
    if small is None or small[0] is not kernel:
        small = _resolve_small(op, kernel, compute_dtype, out_dtype, len(inputs))
    dense = small[9] if raw else small[8]
    if dense is None:
        return False
    dense(oa, args)
    return True


def _permuted_result(dense, x, y, c, shape):
    """`_dense_result` for operands laid out alike in a dense order other than C's (``x.t()
    + x.t()``, ``x.t().exp()``, a permuted batch): the loop runs over their memory as flat
    arrays and the result keeps their strides, as run_elementwise's layout rule gives it
    (1024x512 float32 ``x.t() + x.t()``: 61 -> ~35 us, PyTorch 30); an elementwise loop's
    bits do not depend on the order. None where the layouts differ or are not dense."""
    strides = x._strides
    if not non_overlapping_and_dense(shape, strides):
        return None
    numel = _LAYOUTS[shape][2]
    xf = _memory(x, numel)
    if xf is None:
        return None
    if c is float:
        args = (xf, wrap(y, x.dtype))
    elif c is Tensor:
        if (y.dtype is not x.dtype or y._shape != shape or y._strides != strides
                or not (y.device is x.device or y.device == x.device)):
            return None
        yf = _memory(y, numel)
        if yf is None:
            return None
        args = (xf, yf)
    else:
        args = (xf,)
    data = empty((numel,), x.dtype, x.device)
    dense(data._array, args)
    return _new_tensor(Tensor)._init(data._storage, 0, shape, strides, x.dtype)


def _memory(t, numel):
    """The `numel` elements of dense tensor `t` (all strides positive) as a 1-D array in
    memory order, or None where its storage is not an array of its dtype."""
    data = t._storage.data
    if data.dtype is not t.dtype.np:
        return None
    return data[t._offset:t._offset + numel]


class _SmallKeys:
    """`_small_result`'s keys of one op and arity, made once per operator or method: its
    `_SMALL` entries by dtype and its `_KERNELS` key (no tuple built per call)."""

    __slots__ = ("name", "n", "kernel_key", "by_dtype")

    def __init__(self, name, n):
        self.name, self.n, self.kernel_key, self.by_dtype = name, n, (name, "cpu"), {}


def _broadcast_value(t):
    """The single value that CPU tensor `t` repeats (every stride 0: an expanded scalar), as
    a NumPy scalar of its dtype; None for any other layout."""
    for s in t._strides:
        if s:
            return None
    data = t._storage.data
    return data[t._offset] if data.dtype is t.dtype.np else None


def _ufunc_into(small, args, out):
    """The pre-resolved small call (a `_SMALL` entry) of one or two operands, writing `out`,
    with NumPy's floating-point errors ignored (positional operands: `*args` costs ~0.3 us)."""
    _, ufunc, types, errstate, ignore = small[:5]
    token = errstate.set(ignore)
    try:
        if len(args) == 2:
            ufunc(args[0], args[1], out, signature=types)
        else:
            ufunc(args[0], out, signature=types)
    finally:
        errstate.reset(token)


def _resolve_small(op, kernel, compute_dtype, out_dtype, n):
    """The `_SMALL` entry of a CPU kernel: (kernel, ufunc, types, NumPy's error-state
    variable, its 'ignore all' value, two `_picks`, whether dense same-shape calls under
    `_MID_LIMIT` are that ufunc call too, the kernel's own path for such calls from
    `_MID_LIMIT` (`ufuncs.dense_call`, or None), and its path for such a tensor and one
    value (`ufuncs.dense_value_call`, or None)); ufunc is None where the kernel must be
    called (a user's kernel, or a first call that compiles the loop: not cached then)."""
    from ..kernels.cpu import ufuncs
    types = compute_dtype.np.char * n + "->" + out_dtype.np.char
    found = ufuncs.small_call(kernel, types)
    entry = (kernel, None, None, None, None, False, False, False, None, None) if found is None else (
        kernel, found[0], found[1], ufuncs.ERRSTATE, ufuncs.IGNORE,
        _picks(found[0], types, False), n == 2 and _picks(found[0], types, True),
        ufuncs.serial_is_ufunc(kernel, types) and ufuncs.PARALLEL_THRESHOLD >= _MID_LIMIT,
        ufuncs.dense_call(kernel, types) if ufuncs.PARALLEL_THRESHOLD <= _MID_LIMIT else None,
        ufuncs.dense_value_call(kernel, types)
        if n == 2 and ufuncs.PARALLEL_THRESHOLD <= _MID_LIMIT else None)
    if found is not None or getattr(kernel, "ufunc_name", None) is None:
        _SMALL[(op, compute_dtype, out_dtype, n)] = entry
    return entry


def _picks(ufunc, types, weak_float):
    """True when NumPy's own loop choice for operands of `types`' input dtypes (the second a
    Python float with `weak_float`) is the `types` loop, so a small call may leave out
    ``signature=`` (~40 ns). Loops added to the ufunc later go after this one, so the
    first match - the one chosen - stays."""
    ins, out = types.split("->")
    dtypes = [np.dtype(c) for c in ins]
    if weak_float:
        dtypes[1] = float
    try:
        got = ufunc.resolve_dtypes(tuple(dtypes) + (None,) * len(out))
    except Exception:                   # older NumPy, or no loop for these without a cast
        return False
    return [g.char for g in got] == list(ins + out)
