"""x[idx], x[:, idx] and index_select on the CPU's row path (`ops/indexing_rows.py`):
NumPy's values, PyTorch's errors, and the gradient's rows added back in order."""
import numpy as np
import pytest

import nbtorch


def _x(shape, dtype=np.float32):
    return np.random.default_rng(0).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_, np.float16,
                                   np.complex64])
def test_row_index_matches_numpy(dtype):
    a = _x((7, 5, 3)).astype(dtype)
    x = nbtorch.from_numpy(a)
    idx = np.array([3, -1, 0, 3, 6])
    i = nbtorch.tensor(idx)
    np.testing.assert_array_equal(x[i].numpy(), a[idx])
    np.testing.assert_array_equal(x[:, i[:3] % 5].numpy(), a[:, idx[:3] % 5])
    np.testing.assert_array_equal(x[:, :, i[:2] % 3].numpy(), a[:, :, idx[:2] % 3])
    i2 = nbtorch.tensor([[1, 2], [6, 0]])                   # any index shape
    np.testing.assert_array_equal(x[i2].numpy(), a[np.array([[1, 2], [6, 0]])])
    np.testing.assert_array_equal(x.index_select(1, nbtorch.tensor([4, 0])).numpy(),
                                  a[:, [4, 0]])


def test_strided_sources_and_index_dtypes():
    a = _x((6, 8))
    x = nbtorch.from_numpy(a).t()                            # transposed
    for dt in (nbtorch.int64, nbtorch.int32, nbtorch.int16, nbtorch.int8):
        i = nbtorch.tensor([5, 0, 5], dtype=dt)
        np.testing.assert_array_equal(x[i].numpy(), a.T[[5, 0, 5]])
    np.testing.assert_array_equal(x[nbtorch.tensor([], dtype=nbtorch.int64)].numpy(),
                                  a.T[[]])


def test_out_of_range_indices_raise_pytorchs_errors():
    x = nbtorch.zeros(4, 3)
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 4"):
        x[nbtorch.tensor([0, 4])]
    with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 0"):
        x[nbtorch.tensor([-5])]
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x[:, nbtorch.tensor([3])]
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(0, nbtorch.tensor([7]))


@pytest.mark.parametrize("dim", [0, 1])
def test_gradient_adds_rows_back(dim):
    a = _x((6, 4), np.float64)
    idx = np.array([1, 5, 1, -1, 0])
    x = nbtorch.tensor(a, requires_grad=True)
    index = (slice(None),) * dim + (nbtorch.tensor(idx % a.shape[dim]),)
    g = _x((5, 4) if dim == 0 else (6, 5), np.float64)
    x[index].backward(nbtorch.from_numpy(g))
    want = np.zeros_like(a)
    np.add.at(want, (slice(None),) * dim + (idx % a.shape[dim],), g)
    np.testing.assert_array_equal(x.grad.numpy(), want)
    assert nbtorch.autograd.gradcheck(lambda t: t[index] * 2, (x,))
    # a graph of the backward (create_graph) takes the general path, which records
    gx, = nbtorch.autograd.grad((x[index] ** 2).sum(), x, create_graph=True)
    gx.sum().backward()
    want2 = np.zeros_like(a)
    np.add.at(want2, (slice(None),) * dim + (idx % a.shape[dim],), 2.0)
    np.testing.assert_allclose(x.grad.numpy(), want + want2)


def test_embedding_style_lookup_gradient_in_float32():
    e = nbtorch.randn(50, 8, requires_grad=True)
    i = nbtorch.randint(0, 50, (200,))
    e[i].sum().backward()
    counts = np.bincount(i.numpy(), minlength=50).astype(np.float32)
    np.testing.assert_array_equal(e.grad.numpy(), np.repeat(counts[:, None], 8, 1))


def _index_add_reference(a, dim, idx, src, alpha=1):
    out = a.copy()
    moved, s = np.moveaxis(out, dim, 0), np.moveaxis(src, dim, 0)
    for j, i in enumerate(idx):                      # repeats add in index order
        moved[i] += s[j] * alpha if alpha != 1 else s[j]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.float16, np.bool_,
                                   np.complex64])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_add_adds_whole_slices_in_index_order(dtype, dim):
    """index_add / index_add_ with a 1-D index add source's slices as one loop (the row
    path for float and integer dtypes, the general one for the rest): the sums of the
    element-by-element path, repeats accumulating in index order."""
    a = (_x((6, 5, 4)) * 4).astype(dtype)
    d = dim % 3
    idx = np.array([2, 0, 2, -1, 3])[: a.shape[d]] % a.shape[d]
    src_shape = list(a.shape)
    src_shape[d] = idx.size
    src = (np.random.default_rng(1).standard_normal(src_shape) * 4).astype(dtype)
    want = _index_add_reference(a, d, idx, src)
    x, i, s = nbtorch.from_numpy(a), nbtorch.tensor(idx), nbtorch.from_numpy(src)
    y = x.clone()
    y.index_add_(dim, i, s)
    if dtype is np.float16:                          # (accumulated in float32, as PyTorch)
        want = _index_add_reference(a.astype(np.float32), d, idx, src.astype(np.float32))
        np.testing.assert_allclose(x.index_add(dim, i, s).numpy(), want, rtol=2e-3)
        np.testing.assert_allclose(y.numpy(), want, rtol=2e-3)
        return
    np.testing.assert_array_equal(x.index_add(dim, i, s).numpy(), want)
    np.testing.assert_array_equal(y.numpy(), want)
    if dtype in (np.float32, np.float64):
        want2 = _index_add_reference(a, d, idx, src, alpha=dtype(0.5))
        np.testing.assert_allclose(x.index_add(dim, i, s, alpha=0.5).numpy(), want2,
                                   rtol=1e-6)
        xt = nbtorch.from_numpy(np.ascontiguousarray(a.transpose(2, 1, 0))).transpose(0, 2)
        np.testing.assert_array_equal(                # a strided input: the general path
            xt.index_add(dim, i, s).numpy(), _index_add_reference(xt.numpy(), d, idx, src))


def test_index_add_gradients_and_errors():
    x = nbtorch.randn(5, 3, dtype=nbtorch.float64, requires_grad=True)
    s = nbtorch.randn(4, 3, dtype=nbtorch.float64, requires_grad=True)
    i = nbtorch.tensor([1, 4, 1, 0])
    assert nbtorch.autograd.gradcheck(lambda x, s: x.index_add(0, i, s, alpha=2.0), (x, s))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0"):
        x.detach().index_add(0, nbtorch.tensor([5]), s.detach()[:1])     # PyTorch's error
    with pytest.raises(RuntimeError, match=r"self \(Double\) and source \(Float\) must"):
        x.detach().index_add(0, i, s.detach().float())
    with pytest.raises(RuntimeError, match="source tensor shape must match self tensor"):
        x.detach().index_add(0, i, s.detach()[:, :2])
    with pytest.raises(RuntimeError, match=r"Number of indices \(4\) should be equal to "
                                           r"source.size\(dim\): \(3\), for dim: 0"):
        x.detach().index_add_(0, i, s.detach()[:3])
