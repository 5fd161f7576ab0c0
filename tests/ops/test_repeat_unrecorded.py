"""x.repeat(*sizes) with nothing to record: one NumPy copy, the values, shape and dtype of
the recorded path (and of np.tile); every error from the general path."""
import numpy as np
import pytest

import nbtorch as torch


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
@pytest.mark.parametrize("shape,sizes", [((8, 16), (2, 1)), ((3,), (2, 2)), ((), (3,)),
                                         ((2, 3), (1, 2, 2)), ((0, 3), (2, 1)),
                                         ((2, 3), (0, 4)), ((2, 1, 3), (1, 4, 1))])
def test_same_as_recorded_and_np_tile(dtype, shape, sizes):
    x = (torch.randn(*shape) * 3).to(dtype)
    for src in (x, x.t() if x.dim() == 2 else x):
        with torch.no_grad():
            fast = src.repeat(*sizes)
        ref = np.tile(src.numpy(), sizes)
        assert fast.dtype is dtype and tuple(fast.shape) == ref.shape and fast.is_contiguous()
        np.testing.assert_array_equal(fast.numpy(), ref)
        if dtype.is_floating_point:
            slow = src.clone().requires_grad_(True).repeat(*sizes).detach()
            np.testing.assert_array_equal(fast.numpy(), slow.numpy())


def test_errors_and_grad():
    x = torch.randn(2, 3)
    with pytest.raises(RuntimeError, match="can not be smaller"):
        x.repeat(2)
    with pytest.raises(RuntimeError):
        x.repeat(-1, 1)
    y = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: t.repeat(2, 3), (y,))
    assert x.repeat(torch.Size([2, 1])).shape == (4, 3)
