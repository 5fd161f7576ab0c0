"""nbtorch's own copy of NumPy's OpenBLAS for float32 products (kernels/cpu/blas_private.py):
loaded with the kernels asked for, NumPy's copy and the environment left as they were,
its threads following nbtorch's, and products within rounding of NumPy's."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nbtorch
from nbtorch.kernels.cpu import blas, blas_private, cblas

_LINUX_X86 = sys.platform.startswith("linux") and os.uname().machine == "x86_64"


def _has_avx2():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx2" in f.read()
    except OSError:
        return False


def _run(code, **env):
    full = dict(os.environ, **env)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.split()


_PROBE = """
    import os, numpy as np
    import nbtorch
    from nbtorch.kernels.cpu import blas, blas_private
    a = nbtorch.randn(64, 300); w = nbtorch.randn(200, 300)
    got = (a @ w.t()).numpy(); want = a.numpy().astype(np.float64) @ w.numpy().T.astype(np.float64)
    err = float(np.abs(got - want).max() / np.abs(want).max())
    lib = blas.private_library()
    print(blas_private.core_name(blas.library()), lib is not None and blas_private.core_name(lib),
          "OPENBLAS_CORETYPE" in os.environ, err < 1e-5)
"""


@pytest.mark.skipif(not _LINUX_X86 or blas.library() is None or not _has_avx2(),
                    reason="x86-64 Linux OpenBLAS on an AVX2 CPU (the Haswell kernels)")
def test_a_copy_with_the_kernels_asked_for_leaves_numpy_and_the_environment_alone(tmp_path):
    numpy_core = blas_private.core_name(blas.library())
    out = _run(_PROBE, NBTORCH_OPENBLAS_CORETYPE="Haswell", NBTORCH_CACHE_DIR=str(tmp_path))
    assert out == [numpy_core, "Haswell", "False", "True"]
    assert any(name.endswith("-nbtorch.so") for name in os.listdir(tmp_path / "openblas"))
    again = _run(_PROBE, NBTORCH_OPENBLAS_CORETYPE="Haswell", NBTORCH_CACHE_DIR=str(tmp_path))
    assert again == out                                    # the cached copy is reused


@pytest.mark.skipif(blas.library() is None, reason="no OpenBLAS")
def test_numpy_keeps_every_product_when_asked():
    out = _run(_PROBE, NBTORCH_OPENBLAS_CORETYPE="numpy")
    assert out[1:] == ["False", "False", "True"]


@pytest.mark.skipif(blas.private_library() is None, reason="no private copy on this CPU")
def test_the_copys_threads_follow_nbtorchs_and_products_stay_within_rounding():
    import ctypes
    lib = blas.private_library()
    get = lib.scipy_openblas_get_num_threads64_
    get.restype = ctypes.c_int
    before = nbtorch.get_num_threads()
    try:
        nbtorch.set_num_threads(1)
        assert get() == 1 == blas.threads()
    finally:
        nbtorch.set_num_threads(before)
    assert get() == blas.threads()
    rng = np.random.default_rng(0)
    for sa, sb in (((130, 100), (100, 90)), ((3, 130, 100), (3, 100, 90)),  # > PRIVATE_MIN_WORK
                   ((3, 130, 100), (100, 90)), ((37, 50), (50, 29))):         # ... and under
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        out = np.empty(np.broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1]), np.float32)
        cblas.matmul(a, b, out)
        np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-5, atol=1e-4)
    small = rng.standard_normal((37, 50)).astype(np.float32)            # NumPy's copy: its bits
    out = np.empty((37, 37), np.float32)
    cblas.matmul(small, small.T, out)
    np.testing.assert_array_equal(out, np.matmul(small, small.T))


_SPIN_PROBE = """
    import os, time, nbtorch
    from nbtorch.kernels.cpu import blas
    nbtorch.set_num_threads(2)
    a = nbtorch.randn(512, 512)
    busy = []
    for _ in range(3):
        a @ a                                        # two threads, on the private copy
        t = sum(os.times()[:2])
        time.sleep(0.3)
        busy.append(sum(os.times()[:2]) - t)
    print(blas.private_library() is not None, max(busy))
"""


@pytest.mark.skipif(blas.private_library() is None or (os.cpu_count() or 1) < 2,
                    reason="no private copy on this CPU, or one core")
def test_the_copys_workers_sleep_soon_after_a_product():
    # OpenBLAS's own default spins a worker for 2^28 ticks (~0.1 s); CPU time in a 0.3 s
    # sleep after a product, the most of three (a loaded machine can only lower a spin's)
    spun = _run(_SPIN_PROBE, NBTORCH_OPENBLAS_THREAD_TIMEOUT="30")     # 2^30 ticks: > 0.3 s
    ours = _run(_SPIN_PROBE)
    assert spun[0] == ours[0] == "True"
    assert float(spun[1]) >= 0.06 and float(ours[1]) <= 0.03, (spun, ours)


def test_layouts_blas_cannot_take_fall_back_to_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 6, 10)).astype(np.float32)[:, :, ::2]     # stride 2 rows
    b = rng.standard_normal((4, 5, 3)).astype(np.float32)
    out = np.empty((4, 6, 3), np.float32)
    cblas.matmul(a, b, out)
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-5, atol=1e-5)
    x = rng.standard_normal((5, 5)).astype(np.float32)
    want = np.matmul(x, x)
    cblas.matmul(x, x, x)                                 # out aliasing an input: NumPy's
    np.testing.assert_allclose(x, want, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(blas.private_library() is None, reason="no private copy on this CPU")
def test_kernels_calling_gemm_by_address_pick_the_copy_by_product_size():
    """gemm_rows' ranges and the conv per-image blocks: above PRIVATE_MIN_WORK the copy's
    cblas_sgemm, below (LeNet's blocks) NumPy's, as `cblas.matmul` decides."""
    from nbtorch.kernels.cpu import conv, gemm_rows
    big, small = cblas.gemm_address(np.float32, 10 ** 7), cblas.gemm_address(np.float32)
    assert big and small and big != small
    a, b = np.ones((128, 128), np.float32), np.ones((128, 128), np.float32)
    plan = gemm_rows._plan("f", a.shape, a.strides, b.shape, b.strides, 2)  # 64x128x128
    assert plan[0][0] == big
    plan = gemm_rows._plan("f", (32, 64), (256, 4), (64, 64), (256, 4), 2)    # 16x64x64
    assert plan[0][0] == small

    def conv_address(x_shape, w_shape, pad):
        x, w = np.ones(x_shape, np.float32), np.ones(w_shape, np.float32)
        out_size = tuple(s + 2 * pad - k + 1 for s, k in zip(x_shape[2:], w_shape[2:]))
        y = np.ones(x_shape[:1] + w_shape[:1] + out_size, np.float32)
        x5, w5, y5 = (v.reshape(v.shape[:2] + (1,) + v.shape[2:]) for v in (x, w, y))
        plan = conv._gemm_plan(x5, w5, y5.reshape(y5.shape[:2] + (-1,)), 1, (1,) + w_shape[2:],
                               (1, 1, 1), (0, pad, pad), (1, 1, 1), (1,) + out_size)
        return plan[0]
    assert conv_address((4, 1, 28, 28), (6, 1, 5, 5), 0) == small       # LeNet c1
    assert conv_address((4, 16, 28, 28), (32, 16, 3, 3), 1) == big      # 32x144 @ 144x784
