"""kernels/cpu/row_extreme.py: the NaN-propagating row max/min (llvm.maximum with nsz) and
the first-extreme index, against NumPy over dtypes, NaN/inf placements and row lengths
around the vector widths; the op-level results against PyTorch where it is installed."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbtorch
from nbtorch.kernels.cpu import reduce as R
from nbtorch.kernels.cpu.row_extreme import first_equal, row_arg_extreme, row_extreme

_SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0]


def _expected(a, want_max):
    """NumPy's max/min (NaN propagates) and the first index of it (of the first NaN)."""
    m = a.max() if want_max else a.min()
    if np.issubdtype(a.dtype, np.floating) and np.isnan(a).any():
        return m, int(np.flatnonzero(np.isnan(a))[0])
    return m, int(np.flatnonzero(a == m)[0])


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 300), dtype=st.sampled_from([np.float32, np.float64]),
       specials=st.lists(st.tuples(st.integers(0, 299), st.sampled_from(_SPECIALS)),
                         max_size=4), seed=st.integers(0, 2**16))
def test_float_rows_match_numpy(n, dtype, specials, seed):
    a = np.random.default_rng(seed).integers(-5, 6, n).astype(dtype)
    for i, v in specials:
        a[i % n] = v
    for want_max in (True, False):
        m, k = _expected(a, want_max)
        got = row_extreme(a, want_max)
        assert (np.isnan(got) and np.isnan(m)) or got == m
        assert row_arg_extreme(a, want_max) == k


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8, np.uint8])
def test_integer_rows_match_numpy(dtype):
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    for n in (1, 7, 16, 63, 64, 65, 257, 1000):
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        for want_max in (True, False):
            m, k = _expected(a, want_max)
            assert row_extreme(a, want_max) == m
            assert row_arg_extreme(a, want_max) == k


def test_nan_anywhere_in_long_rows():
    """A NaN in any vector lane or in the tail is found (rows cross 64-float blocks)."""
    for n in (64, 100, 1000):
        for pos in sorted({0, 1, 15, 16, 63, n // 2, n - 1}):
            a = np.arange(n, dtype=np.float32)
            a[pos] = np.nan
            assert np.isnan(row_extreme(a, True)) and np.isnan(row_extreme(a, False))
            assert row_arg_extreme(a, True) == pos == row_arg_extreme(a, False)
    assert first_equal(np.arange(200, dtype=np.float32), np.float32(150)) == 150
    assert first_equal(np.zeros(3, np.float32), np.float32(1)) == -1


def test_split_rows_match_serial():
    """amax/amin(1) over rows large enough to split over the helpers: the serial values."""
    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal((600, 500)).astype(dtype)
        a[5, 7] = np.nan
        a[9, :] = -np.inf
        a[11, 3] = np.inf
        for launcher, ref in ((R.amax, np.max), (R.amin, np.min)):
            for _ in range(3):            # the first call of a kind runs serially
                out = np.empty((600, 1), dtype)
                launcher(a.reshape(600, 500, 1), out)
                np.testing.assert_array_equal(out[:, 0], ref(a, axis=1))


def test_ops_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 130)).astype(np.float32)
    a[1, 5] = a[1, 90] = np.nan
    a[2, :] = -np.inf
    a[3, 7] = np.inf
    a[4, :] = np.inf
    a[5, 100] = np.nan
    a[5, 101] = np.inf
    x, t = nbtorch.from_numpy(a), torch.from_numpy(a)
    for dim in (1, 0):
        np.testing.assert_array_equal(x.amax(dim).numpy(), t.amax(dim).numpy())
        np.testing.assert_array_equal(x.amin(dim).numpy(), t.amin(dim).numpy())
        for name in ("max", "min"):
            v, i = getattr(x, name)(dim)
            tv, ti = getattr(t, name)(dim)
            np.testing.assert_array_equal(v.numpy(), tv.numpy())
            np.testing.assert_array_equal(i.numpy(), ti.numpy())
        for name in ("softmax", "log_softmax"):
            np.testing.assert_allclose(getattr(x, name)(dim).numpy(),
                                       getattr(t, name)(dim).numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(IndexError):
        nbtorch.zeros(3, 0).amax(1)
    with pytest.raises(IndexError):
        nbtorch.zeros(3, 0).max(1)
