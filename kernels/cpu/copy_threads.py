"""Large dense copies, fills and row gathers split over the spinning helpers
(`spin_threads.py`).

A 4 MB `zeros` or a 2 MB `clone` is one memset/memcpy; on one core it moves 50-80 GB/s,
and PyTorch splits it over its threads (zeros(1024, 1024): 26 us against 52 here on one
thread). The pieces are ufunc-ABI `cfunc`s over bytes (a copy) or over elements of one
width (a fill with the value's bit pattern), so one compiled function serves every dtype.
Chunk bounds fall on 64-byte lines. Kinds of call whose split does not pay run here
(`workers.use_helpers`); the bytes written are the same either way.
"""
import numpy as np
from llvmlite import ir
from numba import carray, types
from numba.extending import intrinsic, register_jitable

from nbtorch.kernels.cpu import loop_threads, spin_threads, workers
from nbtorch.kernels.cpu.loop_threads import _copy_bytes

__all__ = ["SPLIT_MIN_BYTES", "WORDS", "copy_bytes", "fill_bits", "take_rows"]

SPLIT_MIN_BYTES = 1 << 20       # below 1 MB one thread's memcpy is done before a split pays

def _copy_abi(args, count, steps, data):
    """memcpy of `count` bytes: args = (src, dst)."""
    n = count[0]
    d = carray(args[1], (n,), np.uint8)
    s = carray(args[0], (n,), np.uint8)
    for i in range(n):
        d[i] = s[i]


@register_jitable
def _fill_words(args, count, word):
    """`count` words (numpy type `word`) = the pattern: args = (pattern, dst)."""
    n = count[0]
    d = carray(args[1], (n,), word)
    v = carray(args[0], (1,), word)[0]
    for i in range(n):
        d[i] = v


def _fill8(args, count, steps, data):
    _fill_words(args, count, np.uint64)


def _fill4(args, count, steps, data):
    _fill_words(args, count, np.uint32)


def _fill2(args, count, steps, data):
    _fill_words(args, count, np.uint16)


def _fill1(args, count, steps, data):
    _fill_words(args, count, np.uint8)


@intrinsic
def _address(typingctx, pointer):
    """The integer address of a C pointer."""
    def codegen(context, builder, signature, args):
        return builder.ptrtoint(args[0], ir.IntType(64))
    return types.int64(pointer), codegen


def _take_rows_abi(args, count, steps, data):
    """`count` rows of `row` bytes, each one memcpy: dst[i] = src[index[i]]; args =
    (index (int64, in range), src, params = (row,), dst)."""
    n = count[0]
    row = carray(args[2], (1,), np.int64)[0]
    index = carray(args[0], (n,), np.int64)
    src = _address(args[1])
    dst = _address(args[3])
    for i in range(n):
        _copy_bytes(dst + i * row, src + index[i] * row, row)


_FUNCTIONS = {"copy": _copy_abi, "take_rows": _take_rows_abi, 8: _fill8, 4: _fill4,
              2: _fill2, 1: _fill1}
WORDS = {8: np.uint64, 4: np.uint32, 2: np.uint16, 1: np.uint8}   # item size -> word


def _loop_address(kind):
    return loop_threads.cfunc_address(_FUNCTIONS[kind])


def _usable(nbytes):
    return (nbytes >= SPLIT_MIN_BYTES and workers.NUM_THREADS > 1
            and spin_threads.SUPPORTED)


def copy_bytes(src, dst):
    """dst[:] = src for two contiguous 1-D arrays of one dtype and size, split over the
    helpers when large and paying; False (nothing done) when this path does not apply."""
    nbytes = dst.nbytes
    if not _usable(nbytes):
        return False
    key = ("copy_bytes", nbytes.bit_length())
    if not workers.use_helpers(key):
        workers.timed(workers.record_serial, key, nbytes, np.copyto, dst, src)
        return True
    bases, _ = loop_threads.operand_pointers((src, dst))
    workers.timed(workers.record_parallel, key, nbytes, _split, _loop_address("copy"), bases,
                  _COPY_STEPS, nbytes, dst, src)
    return True


def fill_bits(dst, value):
    """dst[:] = value (a NumPy scalar of dst's dtype) for a contiguous 1-D array, split
    over the helpers when large and paying; False (nothing done) when this path does not
    apply."""
    nbytes = dst.nbytes
    width = dst.itemsize
    if not _usable(nbytes) or width not in WORDS:
        return False
    key = ("fill_bits", nbytes.bit_length())
    if not workers.use_helpers(key):
        workers.timed(workers.record_serial, key, nbytes, dst.fill, value)
        return True
    pattern = np.array([value], dst.dtype).view(WORDS[width])
    flat = dst.view(WORDS[width])
    bases, _ = loop_threads.operand_pointers((pattern, flat))
    steps = np.array([0, width], np.intp)
    workers.timed(workers.record_parallel, key, nbytes, _split_fill, _loop_address(width), bases,
                  steps, flat.size, width, flat, pattern)
    return True


def take_rows(src, index, dst):
    """dst[i] = src[index[i]] over the first dim of C-contiguous `src` and `dst` of one
    dtype (`index`: C-contiguous int64, every value in range and non-negative), split over
    the helpers when large and paying; False (nothing done) when this path does not apply.
    NumPy's `take` copies the rows on one thread (1,024 rows of 512 float32: 69 us,
    PyTorch on two threads 33)."""
    nbytes = dst.nbytes
    n = index.size
    if (not _usable(nbytes) or not n or src.dtype != dst.dtype or index.dtype != np.int64
            or not (src.flags.c_contiguous and dst.flags.c_contiguous
                    and index.flags.c_contiguous) or dst.shape[1:] != src.shape[1:]):
        return False
    row = nbytes // n
    key = ("take_rows", nbytes.bit_length())
    if not workers.use_helpers(key):
        workers.timed(workers.record_serial, key, nbytes, _take_here, src, index, dst)
        return True
    params = np.array([row], np.int64)
    steps = np.array([8, 0, 0, row], np.intp)
    workers.timed(workers.record_parallel, key, nbytes, _split_take, _loop_address("take_rows"),
                  (index, src, params, dst), steps, n, max(1, 64 // row), src, index, dst)
    return True


def _take_here(src, index, dst):
    np.take(src, index, axis=0, out=dst, mode="wrap")     # in range: no buffering


def _split_take(address, operands, steps, n, align, src, index, dst):
    if not spin_threads.run_arrays(address, operands, steps, n, workers.NUM_THREADS, align):
        _take_here(src, index, dst)


_COPY_STEPS = np.array([1, 1], np.intp)


def _split(address, bases, steps, n, dst, src):
    if not spin_threads.run(address, bases, steps, n, workers.NUM_THREADS, 64):
        np.copyto(dst, src)


def _split_fill(address, bases, steps, n, width, flat, pattern):
    if not spin_threads.run(address, bases, steps, n, workers.NUM_THREADS, 64 // width):
        flat.fill(pattern[0])
