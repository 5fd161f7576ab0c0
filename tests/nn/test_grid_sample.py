"""F.grid_sample (bilinear/nearest/bicubic, every padding mode, align_corners, 2-D and 3-D)
and F.affine_grid: a NumPy reference, PyTorch's values and both gradients, gradcheck,
errors, devices."""
import itertools
import warnings

import numpy as np
import pytest

import nbtorch
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck


def _t(a, requires_grad=False, device="cpu"):
    return nbtorch.tensor(np.asarray(a), requires_grad=requires_grad, device=device)


def _rng(seed=0):
    return np.random.default_rng(seed)


def _bilinear_zeros_ref(x, grid, align):
    """Bilinear sampling with zero padding, point by point."""
    N, C, H, W = x.shape
    out = np.zeros((N, C) + grid.shape[1:3])
    for n, i, j in itertools.product(range(N), range(grid.shape[1]), range(grid.shape[2])):
        gx, gy = grid[n, i, j]
        if align:
            ix, iy = (gx + 1) / 2 * (W - 1), (gy + 1) / 2 * (H - 1)
        else:
            ix, iy = ((gx + 1) * W - 1) / 2, ((gy + 1) * H - 1) / 2
        x0, y0 = int(np.floor(ix)), int(np.floor(iy))
        for dx, dy in itertools.product((0, 1), (0, 1)):
            xx, yy = x0 + dx, y0 + dy
            if 0 <= xx < W and 0 <= yy < H:
                w = (1 - abs(ix - xx)) * (1 - abs(iy - yy))
                out[n, :, i, j] += w * x[n, :, yy, xx]
    return out


@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_bilinear_matches_numpy(align, device):
    x = _rng().standard_normal((2, 2, 3, 4))
    grid = _rng(1).uniform(-1.2, 1.2, (2, 2, 3, 2))
    y = F.grid_sample(_t(x, device=device), _t(grid, device=device), align_corners=align)
    np.testing.assert_allclose(y.cpu().numpy(), _bilinear_zeros_ref(x, grid, align), atol=1e-12)
    near = F.grid_sample(_t(x, device=device), _t(grid, device=device), mode="nearest",
                         padding_mode="border", align_corners=align)
    assert near.shape == (2, 2, 2, 3)


def test_grid_sample_backward_on_device(device):
    x = _rng().standard_normal((1, 2, 3, 3))
    grid = _rng(1).uniform(-1.1, 1.1, (1, 2, 2, 2))
    w = _rng(2).standard_normal((1, 2, 2, 2))
    grads = []
    for dev in ("cpu", device):
        xo, go = _t(x, True, dev), _t(grid, True, dev)
        (F.grid_sample(xo, go, mode="bicubic", padding_mode="reflection", align_corners=False)
         * _t(w, device=dev)).sum().backward()
        grads.append((xo.grad.cpu().numpy(), go.grad.cpu().numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_grid_sample_against_torch_every_mode():
    torch = pytest.importorskip("torch")
    cases = [((2, 3, 4, 5), (2, 3, 4, 2), m) for m in ("bilinear", "nearest", "bicubic")] + \
            [((1, 2, 3, 4, 3), (1, 2, 2, 3, 3), m) for m in ("bilinear", "nearest")]
    for (xs, gs, mode), pad, align in itertools.product(
            cases, ("zeros", "border", "reflection"), (False, True)):
        x, g = _rng().standard_normal(xs), _rng(1).uniform(-1.3, 1.3, gs)
        w = _rng(2).standard_normal(gs[:1] + xs[1:2] + gs[1:-1])
        xo, go = _t(x, True), _t(g, True)
        xt, gt = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
        yo = F.grid_sample(xo, go, mode, pad, align)
        yt = torch.nn.functional.grid_sample(xt, gt, mode, pad, align)
        np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), atol=1e-12)
        (yo * _t(w)).sum().backward()
        (yt * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), atol=1e-12)
        np.testing.assert_allclose(go.grad.numpy(), gt.grad.numpy(), atol=1e-12)
    x = _rng().standard_normal((1, 2, 5, 5)).astype(np.float32)
    g = _rng(1).uniform(-1, 1, (1, 3, 3, 2)).astype(np.float32)
    np.testing.assert_allclose(
        F.grid_sample(_t(x), _t(g), align_corners=False).numpy(),
        torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g),
                                        align_corners=False).numpy(), atol=1e-6)


def test_grid_sample_non_finite_points_as_torch():
    """NaN/inf points: NaN for interpolating modes with zero padding, clipped to the
    first pixel (NaN) or an edge (inf) under border/reflection padding, as PyTorch."""
    torch = pytest.importorskip("torch")
    x = _rng().standard_normal((1, 1, 3, 3))
    g = np.array([[[[np.nan, 0.2], [np.inf, 0.1], [-np.inf, 0.3], [5e10, 0.0], [0.3, -7e12],
                    [0.1, np.nan]]]])
    for mode, pad, align in itertools.product(("bilinear", "nearest", "bicubic"),
                                              ("zeros", "border", "reflection"), (False, True)):
        ours = F.grid_sample(_t(x), _t(g), mode, pad, align).numpy()
        theirs = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g), mode, pad,
                                                 align).numpy()
        np.testing.assert_allclose(ours, theirs, equal_nan=True, err_msg=f"{mode} {pad}")


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_gradcheck(mode):
    x = _t(_rng().standard_normal((1, 2, 3, 4)), True)
    g = _t(_rng(1).uniform(-0.9, 0.9, (1, 2, 2, 2)), True)
    assert gradcheck(lambda x, g: F.grid_sample(x, g, mode, "border", False), (x, g))
    x3 = _t(_rng().standard_normal((1, 1, 2, 3, 3)), True)
    g3 = _t(_rng(1).uniform(-0.9, 0.9, (1, 1, 2, 2, 3)), True)
    assert gradcheck(lambda x, g: F.grid_sample(x, g, "bilinear", "reflection", True), (x3, g3))


def test_affine_grid_matches_numpy_and_torch():
    theta = _rng().standard_normal((2, 2, 3))
    for align in (False, True):
        g = F.affine_grid(_t(theta), (2, 1, 3, 4), align_corners=align).numpy()
        xs = np.linspace(-1, 1, 4) * (1 if align else 3 / 4)
        ys = np.linspace(-1, 1, 3) * (1 if align else 2 / 3)
        base = np.stack(list(np.meshgrid(xs, ys)) + [np.ones((3, 4))], -1)   # (H, W, 3): x, y, 1
        np.testing.assert_allclose(g, np.einsum("hwk,nck->nhwc", base, theta), atol=1e-12)
    th = _t(theta, True)
    assert gradcheck(lambda t: F.affine_grid(t, (2, 1, 2, 3), align_corners=False), (th,))
    torch = pytest.importorskip("torch")
    theta3 = _rng().standard_normal((2, 3, 4))
    for align in (False, True):
        np.testing.assert_allclose(
            F.affine_grid(_t(theta3), (2, 1, 2, 3, 4), align_corners=align).numpy(),
            torch.nn.functional.affine_grid(torch.tensor(theta3), (2, 1, 2, 3, 4),
                                            align_corners=align).numpy(), atol=1e-12)
    with pytest.warns(UserWarning, match="affine_grid behavior has changed for unit-size"):
        assert F.affine_grid(_t(theta), (2, 1, 1, 3), align_corners=True).shape == (2, 1, 3, 2)


def test_grid_sample_and_affine_grid_errors():
    x, g = nbtorch.randn(2, 3, 4, 5), nbtorch.rand(2, 6, 7, 2)
    cases = [
        (lambda: F.grid_sample(x, g, mode="foo", align_corners=False), ValueError,
         "expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'foo'"),
        (lambda: F.grid_sample(x, g, padding_mode="foo", align_corners=False), ValueError,
         "expected padding_mode to be 'zeros', 'border', or 'reflection', but got: 'foo'"),
        (lambda: F.grid_sample(x, g[:1], align_corners=False), RuntimeError,
         r"expected grid and input to have same batch size, but got input with sizes "
         r"\[2, 3, 4, 5\] and grid with sizes \[1, 6, 7, 2\]"),
        (lambda: F.grid_sample(x, nbtorch.rand(2, 6, 7, 3), align_corners=False), RuntimeError,
         "expected grid to have size 2 in last dimension"),
        (lambda: F.grid_sample(x[:, :, :0], g, align_corners=False), RuntimeError,
         r"non-empty spatial dimensions, but input has sizes \[2, 3, 0, 5\] with dimension 2"),
        (lambda: F.grid_sample(x.unsqueeze(2), nbtorch.rand(2, 1, 6, 7, 3), mode="bicubic",
                               align_corners=False), RuntimeError,
         "bicubic interpolation only supports 4D input"),
        (lambda: F.grid_sample(x, g.double(), align_corners=False), RuntimeError,
         "expected scalar type Float but found Double"),
        (lambda: F.affine_grid(nbtorch.zeros(2, 2, 3, dtype=nbtorch.int64), (2, 3, 4, 5),
                               align_corners=False), ValueError,
         "Expected theta to have floating point type, but got torch.int64"),
        (lambda: F.affine_grid(nbtorch.randn(2, 2, 3), (2, 3, 4), align_corners=False),
         NotImplementedError, "affine_grid only supports 4D and 5D sizes"),
        (lambda: F.affine_grid(nbtorch.randn(2, 2, 3), (2, 3, 4, 5, 6), align_corners=False),
         ValueError, "Expected a batch of 3D affine matrices of shape Nx3x4"),
        (lambda: F.affine_grid(nbtorch.randn(2, 2, 3), (2, 3, 0, 5), align_corners=False),
         ValueError, r"Expected non-zero, positive output size. Got \(2, 3, 0, 5\)"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.grid_sample(x, g)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert F.grid_sample(x[:0], g[:0], align_corners=True).shape == (0, 3, 6, 7)
        assert F.grid_sample(x[:, :0], g, align_corners=True).shape == (2, 0, 6, 7)
