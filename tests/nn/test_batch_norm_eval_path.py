"""Batch norm in eval mode with nothing to record (inference): the eval kernel called on the
same arrays without Function.apply, so the same bits as the recorded path; anything unusual
through the general path and its errors."""
import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn.functional as F


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(8, 16), (4, 16, 5), (2, 16, 3, 3), (1, 16)])
@pytest.mark.parametrize("affine", [True, False])
def test_same_bits_as_recorded_path(dtype, shape, affine):
    C = shape[1]
    rm, rv = torch.randn(C, dtype=dtype), torch.rand(C, dtype=dtype) + 0.5
    w = torch.randn(C, dtype=dtype) if affine else None
    b = torch.randn(C, dtype=dtype) if affine else None
    x = torch.randn(*shape, dtype=dtype)
    with torch.no_grad():
        fast = F.batch_norm(x, rm, rv, w, b, False, 0.1, 1e-5)
    slow = F.batch_norm(x.clone().requires_grad_(True), rm, rv, w, b, False, 0.1,
                        1e-5).detach()
    assert fast.dtype is dtype and fast.shape == x.shape
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    ref = (x.numpy() - rm.numpy().reshape((1, C) + (1,) * (len(shape) - 2))) / np.sqrt(
        rv.numpy().reshape((1, C) + (1,) * (len(shape) - 2)) + 1e-5)
    if affine:
        ref = ref * w.numpy().reshape((1, C) + (1,) * (len(shape) - 2)) + \
            b.numpy().reshape((1, C) + (1,) * (len(shape) - 2))
    np.testing.assert_allclose(fast.numpy(), ref, rtol=1e-4, atol=1e-5)


def test_modules_in_eval_mode():
    bn = torch.nn.BatchNorm2d(3)
    bn.train()
    bn(torch.randn(4, 3, 5, 5))                       # running stats move
    bn.eval()
    x = torch.randn(2, 3, 5, 5)
    with torch.no_grad():
        fast = bn(x)
    slow = bn(x.clone().requires_grad_(True)).detach()
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())


def test_errors_and_other_cases_unchanged():
    x = torch.randn(4, 3)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(x, torch.zeros(4), torch.ones(3))
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined"):
        F.batch_norm(x, None, torch.ones(3))
    with torch.no_grad():                              # non-contiguous input, float64 stats
        y = F.batch_norm(x.t().contiguous().t(), torch.zeros(3, dtype=torch.float64),
                         torch.ones(3, dtype=torch.float64))
    np.testing.assert_allclose(y.numpy(), x.numpy() / np.sqrt(1 + 1e-5), rtol=1e-6)
