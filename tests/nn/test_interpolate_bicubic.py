"""F.interpolate mode='bicubic', antialias=True (bilinear/bicubic/lanczos): a NumPy
reference, PyTorch's values, gradcheck (and gradgradcheck), errors, devices."""
import itertools

import numpy as np
import pytest

import nbtorch
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck, gradgradcheck


def _t(a, requires_grad=False, device="cpu"):
    return nbtorch.tensor(np.asarray(a), requires_grad=requires_grad, device=device)


def _keys(x, A=-0.75):
    x = abs(x)
    if x <= 1:
        return ((A + 2) * x - (A + 3)) * x * x + 1
    return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A if x < 2 else 0.0


def _bicubic_ref(x, out_h, out_w, align):
    """Each output pixel from the 4x4 neighbourhood of its source point, edges repeated."""
    N, C, H, W = x.shape
    out = np.zeros((N, C, out_h, out_w))

    def src(o, n_in, n_out):
        if align:
            return o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        return (o + 0.5) * n_in / n_out - 0.5
    for i, j in itertools.product(range(out_h), range(out_w)):
        sy, sx = src(i, H, out_h), src(j, W, out_w)
        y0, x0 = int(np.floor(sy)), int(np.floor(sx))
        for a, b in itertools.product(range(-1, 3), range(-1, 3)):
            yy, xx = min(max(y0 + a, 0), H - 1), min(max(x0 + b, 0), W - 1)
            out[:, :, i, j] += _keys(sy - (y0 + a)) * _keys(sx - (x0 + b)) * x[:, :, yy, xx]
    return out


@pytest.mark.parametrize("align", [False, True])
def test_bicubic_matches_numpy(align, device):
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 5))
    for size in ((7, 9), (3, 3)):
        y = F.interpolate(_t(x, device=device), size=size, mode="bicubic", align_corners=align)
        np.testing.assert_allclose(y.cpu().numpy(), _bicubic_ref(x, *size, align), atol=1e-12)


def test_bicubic_and_antialias_against_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((1, 2, 7, 9))
    for mode, aa, align, kw in itertools.product(
            ("bicubic", "bilinear", "lanczos"), (False, True), (False, True),
            ({"scale_factor": 2.3}, {"size": (3, 4)}, {"scale_factor": (0.4, 0.6)})):
        if mode == "lanczos" and (align or not aa) or mode == "bilinear" and not aa:
            continue
        ours = F.interpolate(_t(x), mode=mode, antialias=aa, align_corners=align, **kw)
        theirs = torch.nn.functional.interpolate(torch.tensor(x), mode=mode, antialias=aa,
                                                 align_corners=align, **kw)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-12)
    x32 = x.astype(np.float32)
    xo, xt = _t(x32, True), torch.tensor(x32, requires_grad=True)
    yo = F.interpolate(xo, scale_factor=1.7, mode="bicubic")
    yt = torch.nn.functional.interpolate(xt, scale_factor=1.7, mode="bicubic")
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), atol=1e-5)
    (yo * yo).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), atol=1e-4)


def test_bicubic_and_antialias_gradcheck():
    x = _t(np.random.default_rng(1).standard_normal((1, 1, 3, 4)), True)
    assert gradcheck(lambda x: F.interpolate(x, size=(5, 3), mode="bicubic",
                                             align_corners=False), (x,))
    assert gradgradcheck(lambda x: F.interpolate(x, size=(2, 2), mode="bicubic",
                                                 align_corners=True) ** 2, (x,))
    assert gradcheck(lambda x: F.interpolate(x, size=(2, 2), mode="bilinear", antialias=True,
                                             align_corners=False), (x,))


def test_bicubic_and_antialias_errors():
    x = nbtorch.randn(1, 2, 5, 6)
    cases = [
        (lambda: F.interpolate(x[0], scale_factor=2, mode="bicubic"), NotImplementedError,
         r"Only 3D, 4D and 5D input Tensors supported \(got 3D\) for the modes: nearest \| "
         r"linear \| bilinear \| bicubic \| trilinear \| lanczos \| area \| nearest-exact "
         r"\(got bicubic\)"),
        (lambda: F.interpolate(x, scale_factor=0.5, mode="nearest", antialias=True), ValueError,
         "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires "
         "a 4-D tensor as input"),
        (lambda: F.interpolate(x, scale_factor=0.5, mode="lanczos"), ValueError,
         "Lanczos mode requires antialias=True"),
        (lambda: F.interpolate(x, scale_factor=0.5, mode="lanczos", antialias=True,
                               align_corners=True), ValueError,
         "Lanczos mode does not support align_corners=True"),
        (lambda: F.interpolate(x, scale_factor=0.5, mode="foo"), NotImplementedError,
         r"\(got foo\)"),
        (lambda: F.interpolate(x, scale_factor=2, mode="nearest", align_corners=True), ValueError,
         "align_corners option can only be set with the interpolating modes"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()


def test_uint8_images_resize_within_one_of_pytorch():
    """bilinear/bicubic on uint8 (images) gave zeros; now float32 per axis, rounded back."""
    img = (np.arange(16, dtype=np.uint8) * 10).reshape(1, 1, 4, 4)
    out = F.interpolate(nbtorch.tensor(img), size=(3, 5), mode="bilinear")
    assert out.dtype is nbtorch.uint8
    assert out.flatten()[:5].tolist() == [7, 14, 22, 30, 37]          # PyTorch's values
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (1, 3, 17, 23), dtype=np.uint8)
    for kw in (dict(mode="bilinear"), dict(mode="bicubic"), dict(mode="bicubic", antialias=True),
               dict(mode="bilinear", align_corners=True)):
        want = torch.nn.functional.interpolate(torch.tensor(a), size=(9, 31), **kw).numpy()
        got = F.interpolate(nbtorch.tensor(a), size=(9, 31), **kw).numpy()
        assert np.abs(want.astype(int) - got.astype(int)).max() <= 1
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.interpolate(nbtorch.zeros(1, 1, 4, 4, dtype=nbtorch.int64), size=3, mode="bilinear")


def test_nearest_on_1d_and_3d_input_applies_the_scale_factor():
    x = nbtorch.arange(4.0).reshape(1, 1, 4)
    assert F.interpolate(x, scale_factor=1.2).flatten().tolist() == [0, 0, 1, 2]
    assert F.interpolate(x[..., :3], scale_factor=2.3).flatten().tolist() == [0, 0, 0, 1, 1, 2]
    x5 = nbtorch.arange(64.0).reshape(1, 1, 4, 4, 4)
    assert F.interpolate(x5, scale_factor=1.2)[0, 0, 0, 0].tolist() == [0, 0, 1, 2]
    x4 = nbtorch.arange(16.0).reshape(1, 1, 4, 4)          # PyTorch's 2-D kernel: size 4 -> 4
    assert F.interpolate(x4, scale_factor=1.2)[0, 0, 0].tolist() == [0, 1, 2, 3]


def test_area_mode_on_5d_input():
    x = nbtorch.arange(128.0).reshape(1, 2, 4, 4, 4)
    out = F.interpolate(x, size=(2, 2, 2), mode="area")
    assert out.shape == (1, 2, 2, 2, 2)
    np.testing.assert_allclose(out.numpy(), F.adaptive_avg_pool3d(x, 2).numpy())
