"""Pooling, padding and interpolation on CUDA against the CPU: values and gradients."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn.functional as F

pytestmark = pytest.mark.cuda


def _pair(shape, seed=0):
    x = nbtorch.tensor(np.random.default_rng(seed).standard_normal(shape))
    xg = x.to("cuda")
    x.requires_grad_(True)
    xg.requires_grad_(True)
    return x, xg


def _check(fn, shape=(1, 2, 4, 5)):
    """fn(x) on both devices: outputs (all of a tuple) and the gradient of x."""
    x, xg = _pair(shape)
    y, yg = fn(x), fn(xg)
    ys, ygs = (y, yg) if isinstance(y, tuple) else ((y,), (yg,))
    for c, g in zip(ys, ygs):
        assert g.device.type == "cuda" and c.shape == g.shape and c.dtype == g.dtype
        np.testing.assert_allclose(g.detach().cpu().numpy(), c.detach().numpy(), atol=1e-12)
    w = nbtorch.tensor(np.random.default_rng(1).standard_normal(tuple(ys[0].shape)))
    (ys[0] * w).sum().backward()
    (ygs[0] * w.to("cuda")).sum().backward()
    np.testing.assert_allclose(xg.grad.cpu().numpy(), x.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1,
                                                          dilation=1, ceil_mode=True),
                                dict(kernel_size=2, stride=1, dilation=2)])
def test_max_pool2d(kw):
    _check(lambda x: F.max_pool2d(x, return_indices=True, **kw))


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1,
                                                          count_include_pad=False),
                                dict(kernel_size=2, stride=1, divisor_override=3)])
def test_avg_pool2d(kw):
    _check(lambda x: F.avg_pool2d(x, **kw))


def test_adaptive_pools():
    _check(lambda x: F.adaptive_avg_pool2d(x, (3, 2)))
    _check(lambda x: F.adaptive_max_pool2d(x, (3, 2), return_indices=True))


def test_pad_and_interpolate():
    _check(lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"))
    _check(lambda x: F.pad(x, (1, 0, 0, 1), value=0.5))
    _check(lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), (1, 1, 2, 3))
    _check(lambda x: F.interpolate(x, size=(3, 5), mode="bilinear", align_corners=False),
           (1, 1, 2, 3))


def test_max_pool_double_backward_takes_planes():
    x, xg = _pair((1, 1, 4, 4))
    w = nbtorch.tensor(np.random.default_rng(2).standard_normal((1, 1, 4, 4)))
    outs = []
    for t, wt in ((x, w), (xg, w.to("cuda"))):
        y = F.max_pool2d(t, 2)
        v = nbtorch.ones_like(y).requires_grad_(True)
        g, = nbtorch.autograd.grad(y, t, grad_outputs=v, create_graph=True)
        outs.append(nbtorch.autograd.grad((g * wt).sum(), v)[0])
    np.testing.assert_allclose(outs[1].cpu().numpy(), outs[0].numpy())
