"""x[mask] and masked_select with a mask of x's shape through index.compress (a count,
then one branch-free compaction pass), and diag of a 2-D tensor as one copy of NumPy's
diagonal view: exact against NumPy and PyTorch."""
import numpy as np
import pytest
from harness import dtype_sweep, random_array

import nbtorch

DTYPES = ["float32", "float64", "int64", "int8", "bool", "float16", "complex64",
          "complex128"]


SWEEP = dtype_sweep(DTYPES, 3)


_arr = random_array


@pytest.mark.parametrize("dtype", SWEEP)
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 4), (2, 3, 5), (0, 3), (4, 0)])
def test_mask_index_matches_numpy(shape, dtype):
    rng = np.random.default_rng(0)
    a = _arr(rng, shape, dtype)
    x = nbtorch.from_numpy(a.copy())
    for m in (rng.random(shape) > 0.5, np.zeros(shape, bool), np.ones(shape, bool),
              np.arange(int(np.prod(shape))).reshape(shape) == 0):     # only the first
        M = nbtorch.from_numpy(m)
        for r in (x[M], x[(M,)], x.masked_select(M), nbtorch.masked_select(x, M)):
            assert r.dtype is x.dtype and r.shape == (int(m.sum()),)
            np.testing.assert_array_equal(r.numpy(), a[m])


def test_mask_index_strided_and_broadcast():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 8)).astype(np.float32)
    x = nbtorch.from_numpy(a)
    v, av = x.t()[::2], a.T[::2]
    np.testing.assert_array_equal(v[v > 0].numpy(), av[av > 0])
    m = rng.random(8) > 0.5                      # broadcast mask: masked_select
    np.testing.assert_array_equal(x.masked_select(nbtorch.from_numpy(m)).numpy(),
                                  a[np.broadcast_to(m, a.shape)])
    xb = nbtorch.from_numpy(a[:, :1])
    mb = nbtorch.from_numpy(rng.random((6, 8)) > 0.5)
    np.testing.assert_array_equal(xb.masked_select(mb).numpy(),
                                  np.broadcast_to(a[:, :1], (6, 8))[mb.numpy()])


def test_mask_index_large_random():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((257, 129)).astype(np.float32)
    x = nbtorch.from_numpy(a)
    np.testing.assert_array_equal(x[x > 0].numpy(), a[a > 0])
    np.testing.assert_array_equal(x[x > 3].numpy(), a[a > 3])


def test_mask_index_grad():
    x = nbtorch.randn(4, 5, dtype=nbtorch.float64, requires_grad=True)
    m = x.detach() > 0
    assert nbtorch.autograd.gradcheck(lambda z: z[m] * 2, (x,))
    assert nbtorch.autograd.gradcheck(lambda z: z.masked_select(m), (x,))


def test_mask_index_errors():
    x = nbtorch.randn(3, 4)
    with pytest.raises(IndexError):
        x[nbtorch.ones(3, 5, dtype=nbtorch.bool)]


def test_mask_index_vs_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 33)).astype(np.float32)
    m = a > 0.3
    np.testing.assert_array_equal(nbtorch.from_numpy(a)[nbtorch.from_numpy(m)].numpy(),
                                  torch.from_numpy(a)[torch.from_numpy(m)].numpy())


@pytest.mark.parametrize("dtype", SWEEP)
def test_diag_2d_matches_numpy(dtype):
    rng = np.random.default_rng(4)
    a = _arr(rng, (9, 6), dtype)
    x = nbtorch.from_numpy(a)
    for v, av in [(x, a), (x.t(), a.T), (x[::2, 1::2], a[::2, 1::2]), (x[:0], a[:0])]:
        for d in (-20, -3, 0, 2, 5, 6, 20):
            r = v.diag(d)
            assert r.dtype is v.dtype and r.shape == np.diag(av, d).shape
            np.testing.assert_array_equal(r.numpy(), np.diag(av, d))
            np.testing.assert_array_equal(nbtorch.diag(v, d).numpy(), np.diag(av, d))


def test_diag_result_owns_its_memory_and_grads():
    x = nbtorch.randn(4, 4)
    d = x.diag()
    d += 1
    np.testing.assert_array_equal(x.diag().numpy() + 1, d.numpy())
    y = nbtorch.randn(4, 5, dtype=nbtorch.float64, requires_grad=True)
    assert nbtorch.autograd.gradcheck(lambda z: z.diag(1), (y,))
    with nbtorch.no_grad():
        assert y.diag().grad_fn is None
    assert y.diag().requires_grad
