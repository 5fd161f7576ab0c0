"""One flat loop split over Numba's OpenMP threads: C loop functions called by address.

A 1-D loop with NumPy's ufunc-loop ABI, ``loop(char **args, intp *n, intp *steps,
void *data)`` (what every ``numba.vectorize`` loop compiles to, and what
`contiguous_abi.py` wraps the 512-bit flat loops in), runs in `chunks` pieces inside
one ``prange``; an intrinsic builds the call from an integer address, so one kernel
serves every op and dtype and caches on disk (a kernel handed its callee as a
first-class function would recompile in every process: DESIGN.md).

Why OpenMP and not the Python helper threads of `workers.py`: a helper needs the GIL
to pick up its chunk, and waking one costs a futex wake plus a GIL hand-off (10^6-element
add: 397 us on two helpers vs 432 serial, PyTorch 216); Numba's workers need no GIL. They
sleep when idle (nbtorch/_threads.py), so a call still pays one wake-up (258-277 us for
that add; in a benchmark loop too little gain, and the back-off keeps such calls serial);
with NBTORCH_OMP_SPINCOUNT=10000 they spin ~0.15 ms after each call and are reached in
~1 us (225 us), at a cost to BLAS-heavy steps (see nbtorch/_threads.py). A chunk
boundary falls on a multiple of `ALIGN` elements (a cache line of float32), so two
threads never write one line.
"""
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

__all__ = ["run_loop", "ALIGN"]

ALIGN = 16


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


@njit(parallel=True, nogil=True, cache=True)
def _run_chunks(address, bases, steps, n, chunks, align):
    """Chunk c of `chunks`: elements [lo, hi) of every operand (base + lo * step)."""
    m = bases.shape[0]
    pointers = np.empty((chunks, m), np.intp)
    for c in prange(chunks):
        lo = n * c // chunks // align * align
        hi = n if c == chunks - 1 else n * (c + 1) // chunks // align * align
        for k in range(m):
            pointers[c, k] = bases[k] + lo * steps[k]
        if hi > lo:
            _call_loop(address, pointers[c], hi - lo, steps)


def run_loop(address, operands, n, chunks):
    """Run the C loop at `address` over `n` elements of `operands` (inputs then the
    output; 1-D arrays of n elements or 0-d arrays, read with stride 0), in `chunks`
    pieces on Numba's threads. The caller keeps the operands alive and checked: the loop
    trusts every pointer (contiguous 1-D or 0-d, dtypes the loop's own, no partial
    overlap with the output)."""
    bases = np.empty(len(operands), np.intp)
    steps = np.empty(len(operands), np.intp)
    for k, a in enumerate(operands):
        bases[k] = a.__array_interface__["data"][0]
        steps[k] = a.strides[0] if a.ndim else 0
    _run_chunks(address, bases, steps, n, chunks, ALIGN)
