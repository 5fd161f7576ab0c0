"""The machinery of the contiguous float32 loops: 512-bit vectors, output prefetching,
bodies inlined by LLVM.

The ufunc loops run at the vector width LLVM prefers for the CPU: 256 bits on
Intel chips with AVX-512 ("prefer-256-bit" tuning), 512 on AMD Zen 4, where the cheap
bodies stream faster at 256 (`stream1`, `stream2` below). The costly float32 bodies
are compute-bound there, so `cpu/ufuncs.py` runs contiguous float32 operands
through plain loops (`cpu/contiguous.py`) built from `map1`, `map2` and
`map1_params2` here::

    for each block of 512 elements:   prefetch out 4096 elements ahead (for writing)
        for i in block:               out[i] = body(a[i], ...)      (512-bit SIMD)

They ask for 512-bit vectors and prefetch the output ahead of the writes: a
fresh output (every op's `torch.empty`) is in no cache, and a loop this heavy
keeps too few writes in flight to hide the memory latency. `body` is called
through an intrinsic that marks the call `alwaysinline` (a call left in the loop
would keep it scalar).
"""
import numba
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, register_jitable

from nbtorch.kernels.f32math import JIT_OPTIONS as _JIT

__all__ = ["map1", "map2", "map1_params2", "stream1", "stream2"]


def _own_function_with_vectors(bits):
    """Codegen: mark the function being compiled noinline, with LLVM's
    "prefer-vector-width" attribute (what clang's -mprefer-vector-width=`bits` sets)."""
    def codegen(context, builder, signature, args):
        attributes = builder.function.attributes
        attributes.add("noinline")
        if isinstance(attributes, set):      # llvmlite's set of keyword attributes: a
            set.add(attributes, f'"prefer-vector-width"="{bits}"')   # string one prints alike
        return context.get_dummy_value()
    return codegen


@intrinsic
def _own_function_with_512bit_vectors(typingctx):
    """Let LLVM vectorise the function being compiled with 512-bit registers where the
    CPU has them, and keep it a function of its own: inlined into a caller, its loops
    would take the caller's width."""
    return types.none(), _own_function_with_vectors(512)


@intrinsic
def _own_function_with_256bit_vectors(typingctx):
    """`_own_function_with_512bit_vectors` at 256 bits: for loops that stream their
    operands from L3 or memory (see `stream1`)."""
    return types.none(), _own_function_with_vectors(256)


@intrinsic
def _prefetch_for_write(typingctx, array, index):
    """Fetch the cache line of array[index] for writing (llvm.prefetch, rw=1); a hint,
    never a fault."""
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        byte_ptr = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fn = builder.module.globals.get("llvm.prefetch.p0") or ir.Function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr.type, i32, i32, i32]),
            "llvm.prefetch.p0")
        builder.call(fn, [byte_ptr, ir.Constant(i32, 1), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return types.none(array, index), codegen


_BLOCK = 512                # elements per inner loop
_AHEAD = 4096               # elements between a block and the one it prefetches (16 KB)


@register_jitable(**_JIT)
def _prefetch_block(out, start):
    """Prefetch out[start + _AHEAD : start + _AHEAD + _BLOCK] for writing (16-float lines)."""
    n = out.shape[0]
    for j in range(min(start + _AHEAD, n), min(start + _AHEAD + _BLOCK, n), 16):
        _prefetch_for_write(out, j)


def _inlined_call(body, body_sig):
    """Codegen of body(*args) with the call marked `alwaysinline`: a body compiled on its
    own is a call LLVM may find too big to inline (gelu_grad), and a loop with a call in
    it does not vectorise. (Numba's inline="always" would inline the typed IR instead:
    the same machine code for 2-3x the compile time.)"""
    def codegen(context, builder, signature, args):
        before = {id(i) for b in builder.function.blocks for i in b.instructions}
        result = context.get_function(body, body_sig)(builder, args[1:])
        for block in builder.function.blocks:
            for instr in block.instructions:
                if isinstance(instr, ir.CallInstr) and id(instr) not in before:
                    instr.attributes.add("alwaysinline")
        return result
    return codegen


@intrinsic
def _inlined1(typingctx, body, a):
    """body(a), inlined by LLVM (see `_inlined_call`)."""
    body_sig = typingctx.resolve_function_type(body, (a,), {})
    return body_sig.return_type(body, a), _inlined_call(body, body_sig)


@intrinsic
def _inlined2(typingctx, body, a, b):
    """body(a, b), inlined by LLVM (see `_inlined_call`)."""
    body_sig = typingctx.resolve_function_type(body, (a, b), {})
    return body_sig.return_type(body, a, b), _inlined_call(body, body_sig)


@intrinsic
def _inlined3(typingctx, body, a, b, c):
    """body(a, b, c), inlined by LLVM (see `_inlined_call`)."""
    body_sig = typingctx.resolve_function_type(body, (a, b, c), {})
    return body_sig.return_type(body, a, b, c), _inlined_call(body, body_sig)


if numba.config.DISABLE_JIT:    # kernels run as Python (NUMBA_DISABLE_JIT=1): no intrinsics
    def _own_function_with_512bit_vectors():
        pass

    def _own_function_with_256bit_vectors():
        pass

    def _prefetch_for_write(array, index):
        pass

    def _inlined1(body, a):
        return body(a)

    def _inlined2(body, a, b):
        return body(a, b)

    def _inlined3(body, a, b, c):
        return body(a, b, c)


@register_jitable(**_JIT)
def map1(body, out, a):
    """out[i] = body(a[i]) in blocks: prefetch a later block of out, then a SIMD loop."""
    _own_function_with_512bit_vectors()
    for start in range(0, out.shape[0], _BLOCK):
        _prefetch_block(out, start)
        o, x = out[start:start + _BLOCK], a[start:start + _BLOCK]
        for i in range(o.shape[0]):
            o[i] = _inlined1(body, x[i])


@register_jitable(**_JIT)
def map2(body, out, a, b):
    """out[i] = body(a[i], b[i]), as `map1`."""
    _own_function_with_512bit_vectors()
    for start in range(0, out.shape[0], _BLOCK):
        _prefetch_block(out, start)
        o, x, y = out[start:start + _BLOCK], a[start:start + _BLOCK], b[start:start + _BLOCK]
        for i in range(o.shape[0]):
            o[i] = _inlined2(body, x[i], y[i])


@register_jitable(**_JIT)
def map1_params2(body, out, a, p, q):
    """out[i] = body(a[i], p, q) for scalar parameters p, q, as `map1`."""
    _own_function_with_512bit_vectors()
    for start in range(0, out.shape[0], _BLOCK):
        _prefetch_block(out, start)
        o, x = out[start:start + _BLOCK], a[start:start + _BLOCK]
        for i in range(o.shape[0]):
            o[i] = _inlined3(body, x[i], p, q)


# ---- streaming loops: 256-bit vectors --------------------------------------------------
# A cheap body (one add, a compare) over operands too large for L2 is bound by the cache
# or memory bandwidth, not the arithmetic. On AMD Zen 4, which runs a 512-bit operation
# as two 256-bit halves, LLVM's default for the CPU (512 bits) streamed ~6% slower there
# than 256-bit code: a 10^6-element float32 add from L3 on one thread, aligned operands,
# 137-141 us at 512 bits, 131-135 at 256 (NumPy's own AVX2 loop 129-131); on two threads
# over the spinning helpers 68.5 -> 64.5 us. No prefetching: nothing to hide here that
# the hardware prefetcher does not.


@register_jitable(**_JIT)
def stream1(body, out, a):
    """out[i] = body(a[i]) with 256-bit vectors (flat contiguous operands)."""
    _own_function_with_256bit_vectors()
    for i in range(out.shape[0]):
        out[i] = _inlined1(body, a[i])


@register_jitable(**_JIT)
def stream2(body, out, a, b):
    """out[i] = body(a[i], b[i]), as `stream1`."""
    _own_function_with_256bit_vectors()
    for i in range(out.shape[0]):
        out[i] = _inlined2(body, a[i], b[i])
