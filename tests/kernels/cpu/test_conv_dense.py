"""conv_dense.py's im2col/col2im (windows inside the pre-padded input) against conv.py's
general kernels (bit-identical), their routing, and convolutions through them against
PyTorch and gradcheck."""
import numpy as np
import pytest

conv = pytest.importorskip("nbtorch.kernels.cpu.conv")
from nbtorch.kernels.cpu import conv_dense  # noqa: E402

# (N, C, spatial in, kernel, stride, padding, dilation): rows of 8, under 8, over 8
# (overlapping blocks), strided rows, 1-D (D = H = 1) and 3-D
GEOMETRIES = [
    (3, 2, (12, 12), (5, 5), (1, 1), (0, 0), (1, 1)),      # LeNet c2-like: rows of 8
    (1, 3, (6, 13), (3, 3), (1, 1), (0, 0), (1, 1)),       # rows of 11: two blocks
    (2, 2, (7, 30), (3, 4), (1, 1), (1, 2), (2, 1)),       # padded, rows of 31
    (2, 2, (9, 8), (3, 3), (2, 3), (1, 0), (1, 2)),        # strided rows of 2
    (2, 3, (5, 5), (2, 2), (1, 1), (1, 1), (1, 1)),        # rows of 6
    (2, 2, (1, 20), (1, 3), (1, 1), (0, 1), (1, 2)),       # conv1d as H = 1
    (1, 2, (4, 5, 10), (2, 3, 2), (1, 2, 1), (1, 1, 0), (2, 1, 1)),   # 3-D
]


def _out_len(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _setup(case, dtype):
    n, c, size, k, s, p, d = case
    out = tuple(_out_len(*a) for a in zip(size, k, s, p, d))
    x = np.random.default_rng(0).standard_normal((n, c) + size).astype(dtype)
    geom = conv._geometry(k, s, p, d, out)
    cols = np.empty((n, c * int(np.prod(k)), int(np.prod(out))), dtype)
    return x, conv._volumes(x), geom, cols


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", GEOMETRIES)
def test_dense_kernels_equal_the_general_ones_bit_for_bit(case, dtype):
    x, xv, geom, cols = _setup(case, dtype)
    assert conv_dense.fits(geom, xv.shape[2:])
    ref = np.full_like(cols, np.nan)
    conv._im2col_serial(xv, ref, geom)
    cols[...] = np.nan
    conv_dense.im2col_dense(xv, cols, geom, lambda shape: np.full(shape, np.nan, dtype))
    np.testing.assert_array_equal(cols, ref)
    g = np.random.default_rng(1).standard_normal(cols.shape).astype(dtype)
    gx_ref, gx = np.full_like(x, np.nan), np.full_like(x, np.nan)
    conv._col2im_serial(g, conv._volumes(gx_ref), geom)
    conv_dense.col2im_dense(g, conv._volumes(gx), geom,
                            lambda shape: np.full(shape, np.nan, dtype))
    np.testing.assert_array_equal(gx, gx_ref)


def test_fits_only_windows_inside_the_padded_input():
    geom = conv._geometry((3, 3), (1, 1), (1, 1), (1, 1), (6, 6))
    assert conv_dense.fits(geom, (1, 6, 6))
    assert not conv_dense.fits(geom, (1, 6, 5))     # a window would pass the right edge


def _call_args(case):
    n, c, size, k, s, p, d = case
    return k, s, p, d, tuple(_out_len(*a) for a in zip(size, k, s, p, d))


def test_routing_and_fallbacks(monkeypatch):
    calls = []
    for name in ("im2col_dense", "col2im_dense"):
        real = getattr(conv_dense, name)
        monkeypatch.setattr(conv_dense, name,
                            lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    x, _, _, cols = _setup(GEOMETRIES[2], np.float64)            # padded
    conv.im2col(x, cols, *_call_args(GEOMETRIES[2]), serial=True)
    conv.col2im(cols, np.empty_like(x), *_call_args(GEOMETRIES[2]), serial=True)
    assert calls == ["im2col_dense"]                   # padded col2im: the general kernel
    x, _, _, cols = _setup(GEOMETRIES[0], np.float64)
    args = _call_args(GEOMETRIES[0])
    conv.col2im(cols, np.empty_like(x), *args, serial=True)
    assert calls[-1] == "col2im_dense"
    # a non-contiguous column array takes the general kernel, with the same values
    wide = np.full(cols.shape[:2] + (2 * cols.shape[2],), np.nan)
    conv.im2col(x, wide[:, :, ::2], *args, serial=True)
    conv.im2col(x, cols, *args, serial=True)
    assert calls.count("im2col_dense") == 2
    np.testing.assert_array_equal(wide[:, :, ::2], cols)


# ---------------------------------------------------------------- through the ops, vs PyTorch

# (N, C, spatial, O, kernel, stride, padding, dilation, bias)
OP_CASES = [
    (1, 6, (12, 12), 16, (5, 5), 1, 0, 1, True),       # batch 1, LeNet c2
    (5, 3, (11, 12), 4, (3, 3), 1, 1, 1, False),       # odd batch, padded
    (3, 2, (13, 10), 3, (3, 2), (2, 1), (1, 0), (1, 2), True),
    (3, 2, (30,), 4, (5,), 1, 2, 2, True),             # conv1d
    (2, 2, (17,), 3, (3,), 2, 0, 1, False),            # conv1d, strided
]


@pytest.mark.parametrize("case", OP_CASES)
def test_conv_forward_and_grads_match_pytorch(case):
    torch = pytest.importorskip("torch")
    import nbtorch
    import nbtorch.nn.functional as F
    n, c, size, o, k, s, p, d, has_bias = case
    rng = np.random.default_rng(2)
    x = rng.standard_normal((n, c) + size).astype(np.float32)
    w = rng.standard_normal((o, c) + k).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32) if has_bias else None
    fn = (F.conv1d, torch.nn.functional.conv1d) if len(size) == 1 else \
        (F.conv2d, torch.nn.functional.conv2d)
    ours = [nbtorch.tensor(a, requires_grad=True) if a is not None else None for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) if a is not None else None for a in (x, w, b)]
    y = fn[0](*ours, stride=s, padding=p, dilation=d)
    y_ref = fn[1](*theirs, stride=s, padding=p, dilation=d)
    g = rng.standard_normal(tuple(y_ref.shape)).astype(np.float32)
    y.backward(nbtorch.tensor(g))
    y_ref.backward(torch.tensor(g))
    np.testing.assert_allclose(y.detach().numpy(), y_ref.detach().numpy(), rtol=1e-4, atol=1e-4)
    for a, a_ref in zip(ours, theirs):
        if a is not None:
            np.testing.assert_allclose(a.grad.numpy(), a_ref.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_conv2d_gradcheck_small_plane():
    import nbtorch
    import nbtorch.nn.functional as F
    from nbtorch.autograd import gradcheck
    rng = np.random.default_rng(3)
    x = nbtorch.tensor(rng.standard_normal((3, 2, 6, 6)), requires_grad=True)
    w = nbtorch.tensor(rng.standard_normal((3, 2, 3, 3)), requires_grad=True)
    b = nbtorch.tensor(rng.standard_normal(3), requires_grad=True)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b), (x, w, b))
    assert gradcheck(lambda x, w: F.conv2d(x, w, None, 2, 1, 1), (x, w))
