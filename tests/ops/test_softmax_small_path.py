"""The small softmax/log_softmax path (unrecorded, last dim, contiguous float CPU): the same
bits as the general path, and every other case left to it."""
import numpy as np
import pytest

import nbtorch as torch
from nbtorch.ops import softmax as sm


def _general(op, x, dim):
    """The general path's result (a requires-grad copy takes Function.apply)."""
    y = x.detach().clone().requires_grad_(True)
    return getattr(torch, op)(y, dim=dim).detach()


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(1,), (7,), (8, 16), (3, 1), (2, 3, 5), (4, 2, 1, 9)])
def test_same_bits_as_general_path(op, dtype, shape):
    x = torch.randn(shape, dtype=dtype) * 5
    for dim in (-1, len(shape) - 1):
        with torch.no_grad():
            fast = getattr(torch, op)(x, dim=dim)
        assert fast.dtype is dtype and fast.shape == x.shape and fast.is_contiguous()
        np.testing.assert_array_equal(fast.numpy(), _general(op, x, dim).numpy())
        np.testing.assert_array_equal(getattr(x, op)(dim).numpy(), fast.numpy())


def test_the_path_is_taken_only_where_it_applies():
    x = torch.randn(4, 6)
    assert sm._small_rows("softmax", x, -1) is not None
    assert sm._small_rows("softmax", x, 0) is None                  # not the last dim
    assert sm._small_rows("softmax", x.t(), -1) is None             # not contiguous
    assert sm._small_rows("softmax", x.half(), -1) is None          # half: the general path
    assert sm._small_rows("softmax", torch.randn(0, 3), -1) is None
    assert sm._small_rows("softmax", torch.tensor(2.0), -1) is None
    assert sm._small_rows("softmax", torch.randn(200, 100), -1) is None    # not small
    assert sm._small_rows("softmax", x.requires_grad_(True), -1) is None   # recorded


def test_other_cases_still_right():
    x = torch.randn(5, 7, dtype=torch.float64)
    ref = np.exp(x.numpy()) / np.exp(x.numpy()).sum(0, keepdims=True)
    np.testing.assert_allclose(torch.softmax(x, 0).numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(torch.softmax(x.t(), -1).numpy(), ref.T, rtol=1e-12)
    assert torch.softmax(torch.randn(0, 3), -1).shape == (0, 3)
    assert torch.softmax(x, -1, dtype=torch.float32).dtype is torch.float32
    with pytest.raises(TypeError, match="dim"):
        torch.softmax(x)
    with pytest.raises(IndexError):
        torch.softmax(x, 2)
    with pytest.raises(NotImplementedError, match="Long"):
        torch.softmax(torch.arange(4), -1)


def test_gradient_still_flows():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: torch.log_softmax(t, -1), (x,))
