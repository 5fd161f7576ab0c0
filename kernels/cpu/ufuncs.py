"""Elementwise CPU kernels: the scalar bodies of `kernels/scalar.py` as Numba ufuncs.

``kernel(name)`` returns the CPU kernel of one op, called as
``kernel(out, *args)`` with NumPy arrays (or NumPy scalars) of any layout::

    for every index i of out (broadcasting args):   out[i] = scalar.<name>(*args[i])

Each scalar body becomes one ``numba.vectorize(cache=True)`` DUFunc; a loop for
an exact type signature (e.g. ``'ff->f'``) is added on first use with
``DUFunc.add`` and then loaded from Numba's on-disk cache in later runs, so
only the (op, dtype) pairs a program uses are ever compiled. Calls pass
``signature=`` so NumPy never picks a wider loop (a float32 call must not run
the float64 loop through casting buffers).

Large calls whose operands are flat (out C-contiguous, each input of out's shape
and C-contiguous, or one element) run the ufunc's own C loop, found by address, in
chunks on Numba's OpenMP threads (`loop_threads.py`: no GIL hand-off; one compiled
launcher for every op). Other layouts are split along one axis into a few chunks per
CPU core, claimed by the calling thread and the helper threads of `workers.py` as
each becomes free (NumPy releases the GIL inside ufunc loops; a helper's wake-up and
GIL hand-off cost tens of us). Only where it pays: each kind of call (a loop and a
size class) from `PARALLEL_THRESHOLD` elements runs serially first, and parallel calls
that do not beat that pace back off for a while (`workers.py`): on a busy machine the
threads are starved of CPU, and small calls do not cover the hand-off. float16 (which
Numba lacks) computes in float32. Floating-point warnings are silenced, as PyTorch
does not warn.

The costly float32 bodies (exp, log, log1p, tanh, sigmoid, the GELUs, SiLU,
Mish, softplus, and the GELU/SiLU gradients) have a second path: from
`CONTIGUOUS_THRESHOLD` elements up, when every operand is C-contiguous with
out's shape (no broadcasting, no partial overlap; parameters 0-d), they run
the flat `@njit` loops of `contiguous.CONTIGUOUS_LOOPS` (512-bit SIMD, output
prefetching; 1.2-2.5x the ufunc's speed, same bits), split over Numba's threads
through their C twins (`contiguous_abi.py`). The cheapest bodies (add, sub, mul, div,
relu), bound by the caches' bandwidth, split over the helpers in 256-bit loops of their
own (`stream.py`).
"""
import threading

import numba
import numpy as np

from nbtorch.kernels import scalar
from nbtorch.kernels.cpu import contiguous, contiguous_abi, inplace, loop_threads, openmp, rows
from nbtorch.kernels.cpu import scalar_operand, spin_threads, stream
from nbtorch.kernels.cpu import workers
from nbtorch.kernels.cpu.workers import (parallel_chunks, record_parallel, record_serial,
                                         timed, use_helpers)
from nbtorch.kernels.scalar_complex import COMPLEX as _COMPLEX

__all__ = ["kernel", "get", "loop", "compiled_signatures", "small_call", "PARALLEL_THRESHOLD",
           "CONTIGUOUS_THRESHOLD"]

PARALLEL_THRESHOLD = 1 << 17     # elements; below it a thread hand-off costs more than it saves
_DIRECT = not numba.config.DISABLE_JIT   # C loops callable by address (intrinsics compile)
BLOCKED_MIN = 1 << 14           # elements; see _call_serial (float32 x * 2: the blocked
                                # call 4.3 us vs the ufunc's 1.6 at 4K, even at 16K)
CONTIGUOUS_THRESHOLD = 1 << 12   # elements; smaller calls skip the contiguous-loop checks
CHUNKS_PER_THREAD = 4            # a parallel call's chunks: claimed by whichever thread is free
MIN_CHUNK = 1 << 16              # elements; fewer, larger chunks below 4 of these per thread

try:     # NumPy's error state without np.errstate's ~1 us of context-manager overhead
    from numpy._core.umath import _extobj_contextvar as _ERRSTATE, _make_extobj
    _IGNORE = _make_extobj(all="ignore")
except ImportError:  # pragma: no cover - other NumPy versions
    _ERRSTATE = None

_FASTMATH = {"contract"}         # fused multiply-add only: NaN and inf semantics stay IEEE
_UFUNCS = {}                     # scalar name -> DUFunc
_LOOPS = {}                      # (scalar name, 'ff->f') -> numpy ufunc with that loop
_LOOP_LOCK = threading.RLock()
_FLOAT32_TYPES = frozenset(("f->f", "ff->f", "fff->f"))
_FLAT_CHARS = frozenset("fd?->")   # loops run by address: float and bool operands (never raise)
_ADDRESSES = {}                  # (scalar name, 'ff->f') -> the C address of that loop, or 0
_ROW_TYPES = frozenset(("ff->f", "dd->d"))


def get(name):
    """The lazily compiling DUFunc of scalar body `name`."""
    u = _UFUNCS.get(name)
    if u is None:
        u = _UFUNCS[name] = numba.vectorize(cache=True, fastmath=_FASTMATH)(
            getattr(scalar, name))
    return u


def loop(name, types):
    """The NumPy ufunc of `name` holding a loop for `types` ('ff->f'), compiled once.
    Complex operands ('F', 'D') run the op's complex body (`scalar_complex.COMPLEX`)."""
    key = (name, types)
    u = _LOOPS.get(key)
    if u is None:
        with _LOOP_LOCK:            # two threads' first calls: one compiles, and once
            du = get(_COMPLEX.get(name, name) if ("F" in types or "D" in types) else name)
            ins, out = types.split("->")
            sig = _nb(out)(*(_nb(t) for t in ins))
            if types not in du.ufunc.types:
                du.add(sig)
            u = _LOOPS[key] = du.ufunc
    return u


def _nb(char):
    return numba.from_dtype(np.dtype(char))


def compiled_signatures():
    """{scalar name: [loop type strings]} compiled or loaded in this process."""
    return {n: list(u.ufunc.types) for n, u in _UFUNCS.items()}


def kernel(name):
    """The CPU kernel `fn(out, *args)` of scalar body `name`."""
    contiguous_loop = contiguous.CONTIGUOUS_LOOPS.get(name)
    n_params = contiguous.LOOP_PARAMETERS.get(name, 0)

    def run(out, *args):
        if len(args) == 2:
            types = args[0].dtype.char + args[1].dtype.char + "->" + out.dtype.char
        else:
            types = "".join([a.dtype.char for a in args]) + "->" + out.dtype.char
        ufunc = _LOOPS.get((name, types))
        if ufunc is None or out.size >= CONTIGUOUS_THRESHOLD:
            return _run_large_or_first(name, contiguous_loop, n_params, ufunc, types, out, args)
        if _ERRSTATE is None:
            return _call_quiet(ufunc, args, out, types)
        token = _ERRSTATE.set(_IGNORE)          # _call_quiet, inlined: this is the hot path
        try:
            _call_positional(ufunc, args, out, types)
        finally:
            _ERRSTATE.reset(token)
    run.ufunc_name = name               # lets `small_call` pre-resolve this kernel's loops
    run.__name__ = name
    run.__qualname__ = f"cpu.ufuncs.{name}"
    run.__doc__ = f"out[i] = scalar.{name}(*args[i]) over broadcast NumPy operands."
    return run


def small_call(kernel_fn, types):
    """`(ufunc, types)` such that ``ufunc(*args, out, signature=types)`` under ignored
    floating-point errors is what `kernel_fn(out, *args)` does on outputs under
    `CONTIGUOUS_THRESHOLD` elements; None when `kernel_fn` is not one of ours or that
    loop is not compiled yet. The op layer caches it per (op, dtypes), so a small call
    skips building the type string and the size checks; `ERRSTATE` and `IGNORE` give
    it NumPy's error state without np.errstate (None on NumPy versions without them)."""
    name = getattr(kernel_fn, "ufunc_name", None)
    if name is None or _ERRSTATE is None:
        return None
    ufunc = _LOOPS.get((name, types))
    return None if ufunc is None else (ufunc, types)


def serial_is_ufunc(kernel_fn, types):
    """True when `kernel_fn(out, *args)` on dense same-shape operands, disjoint from out,
    under `PARALLEL_THRESHOLD` elements is exactly ``ufunc(*args, out, signature=types)``
    (`small_call`'s): no contiguous SIMD loop and no half compute for these types."""
    name = getattr(kernel_fn, "ufunc_name", None)
    return (name is not None and "e" not in types and not (
        name in contiguous.CONTIGUOUS_LOOPS and types in _FLOAT32_TYPES))


def dense_call(kernel_fn, types):
    """`run(out, args)` doing what `kernel_fn(out, *args)` does on dense same-shape
    C-contiguous operands of `types` from `PARALLEL_THRESHOLD` elements, `out` fresh (no
    overlap) and not of shape (1, ..., n) (that one is `rows.py`'s): the same loop body
    split the same way, or run serially, as a judge per size class says (`spin_threads.
    run_dense_judged`: `workers`' rules in one compiled call), so the same bits, without
    the checks that find that path (~9 us of a 10^6-element add once the call before has
    left the caches cold, where those checks take 3-4 us warm). The loop is the
    contiguous float32 one, else `stream.py`'s 256-bit one, else the ufunc's. None where
    that is not one path: a user's kernel, loop parameters, half types, a loop not
    compiled yet, no spinning helpers. The op layer caches it per (op, dtypes)."""
    name = getattr(kernel_fn, "ufunc_name", None)
    if (name is None or "e" in types or not spin_threads.SUPPORTED or not openmp.USABLE
            or contiguous.LOOP_PARAMETERS.get(name, 0)):
        return None
    if contiguous.CONTIGUOUS_LOOPS.get(name) is not None and types in _FLOAT32_TYPES:
        address = 0                                 # contiguous_abi's twin, on first use
    elif _LOOPS.get((name, types)) is not None:
        address = _loop_address(name, types)
        if not address:
            return None
    else:
        return None
    split_loop = [0]            # the loop's address, found on the first call
    judges = {}                 # size class -> its judge

    def run(out, args):
        n = out.size
        judge = judges.get(n.bit_length())
        if judge is None:
            judge = judges[n.bit_length()] = spin_threads.new_judge()
        operands = _dense_operands(args, out if out.ndim == 1 else out.reshape(-1))
        if not spin_threads.run_dense_judged(
                split_loop[0] or _split_loop(split_loop, name, types, address), operands,
                n, judge):
            kernel_fn(out, *args)
    return run


def _split_loop(where, name, types, address):
    """The loop `dense_call` runs for body `name` (the contiguous float32 loop's twin where
    `address` is 0, else `stream.py`'s 256-bit loop where it has one for `types`, else the
    ufunc's loop at `address`), stored in where[0] on first use: compiled only once a
    call needs it."""
    where[0] = (contiguous_abi.address(name) if not address
                else stream.address(name, types) or address)
    return where[0]


def dense_value_call(kernel_fn, types):
    """`run(out, (x, s))` doing what `kernel_fn(out, x, s)` does for a dense C-contiguous x
    of out's shape from `PARALLEL_THRESHOLD` elements, `out` fresh, and `s` a NumPy
    scalar of x's dtype (``x * 0.5``): `_run_large_or_first`'s `scalar_operand` loop,
    split or serial as a judge per size class says (`spin_threads.run_arrays_judged`),
    without the checks that find it. None where the kernel has no such path for `types`
    (the op layer then calls the kernel); cached per (op, dtypes)."""
    name = getattr(kernel_fn, "ufunc_name", None)
    loop = scalar_operand.BODIES.get(name)
    if loop is None or types not in scalar_operand.TYPES or not _DIRECT:
        return None
    judges = {}                 # size class -> its judge

    def run(out, args):
        value = args[1]
        if value.__class__ is out.dtype.type:       # a NumPy scalar: the contract holds
            found = scalar_operand.plan_dense(name, out, args[0], value)
        else:
            found = scalar_operand.plan(name, out, args)       # (not the usual caller)
            if found is None:
                return kernel_fn(out, *args)
        n = out.size
        judge = judges.get(n.bit_length())
        if judge is None:
            judge = judges[n.bit_length()] = spin_threads.new_judge()
        if not spin_threads.run_arrays_judged(found[0], found[1], found[2], n, judge):
            scalar_operand.run(*found, n)
    return run


def _dense_operands(args, flat_out):
    """(*args flattened, flat_out): 1-D operands as they are (a reshape costs ~0.13 us)."""
    if len(args) == 2:
        x, y = args
        return (x if x.ndim == 1 else x.reshape(-1), y if y.ndim == 1 else y.reshape(-1),
                flat_out)
    if len(args) == 1:
        x = args[0]
        return (x if x.ndim == 1 else x.reshape(-1), flat_out)
    return tuple([a if a.ndim == 1 else a.reshape(-1) for a in args]) + (flat_out,)


ERRSTATE = _ERRSTATE
IGNORE = _IGNORE if _ERRSTATE is not None else None


def _run_large_or_first(name, contiguous_loop, n_params, ufunc, types, out, args):
    """`kernel(name)`'s other cases: a large call (the contiguous loop, or the ufunc split
    over threads), a first call for `types` (compiles the ufunc loop only when a call
    needs it), float16."""
    if out.size > 1:
        args = _expanded_values(args)
    if out.size >= CONTIGUOUS_THRESHOLD and not out.flags.c_contiguous:
        out, args = _memory_order(out, args)
    if (out.size >= CONTIGUOUS_THRESHOLD and name in inplace.BODIES and len(args) <= 2
            and _DIRECT and _is_output(out, args[0])
            and inplace.run(name, out, args[1] if len(args) == 2 else None,
                            out.size >= PARALLEL_THRESHOLD)):
        return                  # x.add_(y), x += y, x.relu_(): loops that read x itself
    if (out.size >= CONTIGUOUS_THRESHOLD and contiguous_loop is not None
            and types in _FLOAT32_TYPES and _same_contiguous(out, args, n_params)):
        return _run_contiguous(contiguous_loop, out, args, n_params, name)
    if types in _ROW_TYPES and name in rows.ROW_LOOPS and len(args) == 2:
        # a bias over a batch's rows, or rows scaled by a column (any size: the loops split
        # over the helpers themselves, 1024x512 + 512: 139 -> 47 us on one thread)
        row_plan = rows.plan(out, args[0], args[1])
        if row_plan is not None:
            return rows.run(name, row_plan, out.size >= PARALLEL_THRESHOLD
                            and workers.NUM_THREADS > 1)
    if ufunc is None:
        if "e" in types:
            return _run_half(name, out, args)
        ufunc = loop(name, types)
    size = out.size
    if (size >= PARALLEL_THRESHOLD and name in scalar_operand.BODIES
            and types in scalar_operand.TYPES and _DIRECT and workers.NUM_THREADS > 1):
        found = scalar_operand.plan(name, out, args)        # x * 0.5, 1 - x: one value
        if found is not None:
            key = (scalar_operand.BODIES[name], types, size.bit_length())
            if use_helpers(key):
                return timed(record_parallel, key, size, scalar_operand.run, *found, size)
            return timed(record_serial, key, size, _call_serial, name, ufunc, args, out, types)
    if size >= PARALLEL_THRESHOLD and _splittable(out, args):
        key = (ufunc, types, size.bit_length())     # a loop and a size class
        if use_helpers(key):
            flat = _flat_operands(out, args) if openmp.USABLE else None
            address = _loop_address(name, types) if flat is not None else 0
            if address and name in stream.BODIES and all(a.ndim == 1 for a in flat):
                address = stream.address(name, types) or address   # no one-value operand
            if not address:
                return _run_parallel(ufunc, types, out, args, key)
            return timed(record_parallel, key, size, loop_threads.run_loop, address, flat,
                         size, workers.NUM_THREADS)
        return timed(record_serial, key, size, _call_serial, name, ufunc, args, out, types)
    _call_serial(name, ufunc, args, out, types)


def _memory_order(out, args):
    """(out, args) as views with their axes in memory order where `out` is a permuted
    C-contiguous array (a transposed or permuted tensor's layout, which elementwise
    results keep, as PyTorch's do) and every other operand has out's shape and strides
    or is one value: then every flat path below applies (``x.t() + x.t()`` on 1024x512
    float32 took the chunked NumPy path, 2x the time of ``x + x``); elementwise results
    do not depend on the order, so the bits are the same. Else (out, args) unchanged."""
    strides = out.strides
    order = sorted(range(out.ndim), key=lambda d: -abs(strides[d]))
    view = out.transpose(order)
    if not view.flags.c_contiguous:
        return out, args
    moved = []
    for a in args:
        if a.size == 1 and a.ndim == 0:
            moved.append(a)
        elif a.shape == out.shape and a.strides == strides:
            moved.append(a.transpose(order))
        else:
            return out, args
    return view, tuple(moved)


def _is_output(out, a):
    """True when operand `a` is the output itself (the same elements, the same layout)."""
    return a is out or (a.__class__ is np.ndarray and a.shape == out.shape
                        and a.strides == out.strides and a.ctypes.data == out.ctypes.data)


def _expanded_values(args):
    """`args` with each operand that is one value expanded (every stride 0, as the
    gradient of ``x.sum()`` arrives at ``x``'s elementwise backward) as a 0-d array: the
    loops then read it from a block of copies instead of NumPy's strided loop, which ran
    scalar (GELU's backward on 256x512 float32: 1.17 ms)."""
    for a in args:
        if a.ndim and a.size > 1 and not any(a.strides):
            return tuple(np.asarray(x[(0,) * x.ndim])
                         if x.ndim and x.size > 1 and not any(x.strides) else x
                         for x in args)
    return args


# Bodies whose NumPy ufunc computes the same IEEE operation (one correctly rounded add,
# subtract, multiply, divide or negation), so either loop gives the same bits. NumPy's
# loops are vectorised for a scalar operand and in place too, where Numba's loop runs
# scalar (stride 0, or an output that aliases an input): float32 x * 2 at 4K, 1.6 us
# (Numba's loop) vs 0.7 (NumPy's); a serial call of these takes NumPy's loop.
_NUMPY_TWINS = {(name, t): twin for name, twin in (
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.true_divide),
    ("neg", np.negative)) for t in ("ff->f", "dd->d", "f->f", "d->d")}


def _call_serial(name, ufunc, args, out, types):
    """`_call_quiet`, except where an input is one value broadcast over a flat output
    (``x * 0.5``, ``1 - x``) or the output itself (``x.add_(y)``): there the loop runs by
    address in blocks, of `loop_threads.BLOCK` copies of that value or from a copy of
    each block of the input, so that Numba's loop takes its vectorised path
    (`loop_threads.call_blocked`); the same loop body, the same bits. Below `BLOCKED_MIN`
    elements the setup of that call costs more than the scalar loop it replaces."""
    twin = _NUMPY_TWINS.get((name, types))
    if twin is not None:
        return _call_quiet(twin, args, out, types)
    if out.size >= BLOCKED_MIN and _DIRECT and any(a.size == 1 or a is out for a in args):
        flat = _flat_operands(out, args) if _splittable(out, args) else None
        address = _loop_address(name, types) if flat is not None else 0
        if address:
            loop_threads.run_loop(address, flat, out.size, 1)
            return
    _call_quiet(ufunc, args, out, types)


def _call_quiet(ufunc, args, out, types):
    """ufunc(*args, out) with floating-point warnings off (thread-local NumPy state)."""
    if _ERRSTATE is None:
        with np.errstate(all="ignore"):
            return ufunc(*args, out, signature=types)
    token = _ERRSTATE.set(_IGNORE)
    try:
        _call_positional(ufunc, args, out, types)
    finally:
        _ERRSTATE.reset(token)


def _call_positional(ufunc, args, out, types):
    """ufunc(*args, out, signature=types), with one or two operands passed positionally:
    a ``*args`` call with a keyword takes NumPy's slow call path (~0.3 us more)."""
    n = len(args)
    if n == 2:
        ufunc(args[0], args[1], out, signature=types)
    elif n == 1:
        ufunc(args[0], out, signature=types)
    else:
        ufunc(*args, out, signature=types)


def _run_half(name, out, args):
    """float16 operands compute in float32 (Numba has no float16)."""
    args = tuple(a.astype(np.float32) if a.dtype == np.float16 else a for a in args)
    tmp = np.empty(out.shape, np.float32) if out.dtype == np.float16 else out
    kernel(name)(tmp, *args)
    if tmp is not out:
        out[...] = tmp


def _splittable(out, args):
    """False when an input overlaps `out` other than element for element (e.g. `x.add_(
    x.flip(0))`): NumPy resolves such overlap within one call, not across threads."""
    for a in args:
        if a.ndim and np.may_share_memory(a, out) and not (
                a.shape == out.shape and a.strides == out.strides
                and a.__array_interface__["data"][0] == out.__array_interface__["data"][0]):
            return False
    return True


def _flat_operands(out, args):
    """(args..., out) as 1-D arrays, or 0-d for one-element operands (read with stride 0),
    when out is C-contiguous and every other operand is too with out's shape (overlap
    with out, if any, is element for element: `_splittable` said so); else None."""
    if not out.flags.c_contiguous:
        return None
    shape = out.shape
    flat = []
    for a in args:
        if a.shape == shape and a.flags.c_contiguous:
            flat.append(a.reshape(-1))
        elif a.size == 1:
            flat.append(np.asarray(a).reshape(()))
        else:
            return None
    flat.append(out.reshape(-1))
    return flat


def _loop_address(name, types):
    """The C address of the `types` loop of body `name` (Numba's ufunc loop, the ABI of
    `loop_threads.run_loop`), or 0 where it cannot be found or the types are not floats.
    Numba's DUFunc keeps (address, library, environment) per loop in the order it adds
    them to the NumPy ufunc."""
    key = (name, types)
    address = _ADDRESSES.get(key)
    if address is None:
        address = 0
        if _FLAT_CHARS.issuperset(types):       # bool masks too (where's "?ff->f")
            du = get(name)
            loops, kept = list(du.ufunc.types), getattr(du, "_keepalive", ())
            if len(loops) == len(kept) and types in loops:
                address = int(kept[loops.index(types)][0])
        _ADDRESSES[key] = address
    return address


def _run_parallel(ufunc, types, out, args, key=None):
    """Split `out` along its longest axis into chunks run on the helper threads too."""
    axis = int(np.argmax(out.shape))
    n = out.shape[axis]
    chunks = _chunk_count(out.size, n)
    bounds = [n * k // chunks for k in range(chunks + 1)]
    lead = out.ndim

    def chunk(k):
        lo, hi = bounds[k], bounds[k + 1]
        sl_out = out[(slice(None),) * axis + (slice(lo, hi),)]
        parts = []
        for a in args:
            ax = axis - (lead - a.ndim)
            if ax < 0 or a.shape[ax] == 1:
                parts.append(a)
            else:
                parts.append(a[(slice(None),) * ax + (slice(lo, hi),)])
        _call_quiet(ufunc, parts, sl_out, types)

    parallel_chunks(chunk, chunks, key, out.size)


def _chunk_count(size, n):
    """Chunks of a parallel call over `size` elements split along an axis of length n."""
    return max(2, min(n, workers.NUM_THREADS * CHUNKS_PER_THREAD, size // MIN_CHUNK))


def _same_contiguous(out, args, n_params=0):
    """True when every operand but the last `n_params` (which must be 0-d) is a
    C-contiguous array of out's shape that is either out itself or disjoint from it:
    the case the flat loops of `contiguous.CONTIGUOUS_LOOPS` run."""
    if not out.flags.c_contiguous:
        return False
    shape = out.shape
    n = len(args) - n_params
    for a in args[:n]:
        if a.shape != shape or not a.flags.c_contiguous:
            return False
        if np.may_share_memory(a, out) and (         # in place (same start) is fine
                a.__array_interface__["data"][0] != out.__array_interface__["data"][0]):
            return False
    return all(p.ndim == 0 for p in args[n:])


def _run_contiguous(flat_loop, out, args, n_params=0, name=None):
    """Run `flat_loop(out, *arrays, *params)` on flat views; when large, split over Numba's
    threads (its ufunc-ABI twin, `contiguous_abi`) or else in chunks (bounds at multiples
    of 16 floats, a cache line) on the helper threads too (the loops release the GIL)."""
    n_arrays = len(args) - n_params
    flat = out.reshape(-1)
    ins = [a.reshape(-1) for a in args[:n_arrays]]
    params = [p[()] for p in args[n_arrays:]]               # NumPy float32 scalars
    n = flat.shape[0]
    if n < PARALLEL_THRESHOLD:
        flat_loop(flat, *ins, *params)
        return
    key = (flat_loop, n.bit_length())                 # a loop and a size class
    if not use_helpers(key):
        return timed(record_serial, key, n, flat_loop, flat, *ins, *params)
    if name is not None and openmp.USABLE:
        return timed(record_parallel, key, n, loop_threads.run_loop,
                     contiguous_abi.address(name), ins + list(args[n_arrays:]) + [flat], n,
                     workers.NUM_THREADS)
    chunks = _chunk_count(n, n)
    bounds = [n * k // chunks // 16 * 16 for k in range(chunks)] + [n]

    def chunk(k):
        lo, hi = bounds[k], bounds[k + 1]
        flat_loop(flat[lo:hi], *[a[lo:hi] for a in ins], *params)

    parallel_chunks(chunk, chunks, key, n)
