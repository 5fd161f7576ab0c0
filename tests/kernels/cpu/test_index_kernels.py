"""kernels/cpu/index.py: the index range check and the row gathers and scatters."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nbtorch.kernels.cpu import index as K


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 9000), size=st.integers(0, 1000),
       bad=st.lists(st.tuples(st.integers(0, 8999),
                              st.sampled_from([-1, -(2 ** 63), 2 ** 62, 0, 1])), max_size=3))
def test_first_outside_finds_the_first_bad_index(n, size, bad):
    """The blocked check names the first index outside [0, size), as a plain scan would,
    whatever block it falls in (extreme values too)."""
    rng = np.random.default_rng(n)
    a = rng.integers(0, max(size, 1), n).astype(np.int64)
    for pos, kind in bad:
        if pos < n:
            a[pos] = size + kind if kind in (0, 1) else kind
    outside = np.flatnonzero((a < 0) | (a >= size))
    assert K.first_outside(a, size) == (outside[0] if outside.size else -1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_row_gathers_and_scatters_match_numpy(dtype):
    rng = np.random.default_rng(0)
    src = rng.standard_normal((6, 7, 5)).astype(dtype)
    flat = src.reshape(-1)
    idx = rng.integers(0, 7, (6, 4, 5)).astype(np.int64)
    want = np.take_along_axis(src, idx, 1)              # along a middle dim: sd 5, sl 1
    rows = idx.transpose(0, 2, 1).reshape(30, 4)
    base = (np.arange(6)[:, None] * 35 + np.arange(5)[None, :]).reshape(-1).astype(np.int64)
    out = np.empty((30, 4), dtype)
    K.gather_rows(flat, base, rows, 5, 0, out)
    np.testing.assert_array_equal(out.reshape(6, 5, 4).transpose(0, 2, 1), want)
    last = rng.integers(0, 5, (42, 3)).astype(np.int64)  # along the last dim: sd 1, sl 0
    out = np.empty((42, 3), dtype)
    K.gather_rows(flat, np.arange(42, dtype=np.int64) * 5, last, 1, 0, out)
    np.testing.assert_array_equal(out, np.take_along_axis(src.reshape(42, 5), last, 1))
    dst = np.zeros(42 * 5, dtype)
    K.scatter_add_rows(dst, np.arange(42, dtype=np.int64) * 5, last, 1, 0, out)
    want = np.zeros((42, 5), dtype)
    np.add.at(want, (np.arange(42)[:, None], last), out)
    np.testing.assert_array_equal(dst.reshape(42, 5), want)
