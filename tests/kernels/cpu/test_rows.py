"""Row-broadcast add/sub/mul/div (kernels/cpu/rows.py): the loops run for a bias over a
batch, in either operand order and in place, with NumPy's values; anything else is left
to the ufunc."""
import numpy as np
import pytest

import nbtorch
from nbtorch.kernels.cpu import rows

OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, row", [((64, 128), (128,)), ((4, 16, 64), (16, 64)),
                                        ((4, 16, 64), (1, 64))])
def test_row_broadcast_matches_numpy(dtype, shape, row):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(dtype)
    r = (rng.standard_normal(row) + 3).astype(dtype)
    x, b = nbtorch.tensor(a), nbtorch.tensor(r)
    for name, f in OPS.items():
        assert np.array_equal(getattr(nbtorch, name)(x, b).numpy(), f(a, r))
        assert np.array_equal(getattr(nbtorch, name)(b, x).numpy(), f(r, a))
    y = x.clone()
    y.add_(b)
    assert np.array_equal(y.numpy(), a + r)


def test_plan_only_for_contiguous_rows_apart_from_out():
    out = np.empty((64, 128), np.float32)
    a, row = np.ones((64, 128), np.float32), np.ones(128, np.float32)
    o2, full, r, row_first = rows.plan(out, row, a)
    assert o2.shape == (64, 128) and r.shape == (128,) and row_first
    assert rows.plan(out, a, row[::-1].copy()[::-1]) is None       # a strided row
    assert rows.plan(out, a, out[0]) is None                        # the row overlaps out
    assert rows.plan(out, a, np.ones((64, 1), np.float32)) is None  # a column, not a row
    assert rows.plan(out, a, a) is None                             # no broadcast at all


def test_the_bias_case_takes_the_row_loop(monkeypatch):
    calls = []
    loop = rows.ROW_LOOPS["add"]
    monkeypatch.setitem(rows.ROW_LOOPS, "add", lambda *args: calls.append(1) or loop(*args))
    x, b = nbtorch.ones(64, 128), nbtorch.arange(128, dtype=nbtorch.float32)
    assert np.array_equal((x + b).numpy(), np.ones((64, 128), np.float32) + np.arange(128))
    assert calls


def test_large_row_broadcasts_stay_with_the_threaded_ufunc(monkeypatch):
    """From PARALLEL_THRESHOLD elements the ufunc's split over threads is faster than one
    row loop; with one thread the row loop runs."""
    from nbtorch.kernels.cpu import ufuncs, workers
    calls = []
    loop = rows.ROW_LOOPS["mul"]
    monkeypatch.setitem(rows.ROW_LOOPS, "mul", lambda *args: calls.append(1) or loop(*args))
    n = ufuncs.PARALLEL_THRESHOLD // 256
    x, b = nbtorch.ones(n, 256), nbtorch.arange(256, dtype=nbtorch.float32)
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    two = (x * b).numpy()
    assert not calls
    monkeypatch.setattr(workers, "NUM_THREADS", 1)
    one = (x * b).numpy()
    assert calls and np.array_equal(one, two)
