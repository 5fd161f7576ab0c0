"""Rows gathered by an index over the helper threads (kernels/cpu/copy_threads.take_rows):
the bytes NumPy's take writes, for `x[idx]` and `index_select` on large results."""
import numpy as np
import pytest

import nbtorch as torch
from nbtorch.kernels.cpu import copy_threads, workers

ROWS = copy_threads.SPLIT_MIN_BYTES // (4 * 100) + 37      # results just over the threshold


@pytest.fixture(params=[False, True], ids=["serial", "split"])
def split(request, monkeypatch):
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    monkeypatch.setattr(workers, "use_helpers", lambda key: request.param)
    return request.param


@pytest.mark.parametrize("dtype,inner", [(np.float32, (100,)), (np.float64, (3, 5)),
                                         (np.int8, (1000,)), (np.complex64, (7,))])
def test_rows_are_numpys_take(dtype, inner, split):
    rng = np.random.default_rng(0)
    src = (rng.standard_normal((50,) + inner) * 100).astype(dtype)
    n = copy_threads.SPLIT_MIN_BYTES // (src[0].nbytes) + 3
    index = rng.integers(0, 50, n).astype(np.int64)
    dst = np.empty((n,) + inner, dtype)
    assert copy_threads.take_rows(src, index, dst)
    np.testing.assert_array_equal(dst, np.take(src, index, axis=0))


def test_cases_left_to_numpy():
    src = np.ones((64, 4096), np.float32)
    index = np.zeros(100, np.int64)
    dst = np.empty((100, 4096), np.float32)
    assert not copy_threads.take_rows(src, index.astype(np.int32), dst)     # index dtype
    assert not copy_threads.take_rows(src[:, ::2], index, dst[:, :2048])     # strided
    assert not copy_threads.take_rows(src, index[:10], dst[:10])             # small
    assert not copy_threads.take_rows(src, index, np.empty((100, 4096)))     # dtype


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_tensor_indexing_takes_the_split_rows(index_dtype, split, monkeypatch):
    calls = []
    real = copy_threads.take_rows
    monkeypatch.setattr(copy_threads, "take_rows",
                        lambda *a: calls.append(a[1].size) or real(*a))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(300, 100, generator=g)
    idx = torch.randint(0, 300, (ROWS,), generator=g, dtype=index_dtype)
    expected = x.numpy()[idx.numpy()]
    np.testing.assert_array_equal(x[idx].numpy(), expected)
    np.testing.assert_array_equal(x[idx - 300].numpy(), expected)     # from the end
    np.testing.assert_array_equal(x.index_select(0, idx).numpy(), expected)
    assert calls == [ROWS, ROWS, ROWS]
    with pytest.raises(IndexError, match="index 300 is out of bounds for dimension 0"):
        x[torch.cat([idx, torch.tensor([300], dtype=index_dtype)])]
