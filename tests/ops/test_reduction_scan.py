"""cumsum / cumprod / cummax / cummin: values over dims and layouts, zeros, gradients."""
import numpy as np
import pytest

import nbtorch as torch
from harness import FLOATS, INTS, check_grad, check_op

S = (3, 4)
LAYOUTS = ("contiguous", "noncontig", "broadcast", "empty")


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_cumprod(dim, device):
    check_op(lambda t: t.cumsum(dim), lambda a: np.cumsum(a, dim), S, dtypes=FLOATS + INTS,
             layouts=LAYOUTS, grad=False, device=device)
    check_op(lambda t: t.cumprod(dim), lambda a: np.cumprod(a, dim), S, dtypes=FLOATS + INTS,
             layouts=LAYOUTS, grad=False, device=device)
    check_grad(lambda t: t.cumsum(dim), S, gradgrad=True, device=device)
    check_grad(lambda t: t.cumprod(dim), S, gradgrad=True, low=0.5, device=device)


def test_scan_dtypes_and_0d():
    assert torch.tensor([True, True, False]).cumsum(0).tolist() == [1, 2, 2]
    assert torch.tensor([1, 2], dtype=torch.int32).cumsum(0).dtype is torch.int64
    assert torch.tensor([1, 2], dtype=torch.int32).cumprod(0, dtype=torch.int32).dtype is \
        torch.int32
    assert torch.tensor([1.0, 2.0]).cumsum(0, dtype=torch.float64).dtype is torch.float64
    assert torch.tensor(3.0).cumsum(0).item() == 3.0
    assert torch.ones(2, dtype=torch.float16).cumsum(0).tolist() == [1.0, 2.0]
    a = np.random.default_rng(0).random(10 ** 6, dtype=np.float32)
    got = torch.from_numpy(a).cumsum(0)[-1].item()
    assert abs(got - a.astype(np.float64).sum()) / got < 2e-7      # float64 running sum


@pytest.mark.parametrize("row", [[2.0, 0.0, 3.0, 4.0], [0.0, 5.0, 0.0, 2.0],
                                 [1.5, 2.0, 3.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
def test_cumprod_grad_with_zeros(row):
    x = torch.tensor([row, [1.0, 2.0, 0.5, 3.0]], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: t.cumprod(1), (x,))
    assert torch.autograd.gradcheck(lambda t: t.t().cumprod(0), (x,))


def test_cummax_cummin(device):
    a = np.array([1.0, 3.0, 3.0, 2.0, np.nan, 5.0, 1.0])
    v, i = torch.tensor(a).cummax(0)
    np.testing.assert_array_equal(v.numpy(), [1, 3, 3, 3, np.nan, np.nan, np.nan])
    assert i.tolist() == [0, 1, 2, 2, 4, 4, 4]        # ties take the later index, as PyTorch
    v, i = torch.tensor([3, 1, 1, 2]).cummin(0)
    assert v.tolist() == [3, 1, 1, 1] and i.tolist() == [0, 1, 2, 2]
    b = np.random.default_rng(1).standard_normal((3, 4, 5))
    np.testing.assert_array_equal(torch.tensor(b).cummax(1).values.numpy(),
                                  np.maximum.accumulate(b, 1))
    np.testing.assert_array_equal(torch.tensor(b).cummin(2).values.numpy(),
                                  np.minimum.accumulate(b, 2))
    check_grad(lambda t: t.cummax(1).values, S, device=device)
    check_grad(lambda t: t.cummin(0).values, S, device=device)
    r = torch.tensor([1.0, 2.0]).cummax(0)
    assert repr(r).startswith("torch.return_types.cummax(")


def test_scan_errors():
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ones(2, 3).cumsum(2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ones(2).cummax(-2)
    with pytest.raises(TypeError):
        torch.ones(2).cumsum()
