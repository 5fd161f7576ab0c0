"""tril/triu through the direct row kernel (index.tri_copy) and one_hot through
index.one_hot_rows: exact against NumPy and PyTorch, every width, offsets, batches,
layouts, in place, gradients, and PyTorch's errors."""
import numpy as np
import pytest
from harness import dtype_sweep, random_array

import nbtorch
from nbtorch.nn import functional as F

DTYPES = ["float32", "float64", "int64", "int32", "int8", "bool", "float16", "complex64",
          "complex128"]


SWEEP = dtype_sweep(DTYPES, 3)


def _arr(shape, dtype, seed=0):
    return random_array(np.random.default_rng(seed), shape, dtype)


@pytest.mark.parametrize("dtype", SWEEP)
@pytest.mark.parametrize("shape", [(5, 7), (7, 5), (2, 3, 4, 6), (1, 1), (0, 3), (3, 0),
                                   (2, 0, 4)])
def test_tril_triu_match_numpy(dtype, shape):
    a = _arr(shape, dtype)
    x = nbtorch.from_numpy(a.copy())
    for d in (-9, -2, -1, 0, 1, 3, 9):
        lo, up = x.tril(d), x.triu(d)
        assert lo.dtype is x.dtype and lo.shape == x.shape
        np.testing.assert_array_equal(lo.numpy(), np.tril(a, d))
        np.testing.assert_array_equal(up.numpy(), np.triu(a, d))
    np.testing.assert_array_equal(x.numpy(), a)          # input untouched


def test_tril_strided_inputs():
    a = _arr((6, 8, 10), "float32")
    x = nbtorch.from_numpy(a)
    for v, av in [(x.transpose(1, 2), a.transpose(0, 2, 1)), (x[:, ::2, 1::3], a[:, ::2, 1::3]),
                  (x[0].expand(3, 8, 10), np.broadcast_to(a[0], (3, 8, 10)))]:
        for d in (-2, 0, 2):
            np.testing.assert_array_equal(v.tril(d).numpy(), np.tril(av, d))
            np.testing.assert_array_equal(nbtorch.triu(v, d).numpy(), np.triu(av, d))


def test_tril_bfloat16():
    x = nbtorch.randn(4, 5).bfloat16()
    np.testing.assert_array_equal(x.tril(1).float().numpy(), np.tril(x.float().numpy(), 1))


@pytest.mark.parametrize("lower", [True, False])
def test_tril_inplace(lower):
    a = _arr((3, 5, 6), "float64")
    x = nbtorch.from_numpy(a.copy())
    r = x.tril_(-1) if lower else x.triu_(-1)
    assert r is x
    np.testing.assert_array_equal(x.numpy(), np.tril(a, -1) if lower else np.triu(a, -1))
    y = nbtorch.from_numpy(a.copy())
    v = y.transpose(1, 2)                      # in place through a strided view
    v.tril_(1) if lower else v.triu_(1)
    at = a.transpose(0, 2, 1)
    np.testing.assert_array_equal(v.numpy(), np.tril(at, 1) if lower else np.triu(at, 1))


def test_tril_grad():
    x = nbtorch.randn(2, 4, 5, dtype=nbtorch.float64, requires_grad=True)
    for d in (-1, 0, 2):
        assert nbtorch.autograd.gradcheck(lambda z: z.tril(d), (x,))
        assert nbtorch.autograd.gradcheck(lambda z: z.triu(d), (x,))
    y = x.tril(1)
    assert type(y.grad_fn).__name__ == "TrilBackward0"
    assert type(x.triu().grad_fn).__name__ == "TriuBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.tril(np.ones((2, 4, 5)), 1))


def test_tril_errors():
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2"):
        nbtorch.ones(3).tril()
    with pytest.raises(RuntimeError, match="triu: input tensor must have at least 2"):
        nbtorch.ones(3).triu()


def test_tril_meta():
    x = nbtorch.empty(3, 4, 5, device="meta")
    assert x.tril(1).shape == (3, 4, 5) and x.triu().device.type == "meta"


def test_tril_vs_torch():
    torch = pytest.importorskip("torch")
    a = _arr((3, 6, 4), "float32")
    for d in (-2, 0, 1, 5):
        np.testing.assert_array_equal(nbtorch.from_numpy(a).tril(d).numpy(),
                                      torch.from_numpy(a).tril(d).numpy())
        np.testing.assert_array_equal(nbtorch.from_numpy(a).triu(d).numpy(),
                                      torch.from_numpy(a).triu(d).numpy())


@pytest.mark.parametrize("shape,c", [((7,), -1), ((3, 4), 6), ((2, 3, 5), 5), ((), 3),
                                     ((0,), 4), ((2, 0), 3), ((4,), 0)])
def test_one_hot_matches_numpy(shape, c):
    rng = np.random.default_rng(3)
    v = rng.integers(0, max(c, 1) if c else 1, shape) if c else np.zeros(shape, np.int64)
    if c == 0:
        v = np.zeros((0,), np.int64)
    x = nbtorch.from_numpy(v.astype(np.int64))
    out = F.one_hot(x, c)
    n = int(v.max()) + 1 if c == -1 else c
    assert out.dtype is nbtorch.int64 and out.shape == tuple(shape if c else (0,)) + (n,)
    np.testing.assert_array_equal(out.numpy(), (v[..., None] == np.arange(n)).astype(np.int64))


def test_one_hot_strided_index():
    v = nbtorch.arange(24).reshape(4, 6)[:, ::2].t()
    np.testing.assert_array_equal(F.one_hot(v, 24).argmax(-1).numpy(), v.numpy())
    assert F.one_hot(v, 24).sum().item() == v.numel()


def test_one_hot_errors():
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(nbtorch.tensor([1, -1]), 3)
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(nbtorch.tensor([1, 3]), 3)
    with pytest.raises(RuntimeError, match="Can not infer total number of classes"):
        F.one_hot(nbtorch.tensor([], dtype=nbtorch.int64))
    with pytest.raises(RuntimeError, match="only applicable to index tensor of type Long"):
        F.one_hot(nbtorch.tensor([1.0]), 3)


def test_one_hot_vs_torch():
    torch = pytest.importorskip("torch")
    v = np.random.default_rng(0).integers(0, 100, (64, 3))
    a = F.one_hot(nbtorch.from_numpy(v), 100).numpy()
    b = torch.nn.functional.one_hot(torch.from_numpy(v), 100).numpy()
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(F.one_hot(nbtorch.from_numpy(v)).numpy(),
                                  torch.nn.functional.one_hot(torch.from_numpy(v)).numpy())
