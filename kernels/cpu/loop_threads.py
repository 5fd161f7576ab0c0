"""One flat loop split over threads: C loop functions called by address.

A 1-D loop with NumPy's ufunc-loop ABI, ``loop(char **args, intp *n, intp *steps,
void *data)`` (what every ``numba.vectorize`` loop compiles to, and what
`contiguous_abi.py` wraps the 512-bit flat loops in), runs in `chunks` pieces; an
intrinsic builds the call from an integer address, so one kernel serves every op and
dtype and caches on disk (a kernel handed its callee as a first-class function would
recompile in every process: DESIGN.md).

Where the pieces run: on the helpers of `spin_threads.py` (x86-64), which spin for
0.1 ms after each call and so are reached in well under a microsecond by the next
call of a chain, else inside one ``prange`` on Numba's OpenMP workers. Why not the
Python helper threads of `workers.py`: a helper needs the GIL to pick up its chunk,
and waking one costs a futex wake plus a GIL hand-off (10^6-element add: 397 us on two
helpers vs 432 serial, PyTorch 216; Xeon). Numba's workers need no GIL but sleep when
idle (nbtorch/_threads.py), so each call pays a wake-up (AMD EPYC, 2 cores: that add
177 us vs 145 serial; on the spinning helpers 100, PyTorch 69-100); letting them spin
(NBTORCH_OMP_SPINCOUNT=10000, ~0.15 ms after every parallel region) costs BLAS-heavy
steps (see nbtorch/_threads.py). A chunk boundary falls on a multiple of `ALIGN`
elements (a cache line of float32), so two threads never write one line.
"""
import numpy as np
from llvmlite import ir
from numba import cfunc, literal_unroll, njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["run_loop", "ALIGN", "BLOCK", "call_blocked", "chunk_pointers", "operand_pointers",
           "broadcast_blocks", "in_place_bits", "ALIAS_SHIFT", "LOOP_ABI", "cfunc_address"]

ALIGN = 16
BLOCK = 1024     # elements per call of a loop with a broadcast operand (broadcast_blocks)


# loop(char **args, intp *count, intp *steps, void *data): NumPy's ufunc-loop ABI
LOOP_ABI = types.void(types.CPointer(types.voidptr), types.CPointer(types.intp),
                      types.CPointer(types.intp), types.voidptr)
_CFUNC_ADDRESSES = {}


def cfunc_address(fn):
    """The C address of `fn`, a module-level Python function with the ufunc-loop ABI,
    compiled as a nogil `cfunc` on first use (from Numba's disk cache after the first
    process: a function made in a closure would miss that cache). Every kernel that
    rides the helpers this way (row splits, GEMM ranges, copies, the contiguous loops'
    twins) gets its address here."""
    address = _CFUNC_ADDRESSES.get(fn)
    if address is None:
        address = _CFUNC_ADDRESSES[fn] = cfunc(LOOP_ABI, cache=True, nogil=True)(fn).address
    return address


@intrinsic
def _call_loop(typingctx, address, args, count, steps):
    """loop(args.data, &count, steps.data, NULL) for the C loop at integer `address`."""
    sig = types.void(address, args, count, steps)

    def codegen(context, builder, signature, llargs):
        address_v, args_v, count_v, steps_v = llargs
        i8p = ir.IntType(8).as_pointer()
        intp = context.get_value_type(types.intp)
        fnty = ir.FunctionType(ir.VoidType(), [i8p.as_pointer(), intp.as_pointer(),
                                               intp.as_pointer(), i8p])
        fn = builder.inttoptr(address_v, fnty.as_pointer())
        args_data = context.make_array(signature.args[1])(context, builder, args_v).data
        steps_data = context.make_array(signature.args[3])(context, builder, steps_v).data
        n = builder.alloca(intp)
        builder.store(count_v, n)
        builder.call(fn, [builder.bitcast(args_data, i8p.as_pointer()), n,
                          builder.bitcast(steps_data, intp.as_pointer()),
                          ir.Constant(i8p, None)])
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _copy_bytes(typingctx, dst, src, nbytes):
    """memcpy(dst, src, nbytes) between integer addresses."""
    sig = types.void(dst, src, nbytes)

    def codegen(context, builder, signature, llargs):
        dst_v, src_v, n_v = llargs
        i8p = ir.IntType(8).as_pointer()
        cgutils.raw_memcpy(builder, builder.inttoptr(dst_v, i8p),
                           builder.inttoptr(src_v, i8p), n_v, 1)
        return context.get_dummy_value()
    return sig, codegen


ALIAS_SHIFT = 32        # bit ALIAS_SHIFT + k of `wrap`: input k is the output itself
_WRAP_MASK = (1 << ALIAS_SHIFT) - 1
_MAX_ITEM = 16          # bytes: the largest item of a loop operand (complex128)


@njit(nogil=True, cache=True)
def call_blocked(address, pointers, count, steps, wrap, block):
    """The loop over `count` elements in calls of `block` elements (`wrap` 0: one call).
    Operands whose bit k is set in `wrap` are `block` copies of one value, read again for
    each block; an input whose bit ALIAS_SHIFT + k is set is the output itself (``x.mul_
    (y)``) and is read from a copy of each block: LLVM's vectorised loop checks that the
    output overlaps no input and, in place, runs the scalar loop instead (2-3x slower)."""
    if wrap == 0:
        _call_loop(address, pointers, count, steps)
        return
    alias = wrap >> ALIAS_SHIFT
    wrap = wrap & _WRAP_MASK
    m = pointers.shape[0]
    p = pointers.copy()
    q = pointers.copy()                 # the pointers of one call
    scratch = np.empty(m * block * _MAX_ITEM if alias else 0, np.uint8)
    done = 0
    while done < count:
        c = min(block, count - done)
        for k in range(m):
            if (alias >> k) & 1:
                q[k] = scratch.ctypes.data + k * block * _MAX_ITEM
                _copy_bytes(q[k], p[k], c * steps[k])
            else:
                q[k] = p[k]
        _call_loop(address, q, c, steps)
        for k in range(m):
            if not (wrap >> k) & 1:
                p[k] += c * steps[k]
        done += c


@njit(nogil=True, cache=True)
def chunk_pointers(bases, steps, lo, wrap, out):
    """out[k] = the address of element `lo` of operand k (a wrapped one: its start)."""
    for k in range(bases.shape[0]):
        out[k] = bases[k] if (wrap >> k) & 1 else bases[k] + lo * steps[k]


@njit(parallel=True, nogil=True, cache=True)
def _run_chunks(address, bases, steps, n, chunks, align, wrap, block):
    """Chunk c of `chunks`: elements [lo, hi) of every operand (base + lo * step)."""
    m = bases.shape[0]
    pointers = np.empty((chunks, m), np.intp)
    for c in prange(chunks):
        lo = n * c // chunks // align * align
        hi = n if c == chunks - 1 else n * (c + 1) // chunks // align * align
        chunk_pointers(bases, steps, lo, wrap, pointers[c])
        if hi > lo:
            call_blocked(address, pointers[c], hi - lo, steps, wrap, block)


@njit(nogil=True, cache=True)
def operand_pointers(operands):
    """The base address and element step of each operand: a contiguous 1-D array (its
    item size) or a 0-d one (0: read as a broadcast value). One compiled call per tuple
    type instead of an ``__array_interface__`` dict per operand (~1 us each)."""
    m = len(operands)
    bases = np.empty(m, np.intp)
    steps = np.empty(m, np.intp)
    k = 0
    for x in literal_unroll(operands):
        bases[k] = x.ctypes.data
        steps[k] = x.itemsize * x.ndim
        k += 1
    return bases, steps


@njit(nogil=True, cache=True)
def in_place_bits(bases, steps):
    """Bit ALIAS_SHIFT + k set for each input k that starts where the output (the last
    operand) does with its step: an in-place loop (see `call_blocked`)."""
    m = bases.shape[0] - 1
    bits = 0
    for k in range(m):
        if bases[k] == bases[m] and steps[k] == steps[m] and steps[k] != 0:
            bits |= 1 << (ALIAS_SHIFT + k)
    return bits


def broadcast_blocks(operands, n):
    """(operands, wrap): each 0-d input of a loop over more than `BLOCK` elements replaced
    by `BLOCK` copies of its value, its bit set in `wrap`. A Numba ufunc loop takes its
    vectorised path only when every step is the item size: with a stride-0 operand
    (``x * 0.5``) it ran element by element, 3x slower than NumPy's (1e6 float32:
    309 vs 103 us; ``x / 1.5`` 4x)."""
    wrap = 0
    if n > BLOCK:
        for k in range(len(operands) - 1):
            x = operands[k]
            if x.ndim == 0:
                if not wrap:
                    operands = list(operands)
                operands[k] = _value_block(x)
                wrap |= 1 << k
    return tuple(operands), wrap


_VALUE_BLOCKS = {}      # (dtype char, value bytes) -> BLOCK copies (loops only read them)


def _value_block(x):
    """`BLOCK` copies of 0-d `x`'s value, kept for the next call with that value (the
    constants of a chain - 0.5, 2, eps - come back every step; np.full costs ~0.6 us)."""
    key = (x.dtype.char, x.tobytes())
    block = _VALUE_BLOCKS.get(key)
    if block is None:
        if len(_VALUE_BLOCKS) >= 256:
            _VALUE_BLOCKS.clear()
        block = _VALUE_BLOCKS[key] = np.full(BLOCK, x, x.dtype)
    return block


def run_loop(address, operands, n, chunks):
    """Run the C loop at `address` over `n` elements of `operands` (inputs then the
    output; contiguous 1-D arrays of n elements, or 0-d arrays or NumPy scalars, read
    as one value), in `chunks` pieces: on the spinning helpers of `spin_threads.py`
    where they run, else on Numba's threads; one piece runs here. The caller keeps the
    operands alive and checked: the loop trusts every pointer (contiguous 1-D or 0-d,
    dtypes the loop's own, no partial overlap with the output)."""
    operands = [x if x.__class__ is np.ndarray else np.asarray(x) for x in operands]
    operands, wrap = broadcast_blocks(operands, n)   # (kept alive here for the call)
    bases, steps = operand_pointers(operands)
    if n > BLOCK:
        wrap |= in_place_bits(bases, steps)
    if chunks < 2:
        spin_threads.run_here(address, bases, steps, n, 1, ALIGN, wrap, BLOCK)
    elif not spin_threads.run(address, bases, steps, n, chunks, ALIGN, wrap, BLOCK):
        _run_chunks(address, bases, steps, n, chunks, ALIGN, wrap, BLOCK)


from nbtorch.kernels.cpu import spin_threads  # noqa: E402 (it builds on _call_loop above)
