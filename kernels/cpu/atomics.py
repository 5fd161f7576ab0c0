"""Atomic loads, stores and compare-exchanges on int64 arrays, the x86 `pause` hint, the
time-stamp counter and calls of C functions by address, as Numba intrinsics (LLVM IR).

Used from ``nogil`` Numba code by threads that share an int64 control array: the
spinning helpers (spin_threads.py) and OpenBLAS's one-thread hold (blas_hold.py).
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["load", "store", "swap", "pause", "ticks", "call_c", "call_int", "call_void_int"]


def _element_pointer(context, builder, arrty, arr, index):
    ary = context.make_array(arrty)(context, builder, arr)
    return builder.gep(ary.data, [index])


@intrinsic
def load(typingctx, arr, index):
    """arr[index], an acquire load."""
    def codegen(context, builder, sig, args):
        ptr = _element_pointer(context, builder, sig.args[0], args[0], args[1])
        return builder.load_atomic(ptr, "acquire", 8)
    return types.int64(arr, index), codegen


@intrinsic
def store(typingctx, arr, index, value):
    """arr[index] = value, a release store."""
    def codegen(context, builder, sig, args):
        ptr = _element_pointer(context, builder, sig.args[0], args[0], args[1])
        builder.store_atomic(args[2], ptr, "release", 8)
        return context.get_dummy_value()
    return types.void(arr, index, value), codegen


@intrinsic
def swap(typingctx, arr, index, expected, new):
    """arr[index] = new if it was `expected` (one atomic step); True when it was."""
    def codegen(context, builder, sig, args):
        ptr = _element_pointer(context, builder, sig.args[0], args[0], args[1])
        pair = builder.cmpxchg(ptr, args[2], args[3], "acq_rel", "acquire")
        return builder.extract_value(pair, 1)
    return types.boolean(arr, index, expected, new), codegen


@intrinsic
def pause(typingctx):
    """The x86 `pause` hint of a spin loop."""
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
            ir.VoidType(), []), "llvm.x86.sse2.pause")
        builder.call(fn, [])
        return context.get_dummy_value()
    return types.void(), codegen


@intrinsic
def ticks(typingctx):
    """The time-stamp counter."""
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
            ir.IntType(64), []), "llvm.readcyclecounter")
        return builder.call(fn, [])
    return types.int64(), codegen


@intrinsic
def call_c(typingctx, address, arg):
    """int f(void *arg) for the C function at integer `address` (sem_post, sem_wait)."""
    def codegen(context, builder, sig, args):
        i8p = ir.IntType(8).as_pointer()
        fn = builder.inttoptr(args[0], ir.FunctionType(ir.IntType(32), [i8p]).as_pointer())
        return builder.call(fn, [builder.inttoptr(args[1], i8p)])
    return types.int32(address, arg), codegen


@intrinsic
def call_int(typingctx, address):
    """int f(void) for the C function at integer `address` (a thread-count getter)."""
    def codegen(context, builder, sig, args):
        fn = builder.inttoptr(args[0], ir.FunctionType(ir.IntType(32), []).as_pointer())
        return builder.call(fn, [])
    return types.int32(types.int64), codegen


@intrinsic
def call_void_int(typingctx, address, value):
    """void f(int value) for the C function at integer `address` (a thread-count setter)."""
    def codegen(context, builder, sig, args):
        fn = builder.inttoptr(args[0], ir.FunctionType(ir.VoidType(), [ir.IntType(32)])
                              .as_pointer())
        builder.call(fn, [builder.trunc(args[1], ir.IntType(32))])
        return context.get_dummy_value()
    return types.void(types.int64, types.int64), codegen
