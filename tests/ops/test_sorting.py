"""sort / argsort / topk / kthvalue / median / unique / bincount / histc."""
import numpy as np
import pytest

import nbtorch as torch
from nbtorch.ops import sorting as SO
from harness import FLOATS, check_grad, check_op

S = (3, 5)
INTS = (torch.int64,)          # one integer dtype: each dtype compiles its own kernels
nan = float("nan")


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sort_values_indices(dim, device):
    check_op(lambda t: t.sort(dim).values, lambda a: np.sort(a, dim), S, dtypes=FLOATS + INTS,
             layouts=("contiguous", "noncontig", "empty"), grad=False, device=device)
    check_op(lambda t: t.sort(dim).indices, lambda a: np.argsort(a, dim, kind="stable"), S,
             dtypes=FLOATS + INTS, layouts=("contiguous", "noncontig"), grad=False, device=device)
    check_op(lambda t: t.sort(dim, descending=True).values, lambda a: -np.sort(-a, dim), S,
             layouts=("contiguous",), grad=False, device=device)
    check_grad(lambda t: t.sort(dim, descending=True).values, S, device=device)


def test_sort_is_stable_both_ways():
    x = torch.tensor([2, 1, 2, 1, 3, 2])
    assert x.sort(stable=True).indices.tolist() == [1, 3, 0, 2, 5, 4]
    assert x.sort(descending=True, stable=True).indices.tolist() == [4, 0, 2, 5, 1, 3]
    assert x.argsort(descending=True).tolist() == [4, 0, 2, 5, 1, 3]


def test_sort_nan_and_small_cases():
    x = torch.tensor([3.0, nan, 1.0, nan, 2.0])
    v, i = x.sort()
    assert v.tolist()[:3] == [1.0, 2.0, 3.0] and i.tolist() == [2, 4, 0, 1, 3]
    v, i = x.sort(descending=True)
    assert i.tolist() == [1, 3, 0, 4, 2]                     # NaN is the largest
    assert torch.tensor(5.0).sort().values.item() == 5.0
    assert torch.tensor([True, False, True]).sort().values.tolist() == [False, True, True]
    assert torch.ones(3, dtype=torch.float16).sort().values.dtype is torch.float16
    assert repr(x.sort()).startswith("torch.return_types.sort(")
    assert SO.msort(torch.tensor([[2.0], [1.0]])).tolist() == [[1.0], [2.0]]


def test_topk(device):
    a = np.array([[1.0, 5.0, 3.0, 4.0], [0.0, -1.0, 7.0, 2.0]])
    x = torch.tensor(a)
    r = x.topk(2)
    assert r.values.tolist() == [[5.0, 4.0], [7.0, 2.0]] and r.indices.tolist() == [[1, 3],
                                                                                      [2, 3]]
    assert x.topk(1, dim=0, largest=False).values.tolist() == [[0.0, -1.0, 3.0, 2.0]]
    assert x.topk(0).values.shape == (2, 0)
    check_grad(lambda t: t.topk(2, dim=1).values, S, device=device)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        x.topk(5)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_and_sort_without_a_node_equal_the_recorded_path(dim, largest):
    """Unrecorded CPU topk/sort skip the Sort node and its views (NumPy moves the dim):
    the same values, the same indices of tied elements, contiguous results as PyTorch's."""
    x = torch.tensor(np.random.default_rng(dim + 7).integers(0, 4, (3, 5, 6)).astype("f4"))
    for k in (0, 1, 3, x.shape[dim]):
        fast = x.topk(k, dim, largest)
        ref = x.detach().requires_grad_().topk(k, dim, largest)   # through the Sort node
        assert fast.values.is_contiguous() and fast.indices.is_contiguous()
        assert fast.values.tolist() == ref.values.tolist()
        assert fast.indices.tolist() == ref.indices.tolist()
        assert fast.indices.dtype is torch.int64 and fast.values.shape == ref.values.shape
    got = x.sort(dim, descending=largest)
    order = np.argsort(-x.numpy() if largest else x.numpy(), dim, kind="stable")
    assert got.indices.tolist() == order.tolist() and got.values.is_contiguous()
    assert torch.tensor(x.numpy().T.copy()).permute(2, 1, 0).topk(2, dim).values.tolist() == \
        x.topk(2, dim).values.tolist()     # a transposed (non-contiguous) input


def test_kthvalue_median(device):
    a = np.array([[3.0, 1.0, 2.0, 5.0], [4.0, 4.0, 0.0, 1.0]])
    x = torch.tensor(a)
    r = x.kthvalue(2, 1)
    assert r.values.tolist() == [2.0, 1.0] and r.indices.tolist() == [2, 3]
    assert x.kthvalue(1, 0, keepdim=True).values.shape == (1, 4)
    assert x.median().item() == 2.0                            # lower median
    m = x.median(1)
    assert m.values.tolist() == [2.0, 1.0] and m.indices.tolist() == [2, 3]
    y = torch.tensor([[1.0, nan, 3.0], [2.0, 1.0, 0.0]])
    assert np.isnan(y.median(1).values[0].item()) and y.median(1).indices[0].item() == 1
    assert np.isnan(y.median().item())
    assert y.nanmedian(1).values.tolist() == [1.0, 1.0]
    assert np.isnan(torch.tensor([nan, nan]).nanmedian().item())
    check_grad(lambda t: t.kthvalue(3, 1).values, S, device=device)
    check_grad(lambda t: t.median(0).values, S, device=device)
    check_grad(lambda t: t.median(), S, device=device)
    with pytest.raises(RuntimeError, match="out of range"):
        x.kthvalue(5, 1)
    with pytest.raises(IndexError, match="non-zero size"):
        torch.zeros(0, 2).median(0)


def test_mode(device):
    r = SO.mode(torch.tensor([1, 2, 2, 1, 3]))
    assert r.values.item() == 1 and r.indices.item() == 3     # smallest of the most frequent,
    x = torch.tensor([[5, 5, 1], [2, 7, 7]])                    # its last occurrence
    assert x.mode(1).values.tolist() == [5, 7] and x.mode(1).indices.tolist() == [1, 2]
    r = x.mode(0, keepdim=True)
    assert r.values.tolist() == [[2, 5, 1]] and r.indices.tolist() == [[1, 0, 0]]
    assert torch.tensor(4.0).mode().values.item() == 4.0
    check_grad(lambda t: t.mode(1).values, S, device=device)
    with pytest.raises(IndexError, match="non-zero size"):
        torch.zeros(2, 0).mode(1)


def test_unique():
    x = torch.tensor([[3, 1, 3], [2, 1, 5]])
    u, inv, cnt = SO.unique(x, return_inverse=True, return_counts=True)
    assert u.tolist() == [1, 2, 3, 5] and cnt.tolist() == [2, 1, 2, 1]
    assert inv.tolist() == [[2, 0, 2], [1, 0, 3]]
    assert x.unique().tolist() == [1, 2, 3, 5]
    f = torch.tensor([0.5, -1.0, 0.5, 2.0, nan, nan])
    uf = SO.unique(f)
    assert uf.tolist()[:3] == [-1.0, 0.5, 2.0] and uf.numel() == 5      # NaNs stay distinct
    assert SO.unique(torch.tensor([True, False, True])).tolist() == [False, True]
    assert SO.unique(torch.zeros(0)).shape == (0,)


def test_unique_along_a_dim():
    """PyTorch 2.13's results: the distinct slices in lexicographic order (sorted=False too),
    the index of each slice among them, their counts."""
    x = torch.tensor([[3, 1], [1, 2], [3, 1], [1, 1]])
    u, inv, cnt = SO.unique(x, dim=0, return_inverse=True, return_counts=True)
    assert u.tolist() == [[1, 1], [1, 2], [3, 1]]
    assert inv.tolist() == [2, 1, 2, 0] and cnt.tolist() == [1, 1, 2]
    u, inv, cnt = x.unique(dim=-1, return_inverse=True, return_counts=True)
    assert u.tolist() == [[1, 3], [2, 1], [1, 3], [1, 1]]
    assert inv.tolist() == [1, 0] and cnt.tolist() == [1, 1]
    assert SO.unique(torch.tensor([[2, 1], [1, 0]]), sorted=False, dim=0).tolist() == \
        [[1, 0], [2, 1]]
    x3 = torch.tensor([[[1, 2], [1, 2]], [[0, 1], [0, 1]]])
    assert SO.unique(x3, dim=1).tolist() == [[[1, 2]], [[0, 1]]]
    assert SO.unique(torch.tensor([[True, False], [True, False]]), dim=0).tolist() == \
        [[True, False]]
    e, inv, cnt = SO.unique(torch.empty(0, 3), dim=0, return_inverse=True, return_counts=True)
    assert e.shape == (0, 3) and inv.dtype is torch.int64 and cnt.numel() == 0
    assert SO.unique(torch.empty(2, 0, 3), dim=1).shape == (2, 0, 3)
    with pytest.raises(RuntimeError, match="aren't selected"):
        SO.unique(torch.empty(3, 0), dim=0)
    with pytest.raises(RuntimeError, match="more than one"):
        SO.unique(torch.empty(0, 0), dim=0)
    with pytest.raises(IndexError, match="no dimensions"):
        SO.unique(torch.tensor(5), dim=0)
    with pytest.raises(IndexError):
        SO.unique(torch.ones(3), dim=1)


def test_bincount():
    x = torch.tensor([0, 2, 2, 5, 1])
    assert SO.bincount(x).tolist() == np.bincount([0, 2, 2, 5, 1]).tolist()
    assert x.bincount(minlength=8).tolist() == np.bincount([0, 2, 2, 5, 1], minlength=8).tolist()
    w = torch.tensor([0.5, 1.0, 1.5, 2.0, 0.25])
    r = x.bincount(w)
    assert r.dtype is torch.float32
    np.testing.assert_allclose(r.numpy(), np.bincount([0, 2, 2, 5, 1], w.numpy()))
    assert x.bincount(w.double()).dtype is torch.float64
    assert SO.bincount(torch.zeros(0, dtype=torch.int64)).shape == (0,)
    with pytest.raises(RuntimeError, match="non-negative"):
        SO.bincount(torch.tensor([1, -1]))
    with pytest.raises(RuntimeError, match="1-d"):
        SO.bincount(torch.tensor([[1]]))
    with pytest.raises(RuntimeError, match="1-d"):
        SO.bincount(torch.tensor([1.0]))
    with pytest.raises(RuntimeError, match="same length"):
        SO.bincount(x, torch.ones(2))


def test_histc():
    x = torch.tensor([1.0, 2.0, 1.0, 4.0, -1.0])
    assert SO.histc(x, bins=4, min=0, max=3).tolist() == [0.0, 2.0, 1.0, 0.0]
    a = np.random.default_rng(0).standard_normal(1000)
    np.testing.assert_array_equal(torch.tensor(a).histc(10).numpy(),
                                  np.histogram(a, 10)[0].astype(np.float64))
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        SO.histc(torch.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="bins"):
        SO.histc(x, bins=0)


def test_sort_errors():
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ones(2, 3).sort(2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ones(2).topk(1, dim=1)
