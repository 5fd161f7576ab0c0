"""The CPU matmul launchers (BLAS and the packed Numba GEMM) against NumPy in float64."""
import numpy as np
import pytest

from nbtorch.kernels.cpu import matmul as K

LAUNCHERS = sorted(K.LAUNCHERS)

# (M, K, N): 1x1, odd sizes, exact tiles, K over one k block, big enough for the
# parallel tile loop, empty dims
SHAPES = [(1, 1, 1), (7, 13, 5), (K.MR, 8, K.NR), (9, K.KC + 3, 2 * K.NR + 1),
          (64, 2 * K.KC + 10, 2 * K.NR + 6), (0, 3, 4), (3, 0, 4), (3, 4, 0)]


def _ref(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def _tol(dtype):
    return {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12}[np.dtype(dtype).name]


def _check(launcher, a, b, out=None):
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if out is None:
        out = np.full(batch + (a.shape[-2], b.shape[-1]), 7, a.dtype)
    K.LAUNCHERS[launcher](a, b, out)
    ref = _ref(a, b)
    tol = _tol(a.dtype)
    scale = max(1.0, np.abs(ref).max()) if ref.size else 1.0
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * scale)
    return out


@pytest.mark.parametrize("launcher", LAUNCHERS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_2d_values(launcher, dtype, shape):
    m, k, n = shape
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    out = _check(launcher, a, b)
    if k == 0:
        assert not out.any()          # an empty sum is zero, not the buffer's old values


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_batched_with_broadcast_batch_dims(launcher):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    b = rng.standard_normal((1, 3, 6, 7)).astype(np.float32)
    _check(launcher, a, b)
    _check(launcher, a, np.broadcast_to(b[0, 0], (2, 3, 6, 7)))   # stride-0 batch dims


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_strided_inputs_and_output(launcher):
    rng = np.random.default_rng(2)
    base = rng.standard_normal((20, 18))
    a = base[::2, 1::3]             # (10, 6), no unit stride at all
    b = base[:6, :9].T.T            # a plain slice
    _check(launcher, a, b)
    _check(launcher, base[:9, :6].T, base[:9, :5])   # transposed A
    out = np.zeros((5, 20))[:, ::2][:, :5].T.copy().T   # Fortran-ordered output
    assert not out.flags.c_contiguous
    _check(launcher, base[:5, :6], base[6:12, :5], out=out)
    big = np.zeros((5, 10))
    _check(launcher, base[:5, :6], base[6:12, :5], out=big[:, ::2])   # strided output


@pytest.mark.parametrize("launcher", LAUNCHERS)
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_integer_dtypes(launcher, dtype):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 9, (2, 4, 5)).astype(dtype)
    b = rng.integers(0, 9, (2, 5, 3)).astype(dtype)
    out = np.empty((2, 4, 3), dtype)
    K.LAUNCHERS[launcher](a, b, out)
    np.testing.assert_array_equal(out, np.matmul(a, b))   # uint8 wraps like NumPy/PyTorch


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_float16_computes_in_float32(launcher):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 40)).astype(np.float16)
    b = rng.standard_normal((40, 2)).astype(np.float16)
    out = _check(launcher, a, b)
    assert out.dtype == np.float16


def test_big_shape_takes_the_parallel_path():
    m, k, n = SHAPES[4]
    assert m * k * n >= K.PARALLEL_MIN_WORK > 9 * (K.KC + 3) * (2 * K.NR + 1)


def test_pack_panels_pads_with_zeros():
    src = np.arange(2 * 3 * 5, dtype=np.float64).reshape(2, 3, 5)
    dst = np.full((2, 2, 3, 4), np.nan)
    K.pack_panels(src, dst)
    np.testing.assert_array_equal(dst[:, 0], src[:, :, :4])
    np.testing.assert_array_equal(dst[:, 1, :, 0], src[:, :, 4])
    assert not dst[:, 1, :, 1:].any()
