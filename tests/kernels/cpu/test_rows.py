"""Row- and column-broadcast add/sub/mul/div (kernels/cpu/rows.py): the loops run for a
bias over a batch or rows scaled by a column, in either operand order and in place, on
one thread or split over the helpers, with NumPy's values; anything else is left to the
ufunc."""
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
    o2, full, r, first, column = rows.plan(out, row, a)
    assert o2.shape == (64, 128) and r.shape == (128,) and first and not column
    assert rows.plan(out, a, out[0]) is None                        # the row overlaps out
    assert rows.plan(out, a, a) is None                             # no broadcast at all
    assert rows.plan(out, a, np.ones((2, 64, 1), np.float32)) is None   # not out's rank
    *_, column = rows.plan(out, a, np.ones((64, 1), np.float32))
    assert column                                                   # a column
    strided = np.ones((64, 128), np.float32)[:, :1]                 # x[:, :1]: copied
    o2, full, c, first, column = rows.plan(out, a, strided)
    assert column and c.flags.c_contiguous and c.shape == (64,)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("split", [False, True])
def test_columns_in_place_and_split_give_numpys_values(dtype, split, monkeypatch):
    from nbtorch.kernels.cpu import ufuncs, workers
    monkeypatch.setattr(ufuncs, "use_helpers", lambda key: split)
    monkeypatch.setattr(workers, "use_helpers", lambda key: split)
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    rng = np.random.default_rng(3)
    n = ufuncs.PARALLEL_THRESHOLD // 256 + 37           # the split path's sizes
    a = rng.standard_normal((n, 256)).astype(dtype)
    col = (rng.standard_normal((n, 1)) + 3).astype(dtype)
    row = (rng.standard_normal(256) + 3).astype(dtype)
    x = nbtorch.tensor(a)
    for name, f in OPS.items():
        for v in (col, row):
            b = nbtorch.tensor(v)
            assert np.array_equal(getattr(nbtorch, name)(x, b).numpy(), f(a, v)), name
            assert np.array_equal(getattr(nbtorch, name)(b, x).numpy(), f(v, a)), name
            y = x.clone()
            getattr(y, name + "_")(b)                    # in place
            assert np.array_equal(y.numpy(), f(a, v)), name
    wide = nbtorch.tensor(rng.standard_normal((n, 512)).astype(dtype))
    np.testing.assert_array_equal((wide * wide[:, :1]).numpy(),
                                  wide.numpy() * wide.numpy()[:, :1])


def test_the_bias_case_takes_the_row_loop(monkeypatch):
    calls = []
    loop = rows.ROW_LOOPS["add"]
    monkeypatch.setitem(rows.ROW_LOOPS, "add", lambda *args: calls.append(1) or loop(*args))
    x, b = nbtorch.ones(64, 128), nbtorch.arange(128, dtype=nbtorch.float32)
    assert np.array_equal((x + b).numpy(), np.ones((64, 128), np.float32) + np.arange(128))
    assert calls
