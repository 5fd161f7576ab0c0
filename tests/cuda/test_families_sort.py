"""sort / argsort / topk / median / mode / unique / bincount / histc on CUDA vs the CPU."""
import numpy as np
import pytest

import nbtorch

pytestmark = pytest.mark.cuda


def _same(c, g):
    c, g = (tuple(c), tuple(g)) if isinstance(c, tuple) else ((c,), (g,))
    for u, v in zip(c, g):
        assert v.device.type == "cuda" and u.shape == v.shape and u.dtype == v.dtype
        np.testing.assert_array_equal(v.cpu().numpy(), u.numpy())


A = np.array([[3, 1, np.nan, 1, 2], [0, -1, 5, 5, np.nan], [2, 2, 2, 1, 1]], np.float32)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
def test_sort_stable_with_nan(descending, dim):
    x = nbtorch.tensor(A)
    _same(nbtorch.sort(x, dim, descending=descending, stable=True),
          nbtorch.sort(x.to("cuda"), dim, descending=descending, stable=True))


@pytest.mark.parametrize("n", [1, 7, 16, 23])
def test_bitonic_rows_and_long_rows_by_rank(n):
    """Rows up to BITONIC_MAX (16 on the simulator) sort bitonically, longer ones by rank."""
    rng = np.random.default_rng(n)
    a = rng.integers(0, 4, (2, n)).astype(np.float64)
    a[0, ::3] = np.nan
    x = nbtorch.tensor(a)
    for desc in (False, True):
        _same(nbtorch.sort(x, 1, descending=desc, stable=True),
              nbtorch.sort(x.to("cuda"), 1, descending=desc, stable=True))


def test_selections_and_integer_sort():
    x = nbtorch.tensor(np.nan_to_num(A))
    xg = x.to("cuda")
    _same(nbtorch.topk(x, 2, 1), nbtorch.topk(xg, 2, 1))
    _same(nbtorch.argsort(x, 0), nbtorch.argsort(xg, 0))
    _same(nbtorch.median(x, 1), nbtorch.median(xg, 1))
    _same(nbtorch.mode(x, 1), nbtorch.mode(xg, 1))
    i = nbtorch.tensor([[3, 1, 2, 1], [0, 0, -2, 7]])
    _same(nbtorch.sort(i, 1), nbtorch.sort(i.to("cuda"), 1))
    b = nbtorch.tensor([True, False, True])
    _same(nbtorch.sort(b), nbtorch.sort(b.to("cuda")))


def test_unique_bincount_histc():
    x = nbtorch.tensor([3, 1, 3, 0, 1, 3])
    xg = x.to("cuda")
    _same(nbtorch.unique(x, return_inverse=True, return_counts=True),
          nbtorch.unique(xg, return_inverse=True, return_counts=True))
    _same(nbtorch.bincount(x), nbtorch.bincount(xg))
    w = nbtorch.tensor([0.5, 1.0, 2.0, 0.25, 1.0, 1.0])
    _same(nbtorch.bincount(x, w), nbtorch.bincount(xg, w.to("cuda")))
    f = nbtorch.tensor([0.1, 0.5, 0.9, 1.0, -1.0, 0.5])
    _same(nbtorch.histc(f, 4, 0, 1), nbtorch.histc(f.to("cuda"), 4, 0, 1))
