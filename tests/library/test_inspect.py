"""nbtorch.kernels.inspect: the kernel the registry picks, its source, Numba's IR/asm/PTX."""
import re

import numba
import pytest

import nbtorch
from nbtorch import library


def test_add_float32_cpu_gives_source_signature_llvm_and_asm():
    r = nbtorch.kernels.inspect("add", device="cpu", dtype=nbtorch.float32)
    assert r.kernel_name == "cpu.ufuncs.add"
    assert r.kernel_module == "nbtorch.kernels.cpu.ufuncs"
    assert "def run(out, *args)" in r.source             # the launcher's source
    f = r.functions[0]
    assert f.kind == "ufunc" and f.name == "add" and "return a + b" in f.source
    assert r.signatures == ["(float32, float32) -> float32"]
    assert "define" in r.llvm and re.search(r"fadd( \w+)* float", r.llvm)
    assert "vaddps" in r.asm or "addss" in r.asm               # the NumPy loop, vectorised
    assert r.compile_time > 0
    assert "cpu.ufuncs.add" in repr(r) and "<details" in r._repr_html_()


def test_sum_njit_kernel():
    r = nbtorch.kernels.inspect("sum", dtype=nbtorch.float64)
    assert r.kernel_module == "nbtorch.kernels.cpu.reduce"        # the launcher beside its kernels
    names = [f.name for f in r.functions]
    assert "sum_rows" in names                            # the njit kernels the launcher calls
    f = r.functions[names.index("sum_rows")]
    assert f.kind == "njit" and "float64" in f.signatures[0]
    assert "define" in f.llvm and f.asm and f.compile_time > 0


def test_custom_op_kernels_are_inspectable():
    with library.Library("t_inspect") as lib:
        op = lib.define("twice", lambda x: x.shape)

        @op.register_kernel("cpu")
        @numba.njit
        def twice_kernel(x, out):
            for i in range(out.size):
                out.flat[i] = 2 * x.flat[i]

        op(nbtorch.ones(3))
        r = nbtorch.kernels.inspect("t_inspect::twice")
        f = r.functions[0]
        assert f.name == "twice_kernel" and "out.flat[i] = 2" in f.source
        assert r.functions[0].llvm and not r.functions[0].note   # compiled here: no recompile

        lib.elementwise(lambda x: x * x, name="square")
        r = nbtorch.kernels.inspect("t_inspect::square", dtype=nbtorch.float64)
        assert r.signatures == ["(float64,) -> float64"] and re.search(r"fmul( \w+)* double", r.llvm)


def test_kernel_without_numba_says_so():
    # LAPACK through NumPy: no Numba function on any path (matmul's BLAS launcher is no
    # longer such a kernel: its transposed small-batch path copies back with copy_strided,
    # which inspect reports once compiled for the dtype)
    r = nbtorch.kernels.inspect("linalg_qr", dtype=nbtorch.float64)
    assert r.kernel_name == "qr" and not r.functions
    assert r.notes == ["this kernel runs no Numba function (e.g. BLAS through NumPy)"]


def test_errors():
    with pytest.raises(ValueError, match="unknown op 'ad'.*did you mean add"):
        nbtorch.kernels.inspect("ad")
    with pytest.raises(ValueError, match="unknown device type 'tpu'"):
        nbtorch.kernels.inspect("add", device="tpu")
    with pytest.raises(ValueError, match="no float16"):
        nbtorch.kernels.inspect("add", dtype=nbtorch.float16)
    with pytest.raises(TypeError, match="unknown dtype"):
        nbtorch.kernels.inspect("add", dtype="float128")


def _ptx_works():
    from numba.cuda.core import config
    if config.ENABLE_CUDASIM:
        return False
    try:
        from numba import cuda
        cuda.compile_ptx(lambda a: a, (numba.float32,), device=True, cc=(8, 0))
        return True
    except Exception:
        return False


@pytest.mark.skipif(not _ptx_works(), reason="numba.cuda.compile_ptx unavailable (no NVVM)")
def test_add_cuda_ptx():
    r = nbtorch.kernels.inspect("add", device="cuda", dtype=nbtorch.float32)
    assert r.ptx and "add.f32" in r.ptx and ".target sm_" in r.ptx
    assert r.functions[0].compile_time > 0
