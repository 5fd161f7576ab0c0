"""conv2d / conv_transpose2d / unfold / fold on CUDA against the CPU: values and gradients."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn.functional as F

pytestmark = pytest.mark.cuda


def _pair(shape, seed=0, dtype=np.float64):
    x = nbtorch.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))
    return x, x.to("cuda")


def _same(c, g, tol=1e-9):
    assert g.device.type == "cuda" and c.shape == g.shape and c.dtype == g.dtype
    np.testing.assert_allclose(g.detach().cpu().numpy(), c.detach().numpy(), rtol=tol,
                               atol=tol)


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1), dict(dilation=2, groups=2)])
def test_conv2d_forward_backward(kw):
    x, xg = _pair((2, 2, 4, 3))
    w, wg = _pair((2, 2 // kw.get("groups", 1), 2, 2), seed=1)
    b, bg = _pair((2,), seed=2)
    for t in (x, xg, w, wg, b, bg):
        t.requires_grad_(True)
    y, yg = F.conv2d(x, w, b, **kw), F.conv2d(xg, wg, bg, **kw)
    _same(y, yg)
    g, gg = _pair(tuple(y.shape), seed=3)
    y.backward(g)
    yg.backward(gg)
    for c, d in ((x, xg), (w, wg), (b, bg)):
        _same(c.grad, d.grad)


def test_conv_transpose2d_and_float32_1x1():
    x, xg = _pair((1, 2, 2, 2))
    w, wg = _pair((2, 2, 3, 3), seed=1)
    _same(F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
          F.conv_transpose2d(xg, wg, stride=2, padding=1, output_padding=1))
    x, xg = _pair((2, 3, 2, 2), dtype=np.float32)
    w, wg = _pair((2, 3, 1, 1), seed=1, dtype=np.float32)
    _same(F.conv2d(x, w), F.conv2d(xg, wg), 1e-5)


def test_unfold_fold():
    x, xg = _pair((1, 2, 4, 5))
    u, ug = F.unfold(x, (2, 3), padding=1, stride=(1, 2)), \
        F.unfold(xg, (2, 3), padding=1, stride=(1, 2))
    _same(u, ug)
    _same(F.fold(u, (4, 5), (2, 3), padding=1, stride=(1, 2)),
          F.fold(ug, (4, 5), (2, 3), padding=1, stride=(1, 2)))
