"""sum / mean / nansum / nanmean / prod / all / any / count_nonzero, and the layout planner."""
import numpy as np
import pytest

import nbtorch as torch
from nbtorch.kernels.cpu import reduce as reduce_kernels
from nbtorch.ops import reduction as R
from harness import FLOATS, INTS, check_grad, check_op

S = (3, 4)
NO_0D = ("contiguous", "noncontig", "broadcast", "empty")


def _np_dims(d):
    return tuple(d) if isinstance(d, (tuple, list)) else d


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_values_and_grad(dim, keepdim, device):
    layouts = NO_0D if dim is not None else NO_0D + ("0d",)
    check_op(lambda t: t.sum(dim, keepdim), lambda a: np.sum(a, _np_dims(dim), keepdims=keepdim),
             S, dtypes=FLOATS + INTS, layouts=layouts, grad=False, device=device)
    check_grad(lambda t: t.sum(dim, keepdim), S, device=device)


def test_sum_dtypes():
    assert torch.ones(3, dtype=torch.int32).sum().dtype is torch.int64
    assert torch.tensor([True, True, False]).sum().item() == 2
    assert torch.ones(3, dtype=torch.float16).sum().dtype is torch.float16
    r = torch.ones(3, dtype=torch.float32).sum(dtype=torch.float64)
    assert r.dtype is torch.float64 and r.item() == 3.0
    assert torch.tensor([100, 100], dtype=torch.int8).sum(dtype=torch.int8).item() == -56
    big = torch.tensor([2 ** 60, 3, 2 ** 59], dtype=torch.int64)
    assert big.sum(0).item() == 2 ** 60 + 3 + 2 ** 59          # exact: int64 accumulator


def test_sum_empty_and_0d():
    assert torch.zeros(0).sum().item() == 0.0
    assert torch.zeros(0, 3).sum(0).tolist() == [0.0, 0.0, 0.0]
    assert torch.zeros(0, 3).sum(1).shape == (0,)
    assert torch.tensor(2.5).sum().item() == 2.5
    assert torch.tensor(2.5).sum(0).item() == 2.5
    assert np.isnan(torch.zeros(0).mean().item())


@pytest.mark.parametrize("shape, dim", [
    ((2, 3, 4), 1), ((2, 3, 4), (0, 2)), ((2, 3, 4), (1, 2)), ((5, 1, 3), (0, 2)),
    ((4, 6), 0), ((3, 1, 1, 5), (1, 3)),
])
def test_sum_layouts(shape, dim):
    a = np.random.default_rng(0).standard_normal(shape)
    x = torch.tensor(a)
    for view, ref in ((x, a), (x.transpose(0, -1), a.swapaxes(0, -1)),
                      (x.permute(*reversed(range(len(shape)))), a.transpose()),
                      (x.narrow(-1, 1, shape[-1] - 1), a[..., 1:])):
        np.testing.assert_allclose(view.sum(dim).numpy(), ref.sum(dim), rtol=1e-12)
        np.testing.assert_allclose(view.sum(dim, keepdim=True).numpy(),
                                   ref.sum(dim, keepdims=True), rtol=1e-12)


def test_layout_reads_without_copies():
    x = torch.arange(24.0).reshape(2, 3, 4)
    for t, dims in ((x, (1,)), (x, (0,)), (x, (1, 2)), (x.transpose(0, 2), (0,)),
                    (x.permute(1, 2, 0), (0, 1))):
        lay = R.reduction_layout(t, dims)
        assert np.shares_memory(lay.a3, x._array), (t.shape, dims)
    lay = R.reduction_layout(x, (1,))
    assert lay.a3.shape == (2, 3, 4)
    assert R.reduction_layout(x, (0, 2)).a3.shape == (3, 8, 1)   # scattered: one copy


def test_parallel_kernels_match(monkeypatch):
    monkeypatch.setattr(reduce_kernels, "PARALLEL_MIN_NUMEL", 1)
    a = np.random.default_rng(1).standard_normal((70, 300)).astype(np.float32)
    x = torch.tensor(a)
    for d in (None, 0, 1):
        np.testing.assert_allclose(x.sum(d).numpy(), a.astype(np.float64).sum(d), rtol=1e-5)
    np.testing.assert_allclose(torch.tensor(a.reshape(-1)).sum().item(), a.sum(dtype=np.float64),
                               rtol=1e-6)
    assert torch.arange(10 ** 5).sum().item() == 10 ** 5 * (10 ** 5 - 1) // 2


def test_float32_sum_of_1e7_does_not_drift():
    a = np.random.default_rng(2).random(10 ** 7, dtype=np.float32)
    exact = a.astype(np.float64).sum()
    got = torch.from_numpy(a).sum().item()
    assert abs(got - exact) / exact < 2e-7          # a naive float32 loop is off by ~1e-4
    col = torch.from_numpy(a.reshape(10 ** 6, 10)).sum(0).numpy().astype(np.float64)
    np.testing.assert_allclose(col, a.reshape(10 ** 6, 10).astype(np.float64).sum(0),
                               rtol=2e-7)
    assert abs(torch.from_numpy(a).mean().item() - exact / a.size) < 1e-7


def test_sum_nan_and_inf_propagate():
    assert np.isnan(torch.tensor([1.0, float("nan"), 2.0]).sum().item())
    assert torch.tensor([float("inf"), 1.0]).sum().item() == float("inf")
    assert np.isnan(torch.tensor([float("inf"), -float("inf")]).sum().item())


def test_mean(device):
    check_op(lambda t: t.mean(1), lambda a: a.mean(1), S, layouts=NO_0D, device=device)
    check_op(lambda t: t.mean(), lambda a: a.mean(), S, layouts=("contiguous", "0d"),
             device=device)
    r = torch.tensor([1, 2, 4]).mean(dtype=torch.float64)
    assert r.dtype is torch.float64 and r.item() == pytest.approx(7 / 3)
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        torch.tensor([1, 2]).mean()


@pytest.mark.filterwarnings("ignore:Mean of empty slice")
def test_nansum_nanmean(device):
    a = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 2.0]])
    check_op(lambda t: R.nansum(t, 1), lambda x: np.nansum(x, 1), a, layouts=("contiguous",),
             grad=False, device=device)
    check_op(lambda t: t.nanmean(0), lambda x: np.nanmean(x, 0), a, layouts=("contiguous",),
             grad=False, device=device)
    x = torch.tensor(a, requires_grad=True)
    R.nansum(x).backward()
    assert x.grad.tolist() == [[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]
    check_grad(lambda t: t.nansum(0), S, device=device)


def test_prod_values_and_grad(device):
    check_op(lambda t: t.prod(1), lambda a: a.prod(1), S, dtypes=FLOATS + INTS,
             layouts=NO_0D, grad=False, device=device)
    check_op(lambda t: t.prod(), lambda a: a.prod(), S, layouts=("contiguous", "0d", "empty"),
             grad=False, device=device)
    assert torch.tensor([2, 3], dtype=torch.int32).prod().dtype is torch.int64
    check_grad(lambda t: t.prod(0), S, gradgrad=True, low=0.5, device=device)
    for row in ([2.0, 0.0, 3.0, 4.0], [0.0, 5.0, 0.0, 2.0], [1.5, 2.0, 3.0, 0.5]):
        x = torch.tensor([row], dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(lambda t: t.prod(1), (x,))


def test_all_any_count_nonzero():
    a = np.array([[0, 1, 2], [3, 4, 5]])
    for dtype in (torch.float32, torch.int64, torch.bool, torch.uint8):
        x = torch.tensor(a).to(dtype)
        ref = a.astype(dtype.np)
        assert x.all().item() == ref.all() and x.any().item() == ref.any()
        assert x.all(1).tolist() == ref.all(1).tolist()
        assert x.any(0, keepdim=True).tolist() == ref.any(0, keepdims=True).tolist()
        assert x.count_nonzero().item() == np.count_nonzero(ref)
        assert x.count_nonzero(0).tolist() == np.count_nonzero(ref, 0).tolist()
    assert torch.tensor([1, 2], dtype=torch.uint8).all().dtype is torch.uint8
    assert torch.zeros(0).all().item() is True and torch.zeros(0).any().item() is False


def test_dim_errors():
    x = torch.ones(2, 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.sum(2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.mean(-3)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        x.sum((0, 0))
    with pytest.raises(IndexError):
        x.prod(5)
