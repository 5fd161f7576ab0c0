"""kernels/cpu/stream.py: the 256-bit streaming loops of add, sub, mul, div and relu give
the ufunc loops' bits (one IEEE operation per element), serially and split."""
import numpy as np
import pytest

from harness import awkward_floats
from nbtorch.kernels.cpu import loop_threads, spin_threads, stream, ufuncs

N = (1 << 17) + 37           # not a multiple of a vector or a chunk
BINARY = ["add", "sub", "mul", "div"]


def _types(name, dtype):
    c = np.dtype(dtype).char
    return (c if name == "relu" else c * 2) + "->" + c


@pytest.mark.parametrize("name", BINARY + ["relu"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_streaming_loops_give_the_ufunc_loops_bits(name, dtype):
    types = _types(name, dtype)
    address = stream.address(name, types)
    assert address
    ins = [awkward_floats(N, dtype, 1)] + ([awkward_floats(N, dtype, 2)] if name != "relu"
                                           else [])
    want = np.empty(N, dtype)
    with np.errstate(all="ignore"):
        ufuncs.loop(name, types)(*ins, want, signature=types)
    serial = np.full(N, np.nan, dtype)
    loop_threads.run_loop(address, ins + [serial], N, 1)
    assert serial.tobytes() == want.tobytes()
    if spin_threads.SUPPORTED:
        for _ in range(3):                          # helpers asleep, then spinning
            split = np.full(N, np.nan, dtype)
            assert spin_threads.run_dense(address, tuple(ins) + (split,), N, 2,
                                          loop_threads.ALIGN, loop_threads.BLOCK)
            assert split.tobytes() == want.tobytes()


def test_only_the_streaming_bodies_and_float_types_have_a_loop():
    assert stream.address("exp", "ff->f") == 0
    assert stream.address("add", "ii->i") == 0 and stream.address("add", "ee->e") == 0
    assert stream.BODIES == {"add", "sub", "mul", "div", "relu"}


def test_the_loops_ask_for_256_bit_vectors():
    """The attribute reaches LLVM (the loop function's definition carries it) and, where
    the CPU has 512-bit registers, the machine code uses none."""
    import numba
    compiled = numba.cfunc(loop_threads.LOOP_ABI, nogil=True)(stream._add_loop)
    assert '"prefer-vector-width"="256"' in compiled.inspect_llvm()
    assert "zmm" not in compiled._library.get_asm_str()
