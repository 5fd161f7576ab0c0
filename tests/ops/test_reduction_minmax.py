"""max / min / amax / amin / argmax / argmin / aminmax: values, NaN, ties, errors, gradients."""
import numpy as np
import pytest

import nbtorch as torch
from nbtorch.kernels.cpu import reduce as reduce_kernels
from nbtorch.ops import reduction_minmax as M
from harness import FLOATS, check_grad, check_op

S = (3, 4)
INTS = (torch.int64,)          # one integer dtype: each dtype compiles its own kernels
NO_0D = ("contiguous", "noncontig", "broadcast")
nan = float("nan")


@pytest.mark.parametrize("name, ref", [("amax", np.max), ("amin", np.min)])
@pytest.mark.parametrize("dim", [0, -1, (0, 1)])
def test_amax_amin(name, ref, dim, device):
    fn = getattr(M, name)
    check_op(lambda t: fn(t, dim), lambda a: ref(a, dim), S, dtypes=FLOATS + INTS,
             layouts=NO_0D, grad=False, device=device)
    check_op(lambda t: fn(t, dim, True), lambda a: ref(a, dim, keepdims=True), S,
             layouts=("contiguous",), grad=False, device=device)
    check_grad(lambda t: fn(t, dim), S, device=device)


def test_max_min_all_and_dim(device):
    check_op(lambda t: t.max(), np.max, S, dtypes=FLOATS + INTS,
             layouts=("contiguous", "noncontig", "0d"), grad=False, device=device)
    check_op(lambda t: t.min(), np.min, S, layouts=("contiguous", "0d"), device=device)
    check_op(lambda t: t.max(1).values, lambda a: a.max(1), S, layouts=NO_0D, grad=True,
             device=device)
    check_op(lambda t: t.min(0, keepdim=True).values, lambda a: a.min(0, keepdims=True), S,
             layouts=NO_0D, grad=True, device=device)
    check_op(lambda t: t.max(1).indices, lambda a: a.argmax(1), S, dtypes=FLOATS + INTS,
             layouts=NO_0D, grad=False, device=device)
    r = torch.tensor([[1.0, 5.0], [7.0, 2.0]]).max(dim=1)
    assert isinstance(r, tuple) and r.values.tolist() == [5.0, 7.0]
    assert r.indices.tolist() == [1, 0] and r[1].dtype is torch.int64
    assert repr(r).startswith("torch.return_types.max(")


def test_argmax_argmin():
    a = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, -1.0], [0.0, 4.0, 4.0, 4.0]])
    x = torch.tensor(a)
    for d in (0, 1, -1):
        assert x.argmax(d).tolist() == a.argmax(d).tolist()      # first occurrence
        assert x.argmin(d).tolist() == a.argmin(d).tolist()
    assert x.argmax().item() == a.argmax() and x.argmin().item() == a.argmin()
    assert x.argmax(1, keepdim=True).shape == (3, 1)
    assert x.argmax(keepdim=True).shape == (1, 1)
    assert x.t().argmax(0).tolist() == a.argmax(1).tolist()
    assert torch.tensor([True, False, True]).argmax().item() == 0
    assert torch.tensor(5.0).argmax().item() == 0


def test_nan_propagates():
    x = torch.tensor([[1.0, nan, 3.0], [4.0, 5.0, 6.0]])
    assert np.isnan(x.max().item()) and np.isnan(x.min().item())
    assert np.isnan(x.amax(1)[0].item()) and x.amax(1)[1].item() == 6.0
    assert np.isnan(x.amax(0)[1].item())
    assert x.max(1).indices.tolist() == [1, 2]
    assert x.argmin(1).tolist() == [1, 0]
    y = torch.tensor([nan, 1.0, nan])
    assert y.argmax().item() == 0
    big = torch.zeros(50000)
    big[31234] = nan
    assert np.isnan(big.max().item()) and np.isnan(big.amin().item())


def test_parallel_matches(monkeypatch):
    monkeypatch.setattr(reduce_kernels, "PARALLEL_MIN_NUMEL", 1)
    a = np.random.default_rng(0).standard_normal((40, 700)).astype(np.float32)
    x = torch.tensor(a)
    for d in (None, 0, 1):
        assert np.array_equal(M.amax(x, () if d is None else d).numpy(), a.max(d))
        assert np.array_equal(M.amin(x, () if d is None else d).numpy(), a.min(d))


def test_ties_share_gradient():
    x = torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], dtype=torch.float64,
                     requires_grad=True)
    M.amax(x, 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    x.grad = None
    x.max(1).values.sum().backward()                 # max(dim): the returned index only
    assert x.grad.tolist() == [[0, 1, 0], [1, 0, 0]]
    x.grad = None
    x.max().backward()                               # max(): split among all maxima
    assert x.grad.tolist() == [[0, 0.5, 0.5], [0, 0, 0]]
    x.grad = None
    x.min().backward()
    assert x.grad.tolist() == [[1, 0, 0], [0, 0, 0]]


def test_aminmax():
    x = torch.tensor([[1.0, -2.0], [5.0, 0.5]])
    r = M.aminmax(x)
    assert r.min.item() == -2.0 and r.max.item() == 5.0
    r = x.aminmax(dim=0)
    assert r.min.tolist() == [1.0, -2.0] and r.max.tolist() == [5.0, 0.5]
    assert M.aminmax(x, dim=1, keepdim=True).max.shape == (2, 1)


def test_max_of_two_tensors_is_maximum():
    a, b = torch.tensor([1.0, 5.0]), torch.tensor([3.0, 2.0])
    assert M.max(a, b).tolist() == [3.0, 5.0] and M.min(a, b).tolist() == [1.0, 2.0]


def test_empty_errors():
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified "
                                           r"for input.numel\(\) == 0. Specify the reduction "
                                           r"dim with the 'dim' argument."):
        torch.zeros(0).max()
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        torch.zeros(0, 3).max(0)
    with pytest.raises(IndexError, match="amax"):
        M.amax(torch.zeros(0, 3), 0)
    with pytest.raises(IndexError, match="argmax"):
        torch.zeros(0).argmax()
    with pytest.raises(RuntimeError, match="aminmax"):
        M.aminmax(torch.zeros(0))
    assert torch.zeros(0, 3).max(1).values.shape == (0,)
    assert M.amax(torch.zeros(0, 3), 1).shape == (0,)


def test_dim_errors():
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ones(2, 3).max(2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ones(2, 3).argmin(-3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        M.amax(torch.ones(2), 1)
