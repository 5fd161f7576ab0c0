"""Advanced indexing, index ops and joining ops against NumPy; property tests for views."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbtorch as torch
from nbtorch.autograd import gradcheck


def _x():
    return torch.arange(24.0).reshape(2, 3, 4), np.arange(24.0).reshape(2, 3, 4)


@pytest.mark.parametrize("index", [
    ([1, 0],), (slice(None), [0, 2]), (0, [1, 2], [3, 0]), (Ellipsis, [1]),
    ([[0], [1]], slice(None), [0, 3]), (slice(None), [0, 2], slice(1, 3)),
])
def test_advanced_getitem_matches_numpy(index):
    x, a = _x()
    t_index = tuple(torch.tensor(i) if isinstance(i, list) else i for i in index)
    np.testing.assert_array_equal(x[t_index].numpy(), a[index])


def test_bool_mask_indexing_and_setitem():
    x, a = _x()
    np.testing.assert_array_equal(x[x > 10].numpy(), a[a > 10])
    x[x > 20] = 0.0
    a[a > 20] = 0.0
    np.testing.assert_array_equal(x.numpy(), a)


def test_advanced_setitem_broadcast_value():
    x, a = _x()
    x[torch.tensor([0, 1]), 1] = torch.tensor([7.0, 8.0, 9.0, 10.0])
    a[[0, 1], 1] = [7.0, 8.0, 9.0, 10.0]
    np.testing.assert_array_equal(x.numpy(), a)


def test_index_errors_before_kernel():
    x, _ = _x()
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 2"):
        x[torch.tensor([2])]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[torch.tensor([0.5])]
    with pytest.raises(RuntimeError, match="index 4 is out of bounds"):   # as PyTorch
        torch.gather(x, 2, torch.tensor([[[4]]]))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds"):  # no wrapping
        torch.gather(x, 2, torch.tensor([[[-1]]]))
    with pytest.raises(RuntimeError, match="boolean masks"):
        x.masked_fill(torch.ones(2, 3, 4, dtype=torch.int64), 0)


def test_gather_scatter_index_ops():
    a = np.arange(12.0).reshape(3, 4)
    x = torch.tensor(a)
    idx = np.array([[0, 3], [1, 1], [2, 0]])
    np.testing.assert_array_equal(x.gather(1, torch.tensor(idx)).numpy(),
                                  np.take_along_axis(a, idx, 1))
    out = torch.zeros(3, 4, dtype=torch.float64).scatter_add(1, torch.tensor(idx),
                                                             torch.ones(3, 2,
                                                                        dtype=torch.float64))
    ref = np.zeros((3, 4))
    for r in range(3):
        for c in idx[r]:
            ref[r, c] += 1
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(x.index_select(0, torch.tensor([2, 0])).numpy(), a[[2, 0]])
    np.testing.assert_array_equal(torch.take(x, torch.tensor([0, 5, 11])).numpy(),
                                  a.ravel()[[0, 5, 11]])
    np.testing.assert_array_equal(torch.masked_select(x, x > 6).numpy(), a[a > 6])
    np.testing.assert_array_equal(torch.nonzero(x > 9).numpy(), np.argwhere(a > 9))
    y = torch.zeros(3, 4, dtype=torch.float64)
    y.index_add_(0, torch.tensor([0, 0, 2]), torch.ones(3, 4, dtype=torch.float64))
    assert y[:, 0].tolist() == [2.0, 0.0, 1.0]
    assert torch.one_hot(torch.tensor([1, 0]), 3).tolist() == [[0, 1, 0], [1, 0, 0]]


def test_index_gradients():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: t[[0, 2, 2], 1:], (x,))
    assert gradcheck(lambda t: t[t.detach() > 0] * 2, (x,))
    assert gradcheck(lambda t: t.gather(1, torch.tensor([[0, 0], [1, 2], [3, 3]])), (x,))
    assert gradcheck(lambda t: t.masked_fill(t.detach() > 0, 2.0), (x,))
    assert gradcheck(lambda t: torch.zeros(5, 4, dtype=torch.float64).index_add(
        0, torch.tensor([0, 4, 0]), t), (x,))


def test_joining_ops():
    a = np.arange(12.0).reshape(3, 4)
    x = torch.tensor(a)
    np.testing.assert_array_equal(torch.cat([x, x * 2], 1).numpy(),
                                  np.concatenate([a, a * 2], 1))
    np.testing.assert_array_equal(torch.stack([x, x], 2).numpy(), np.stack([a, a], 2))
    assert [p.shape[1] for p in x.split([1, 3], 1)] == [1, 3]
    assert x.split(2)[0].data_ptr() == x.data_ptr()
    assert len(x.chunk(3, 1)) == 2
    np.testing.assert_array_equal(x.flip((0, 1)).numpy(),
                                  a[::-1, ::-1])
    np.testing.assert_array_equal(x.roll(1, 0).numpy(), np.roll(a, 1, 0))
    np.testing.assert_array_equal(x.roll(-3).numpy(), np.roll(a, -3))
    np.testing.assert_array_equal(x.repeat(2, 1, 2).numpy(), np.tile(a, (2, 1, 2)))
    np.testing.assert_array_equal(x.tril(-1).numpy(), np.tril(a, -1))
    np.testing.assert_array_equal(x.triu(1).numpy(), np.triu(a, 1))
    with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
        torch.cat([x, torch.zeros(2, 3, dtype=torch.float64)], 0)
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        torch.stack([x, x[:2]])


def test_joining_gradients():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: torch.cat([t, t[:1] * 3], 0), (x,))
    assert gradcheck(lambda t: torch.stack(t.unbind(1), 0).flip(0).roll(1, 1), (x,))
    assert gradcheck(lambda t: t.repeat(2, 1).triu(), (x,))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_property_cat_matches_numpy_recorded_or_not(shape, data):
    # without autograd cat copies with one np.concatenate and no Function; with it the
    # Cat node records: same values, and the recorded one's gradient splits back
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    arrays = []
    for k, n in enumerate(sizes):
        s = list(shape)
        s[d] = n
        arrays.append(np.arange(np.prod(s), dtype=np.float64).reshape(s) + 100 * k)
    want = np.concatenate(arrays, d)
    plain = [torch.tensor(a) for a in arrays]
    strided = [torch.tensor(np.ascontiguousarray(a.T)).permute(*range(a.ndim - 1, -1, -1))
               for a in arrays]
    for pieces in (plain, strided):
        got = torch.cat(pieces, d)
        assert got.grad_fn is None and got.is_contiguous()
        np.testing.assert_array_equal(got.numpy(), want)
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    got = torch.cat(leaves, d)
    np.testing.assert_array_equal(got.detach().numpy(), want)
    got.backward(torch.ones_like(got))
    assert all((t.grad.numpy() == 1).all() if t.grad is not None else t.numel() == 0
               for t in leaves)      # a 1-D empty piece is skipped (the legacy rule)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_property_view_writes_show_in_base(shape, data):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    x = torch.tensor(a)
    index = tuple(slice(data.draw(st.integers(0, n - 1)), None,
                        data.draw(st.integers(1, 2))) for n in shape)
    v = x[index]
    np.testing.assert_array_equal(v.numpy(), a[index])
    v.fill_(-1.0)
    a[index] = -1.0
    np.testing.assert_array_equal(x.numpy(), a)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_property_integer_indexing_matches_numpy(shape, data):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    x = torch.tensor(a)
    idx = [data.draw(st.integers(-n, n - 1)) for n in shape[:1]]
    rows = np.array(idx * 2)
    np.testing.assert_array_equal(x[torch.tensor(rows)].numpy(), a[rows])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=0, max_size=3),
       st.lists(st.integers(1, 3), min_size=0, max_size=3))
def test_property_broadcasting_matches_numpy(s1, s2):
    a = np.ones(s1)
    b = np.ones(s2)
    try:
        expected = (a + b).shape
    except ValueError:
        with pytest.raises(RuntimeError, match="must match the size"):
            torch.tensor(a) + torch.tensor(b)
        return
    assert (torch.tensor(a) + torch.tensor(b)).shape == expected


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_numpy(indexing):
    a, b = torch.arange(3.0), torch.arange(4.0)
    for g, n in zip(torch.meshgrid(a, b, indexing=indexing),
                    np.meshgrid(a.numpy(), b.numpy(), indexing=indexing)):
        np.testing.assert_array_equal(g.numpy(), n)


def test_broadcast_tensors_are_views():
    x, y = torch.broadcast_tensors(torch.ones(2, 1), torch.ones(3))
    assert x.shape == y.shape == (2, 3) and x.stride() == (1, 0)
    t = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda v: torch.broadcast_tensors(v, torch.ones(2, 1))[0] * 2, (t,))


_MASK = [True, False, True, False, True]


@pytest.mark.parametrize("index, shape", [
    ((0, slice(None), [1, 2]), (4, 2)), ((0, slice(None), [[1], [2]]), (4, 2, 1)),
    ((0, None, slice(None), [1, 2]), (1, 4, 2)), ((0, slice(None), _MASK), (4, 3)),
    ((np.int64(2), Ellipsis, [0, 4]), (4, 2)), ((-1, slice(None), _MASK), (4, 3)),
    (([1, 2], slice(None), 0), (2, 4)), ((slice(None), 0, [1, 2]), (3, 2))])
def test_integer_indices_select_before_advanced_ones(index, shape):
    """PyTorch applies integer indices as selects first (NumPy counts them as advanced
    indices and moved the indexed dims first: x[0, :, [1, 2]] came back (2, 4), transposed);
    reads, writes and gradients follow PyTorch's placement."""
    a = np.arange(60.0).reshape(3, 4, 5)
    idx = tuple(torch.tensor(i) if i is _MASK else i for i in index)
    x = torch.tensor(a, requires_grad=True)
    y = x[idx]
    assert tuple(y.shape) == shape
    if index == (0, slice(None), [1, 2]):
        np.testing.assert_array_equal(y.detach().numpy(), a[0][:, [1, 2]])
    weights = torch.arange(1.0, y.numel() + 1.0, dtype=torch.float64).reshape(shape)
    (y * weights).sum().backward()
    z = torch.tensor(a)
    z[idx] = -weights
    np.testing.assert_array_equal(x.grad.numpy(), np.where(z.numpy() != a, -z.numpy(), 0))
    real = pytest.importorskip("torch")
    tidx = tuple(real.tensor(i) if i is _MASK else i for i in index)
    np.testing.assert_array_equal(y.detach().numpy(), real.tensor(a)[tidx].numpy())
