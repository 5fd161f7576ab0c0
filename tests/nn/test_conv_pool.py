"""F.conv*, F.*pool*, F.unfold/fold, F.pad, F.interpolate: values, gradients, errors.

Values are compared with NumPy references written per output position (the
kernel tests slide taps instead); gradients by gradcheck/gradgradcheck in
float64 at tiny sizes.
"""
import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import gradcheck, gradgradcheck
from nbtorch.ops import conv as C
from nbtorch.ops import pooling as P
from nbtorch.ops import resampling as S

TOL = {np.float32: 1e-4, np.float64: 1e-10}


def _rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _t(a, grad=False):
    return nbtorch.tensor(np.asarray(a), requires_grad=grad)


def _close(t, ref, dtype=np.float64):
    np.testing.assert_allclose(t.detach().numpy(), ref, rtol=TOL[dtype], atol=TOL[dtype])


# ---------------------------------------------------------------- NumPy references

def conv2d_ref(x, w, b=None, stride=(1, 1), pad=(0, 0, 0, 0), dil=(1, 1), groups=1):
    """pad = (top, bottom, left, right); one einsum per output position."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), pad[:2], pad[2:]))
    o, cg, kh, kw = w.shape
    eh, ew = dil[0] * (kh - 1) + 1, dil[1] * (kw - 1) + 1
    oh, ow = (xp.shape[2] - eh) // stride[0] + 1, (xp.shape[3] - ew) // stride[1] + 1
    out = np.zeros((x.shape[0], o, oh, ow))
    og = o // groups
    for g in range(groups):
        for i in range(oh):
            for j in range(ow):
                win = xp[:, g * cg:(g + 1) * cg, i * stride[0]:i * stride[0] + eh:dil[0],
                         j * stride[1]:j * stride[1] + ew:dil[1]]
                out[:, g * og:(g + 1) * og, i, j] = np.einsum("nchw,ochw->no", win,
                                                              w[g * og:(g + 1) * og])
    return out if b is None else out + b[None, :, None, None]


def conv_transpose2d_ref(x, w, b=None, stride=(1, 1), pad=(0, 0), out_pad=(0, 0), dil=(1, 1),
                         groups=1):
    """Every input pixel scatters weight * value into the output."""
    n, cin, h, wd = x.shape
    _, cog, kh, kw = w.shape
    full = np.zeros((n, cog * groups, (h - 1) * stride[0] + dil[0] * (kh - 1) + 1 + out_pad[0],
                     (wd - 1) * stride[1] + dil[1] * (kw - 1) + 1 + out_pad[1]))
    cg = cin // groups
    for c in range(cin):
        g = c // cg
        for i in range(h):
            for j in range(wd):
                for ki in range(kh):
                    for kj in range(kw):
                        full[:, g * cog:(g + 1) * cog, i * stride[0] + ki * dil[0],
                             j * stride[1] + kj * dil[1]] += x[:, c, i, j, None] * w[c, :, ki, kj]
    out = full[:, :, pad[0]:full.shape[2] - pad[0], pad[1]:full.shape[3] - pad[1]]
    return out if b is None else out + b[None, :, None, None]


# ---------------------------------------------------------------- convolution values

CONV2D_CASES = [  # (C, O, H, W, k, stride, padding, dilation, groups)
    (3, 4, 6, 5, (3, 3), 1, 1, 1, 1),
    (4, 6, 7, 7, (3, 2), (2, 1), (1, 0), (1, 2), 2),
    (2, 2, 5, 6, (1, 1), 2, 0, 1, 2),
]


@pytest.mark.parametrize("case", CONV2D_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_matches_numpy(case, dtype):
    c, o, h, w, k, stride, padding, dil, groups = case
    x, wt, b = _rand(2, c, h, w, dtype=dtype), _rand(o, c // groups, *k, seed=1, dtype=dtype), \
        _rand(o, seed=2, dtype=dtype)
    s, p, d = (C._ntuple(v, 2, "") for v in (stride, padding, dil))
    ref = conv2d_ref(x, wt, b, s, (p[0], p[0], p[1], p[1]), d, groups)
    out = C.conv2d(_t(x), _t(wt), _t(b), stride, padding, dil, groups)
    assert out.dtype == _t(x).dtype
    _close(out, ref, dtype)
    _close(C.conv2d(_t(x[0]), _t(wt), None, stride, padding, dil, groups),
           ref[0] - b[:, None, None], dtype)   # unbatched


def test_conv2d_same_and_valid_padding():
    x, w = _rand(1, 2, 5, 6), _rand(3, 2, 4, 3, seed=1)
    # total padding along H is 3: 1 on top, 2 at the bottom (PyTorch's rule); along W 1 + 1
    _close(C.conv2d(_t(x), _t(w), padding="same", dilation=(1, 1)),
           conv2d_ref(x, w, pad=(1, 2, 1, 1)))
    assert C.conv2d(_t(x), _t(w), padding="same").shape == (1, 3, 5, 6)
    _close(C.conv2d(_t(x), _t(w), padding="valid"), conv2d_ref(x, w))
    _close(C.conv2d(_t(x), _t(w), padding="same", dilation=2),
           conv2d_ref(x, w, pad=(3, 3, 2, 2), dil=(2, 2)))


def test_conv2d_non_contiguous_and_float16_inputs():
    x, w = _rand(2, 3, 6, 5), _rand(4, 3, 3, 3, seed=1)
    xt = _t(x.transpose(0, 1, 3, 2).copy()).transpose(2, 3)   # a non-contiguous view of x
    _close(C.conv2d(xt, _t(w), padding=1), conv2d_ref(x, w, pad=(1, 1, 1, 1)))
    half = C.conv2d(_t(x).half(), _t(w).half(), padding=1)
    assert half.dtype == nbtorch.float16
    np.testing.assert_allclose(half.float().numpy(), conv2d_ref(x, w, pad=(1, 1, 1, 1)),
                               rtol=2e-2, atol=3e-2)


def test_conv1d_matches_numpy():
    x, w, b = _rand(2, 4, 9), _rand(6, 2, 3, seed=1), _rand(6, seed=2)
    ref = conv2d_ref(x[:, :, None], w[:, :, None], b, (1, 2), (0, 0, 1, 1), (1, 2), 2)[:, :, 0]
    _close(C.conv1d(_t(x), _t(w), _t(b), stride=2, padding=1, dilation=2, groups=2), ref)
    _close(C.conv1d(_t(x[1]), _t(w), _t(b), 2, 1, 2, 2), ref[1])
    assert C.conv1d(_t(x), _t(w[:, :, :2]), groups=2, padding="same").shape == (2, 6, 9)


@pytest.mark.parametrize("stride,pad,out_pad,dil,groups", [
    (1, 0, 0, 1, 1), (2, 1, 1, 1, 2), ((2, 3), (0, 1), (1, 0), (2, 1), 1)])
def test_conv_transpose2d_matches_numpy(stride, pad, out_pad, dil, groups):
    x, w, b = _rand(2, 4, 3, 4), _rand(4, 3, 3, 2, seed=1), _rand(3 * groups, seed=2)
    s, p, op, d = (C._ntuple(v, 2, "") for v in (stride, pad, out_pad, dil))
    ref = conv_transpose2d_ref(x, w, b, s, p, op, d, groups)
    _close(C.conv_transpose2d(_t(x), _t(w), _t(b), stride, pad, out_pad, groups, dil), ref)


def test_conv_transpose1d_matches_numpy():
    x, w = _rand(2, 2, 5), _rand(2, 3, 3, seed=1)
    ref = conv_transpose2d_ref(x[:, :, None], w[:, :, None], None, (1, 2), (0, 1), (0, 1))[:, :, 0]
    _close(C.conv_transpose1d(_t(x), _t(w), stride=2, padding=1, output_padding=1), ref)


# ---------------------------------------------------------------- convolution gradients

def test_conv2d_gradcheck_and_gradgradcheck():
    x, w, b = _t(_rand(1, 4, 5, 4), True), _t(_rand(2, 2, 2, 3, seed=1), True), \
        _t(_rand(2, seed=2), True)

    def f(x, w, b):
        return C.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2)
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))


def test_conv2d_weight_grad_reuses_the_forward_columns_once(monkeypatch):
    # the batch path's forward keeps its im2col columns for the weight gradient and frees
    # them after use; a second backward (retain_graph) recomputes them: the same gradients
    from nbtorch.kernels.cpu import cblas
    monkeypatch.setattr(cblas, "gemm_address", lambda dtype, work=0: 0)   # no per-image kernels
    x, w = _t(_rand(3, 2, 7, 6), True), _t(_rand(4, 2, 3, 2, seed=1), True)
    y = nbtorch.nn.functional.conv2d(x, w, stride=(2, 1), padding=1, dilation=(1, 2))
    assert y.grad_fn.columns is not None
    g = _t(_rand(*y.shape, seed=2))
    y.backward(g, retain_graph=True)
    assert y.grad_fn.columns is None
    gw, gx = w.grad.numpy().copy(), x.grad.numpy().copy()
    x.grad = w.grad = None
    y.backward(g)
    np.testing.assert_array_equal(w.grad.numpy(), gw)
    np.testing.assert_array_equal(x.grad.numpy(), gx)
    with nbtorch.no_grad():                      # nothing to keep without a backward
        assert nbtorch.nn.functional.conv2d(x, w).grad_fn is None
    assert nbtorch.nn.functional.conv2d(x, w.detach()).grad_fn.columns is None


def test_conv1d_and_transpose_gradcheck():
    x, w = _t(_rand(1, 2, 5), True), _t(_rand(3, 2, 2, seed=1), True)
    assert gradcheck(lambda x, w: C.conv1d(x, w, padding="same"), (x, w))
    xt, wt, bt = _t(_rand(1, 2, 3, 2), True), _t(_rand(2, 2, 2, 2, seed=1), True), \
        _t(_rand(2, seed=2), True)

    def f(x, w, b):
        return C.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1)
    assert gradcheck(f, (xt, wt, bt))
    assert gradgradcheck(f, (xt, wt, bt))


def test_unfold_fold_values_and_gradients():
    x = _rand(2, 3, 5, 4)
    cols = C.unfold(_t(x), kernel_size=(2, 3), padding=1, stride=(2, 1))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.stack([xp[:, :, i:i + 2, j:j + 3].reshape(2, -1)
                    for i in range(0, 6, 2) for j in range(4)], axis=-1)
    _close(cols, ref)
    back = C.fold(cols, (5, 4), kernel_size=(2, 3), padding=1, stride=(2, 1))
    counts = C.fold(C.unfold(nbtorch.ones(1, 1, 5, 4, dtype=nbtorch.float64), (2, 3), padding=1,
                             stride=(2, 1)), (5, 4), (2, 3), padding=1, stride=(2, 1))
    _close(back, x * counts.numpy())
    xt = _t(_rand(1, 2, 3, 3), True)
    assert gradcheck(lambda x: C.unfold(x, 2, dilation=(1, 2), padding=(0, 1)), (xt,))
    ct = _t(_rand(1, 4, 4), True)
    assert gradgradcheck(lambda c: C.fold(c, (3, 3), 2), (ct,))


# ---------------------------------------------------------------- pooling

def max_pool_ref(x, k, s, p, d, out_hw):
    n, c, h, w = x.shape
    out, idx = np.empty((n, c) + out_hw), np.empty((n, c) + out_hw, np.int64)
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            best, arg = np.full((n, c), -np.inf), np.zeros((n, c), np.int64)
            for ki in range(k[0]):
                for kj in range(k[1]):
                    r, q = i * s[0] - p[0] + ki * d[0], j * s[1] - p[1] + kj * d[1]
                    if 0 <= r < h and 0 <= q < w:
                        better = x[:, :, r, q] > best
                        best = np.where(better, x[:, :, r, q], best)
                        arg = np.where(better, r * w + q, arg)
            out[:, :, i, j], idx[:, :, i, j] = best, arg
    return out, idx


@pytest.mark.parametrize("k,s,p,d,ceil",
                         [(2, None, 0, 1, False), ((3, 2), (2, 1), (1, 1), (1, 2), True)])
def test_max_pool2d_matches_numpy(k, s, p, d, ceil):
    x = _rand(2, 3, 7, 6)
    out, idx = P.max_pool2d(_t(x), k, s, p, d, ceil, return_indices=True)
    kk = C._ntuple(k, 2, "")
    ref, ref_idx = max_pool_ref(x, kk, C._ntuple(s or k, 2, ""), C._ntuple(p, 2, ""),
                                C._ntuple(d, 2, ""), tuple(out.shape[2:]))
    _close(out, ref)
    assert idx.dtype == nbtorch.int64 and (idx.numpy() == ref_idx).all()
    assert P.max_pool2d(_t(x), 2, ceil_mode=True).shape == (2, 3, 4, 3)
    _close(P.max_pool2d(_t(x[0]), k, s, p, d, ceil), ref[0])


def test_max_pool1d_avg_pool1d_values():
    x = nbtorch.tensor([[[1., 3., 2., 5., 4.]]])
    out, idx = P.max_pool1d(x, 2, return_indices=True)
    assert out.tolist() == [[[3., 5.]]] and idx.tolist() == [[[1, 3]]]
    assert P.max_pool1d(x, 3, 1, 1).tolist() == [[[3., 3., 5., 5., 5.]]]
    assert P.avg_pool1d(x, 2, ceil_mode=True).tolist() == [[[2., 3.5, 4.]]]
    np.testing.assert_allclose(P.avg_pool1d(x, 3, 2, 1).numpy(), [[[4 / 3, 10 / 3, 3.]]])
    np.testing.assert_allclose(P.avg_pool1d(x, 3, 2, 1, count_include_pad=False).numpy(),
                               [[[2., 10 / 3, 4.5]]])


def test_avg_pool2d_matches_numpy():
    x = _rand(1, 2, 5, 4)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ones = np.pad(np.ones((5, 4)), 1)
    ref_incl, ref_excl = np.zeros((1, 2, 3, 2)), np.zeros((1, 2, 3, 2))
    for i in range(3):
        for j in range(2):
            win = xp[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].sum(axis=(2, 3))
            ref_incl[:, :, i, j] = win / 9
            ref_excl[:, :, i, j] = win / ones[2 * i:2 * i + 3, 2 * j:2 * j + 3].sum()
    _close(P.avg_pool2d(_t(x), 3, 2, 1), ref_incl)
    _close(P.avg_pool2d(_t(x), 3, 2, 1, count_include_pad=False), ref_excl)
    _close(P.avg_pool2d(_t(x), 3, 2, 1, divisor_override=2), ref_incl * 9 / 2)


def test_adaptive_pools_match_numpy():
    x = _rand(2, 3, 7, 5)
    avg = np.zeros((2, 3, 3, 2))
    mx = np.zeros((2, 3, 3, 2))
    for i, (h0, h1) in enumerate([(0, 3), (2, 5), (4, 7)]):
        for j, (w0, w1) in enumerate([(0, 3), (2, 5)]):
            avg[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
            mx[:, :, i, j] = x[:, :, h0:h1, w0:w1].max(axis=(2, 3))
    _close(P.adaptive_avg_pool2d(_t(x), (3, 2)), avg)
    _close(P.adaptive_avg_pool2d(_t(x), (3, None)), avg_cols(x))
    out, idx = P.adaptive_max_pool2d(_t(x), (3, 2), return_indices=True)
    _close(out, mx)
    picked = np.take_along_axis(x.reshape(2, 3, -1), idx.numpy().reshape(2, 3, -1), -1)
    np.testing.assert_array_equal(picked, mx.reshape(2, 3, -1))
    _close(P.adaptive_avg_pool1d(_t(x[..., 0]), 3), avg_1d(x[..., 0]))
    assert P.adaptive_max_pool1d(_t(x[..., 0]), 1).shape == (2, 3, 1)


def avg_cols(x):
    """adaptive_avg_pool2d(x, (3, None)) by hand: rows pooled, columns kept."""
    return np.stack([x[:, :, h0:h1].mean(axis=2) for h0, h1 in [(0, 3), (2, 5), (4, 7)]], 2)


def avg_1d(x):
    return np.stack([x[:, :, a:b].mean(axis=2) for a, b in [(0, 3), (2, 5), (4, 7)]], 2)


def test_pooling_gradcheck_and_gradgradcheck():
    x = _t(_rand(1, 2, 5, 4), True)
    assert gradcheck(lambda x: P.max_pool2d(x, (3, 2), (2, 1), (1, 1), ceil_mode=True), (x,))
    assert gradgradcheck(lambda x: P.max_pool2d(x, 2, 1), (x,))
    assert gradcheck(lambda x: P.avg_pool2d(x, 3, 2, 1, True, False), (x,))
    assert gradgradcheck(lambda x: P.avg_pool2d(x, 2, 1, 1), (x,))
    assert gradcheck(lambda x: P.adaptive_avg_pool2d(x, (3, 3)), (x,))
    assert gradgradcheck(lambda x: P.adaptive_max_pool2d(x, (2, 3)), (x,))
    x1 = _t(_rand(2, 2, 6), True)
    assert gradcheck(lambda x: P.max_pool1d(x, 3, 2, 1) + P.avg_pool1d(x, 2, 2), (x1,))


def test_max_pool_gradient_goes_to_the_argmax_only():
    x = _t([[[[1., 5.], [3., 2.]]]], True)
    P.max_pool2d(x, 2).sum().backward()
    assert x.grad.tolist() == [[[[0., 1.], [0., 0.]]]]


# ---------------------------------------------------------------- pad and interpolate

@pytest.mark.parametrize("mode,np_mode", [("constant", "constant"), ("reflect", "reflect"),
                                          ("replicate", "edge"), ("circular", "wrap")])
def test_pad_matches_numpy(mode, np_mode):
    x = _rand(2, 3, 4, 5)
    out = S.pad(_t(x), (2, 1, 1, 3), mode=mode)
    _close(out, np.pad(x, ((0, 0), (0, 0), (1, 3), (2, 1)), mode=np_mode))
    x1 = _t(_rand(1, 2, 4), True)
    assert gradcheck(lambda x: S.pad(x, (2, 3), mode=mode), (x1,))


def test_pad_constant_value_negative_and_gradients():
    x = _rand(2, 3, 4)
    _close(S.pad(_t(x), (1, 1), value=2.5),
           np.pad(x, ((0, 0), (0, 0), (1, 1)), constant_values=2.5))
    _close(S.pad(_t(x), (-1, 2, 0, 0, 1, 0)), np.pad(x, ((1, 0), (0, 0), (0, 2)))[:, :, 1:])
    xt = _t(_rand(2, 3), True)
    assert gradgradcheck(lambda x: S.pad(x, (1, -1, 2, 0), value=1.0), (xt,))
    assert S.pad(nbtorch.tensor([[1, 2]]), (1, 0), value=7).tolist() == [[7, 1, 2]]


def bilinear_ref(x, oh, ow, align_corners):
    h, w = x.shape[-2:]

    def taps(n_in, n_out):
        d = np.arange(n_out, dtype=np.float64)
        if align_corners:
            src = d * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0)
        else:
            src = np.maximum((d + 0.5) * n_in / n_out - 0.5, 0)
        i0 = np.floor(src).astype(int)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, src - i0
    h0, h1, lh = taps(h, oh)
    w0, w1, lw = taps(w, ow)
    top = x[..., h0, :][..., w0] * (1 - lw) + x[..., h0, :][..., w1] * lw
    bot = x[..., h1, :][..., w0] * (1 - lw) + x[..., h1, :][..., w1] * lw
    return top * (1 - lh[:, None]) + bot * lh[:, None]


@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_bilinear_and_linear_match_numpy(align_corners):
    x = _rand(2, 3, 4, 5)
    _close(S.interpolate(_t(x), size=(7, 3), mode="bilinear", align_corners=align_corners),
           bilinear_ref(x, 7, 3, align_corners))
    x1 = x[:, :, 0]
    _close(S.interpolate(_t(x1), size=8, mode="linear", align_corners=align_corners),
           bilinear_ref(x1[:, :, None], 1, 8, align_corners)[:, :, 0])
    xt = _t(_rand(1, 1, 3, 2), True)
    assert gradcheck(lambda x: S.interpolate(x, scale_factor=(1.5, 2), mode="bilinear",
                                             align_corners=align_corners), (xt,))
    assert gradgradcheck(lambda x: S.interpolate(x, size=(2, 3), mode="bilinear",
                                                 align_corners=align_corners), (xt,))


def test_interpolate_nearest_and_area():
    x = _rand(1, 2, 3, 4)
    out = S.interpolate(_t(x), scale_factor=2)
    _close(out, x.repeat(2, axis=2).repeat(2, axis=3))
    out = S.interpolate(_t(x), size=(5, 3))
    rows, cols = np.minimum((np.arange(5) * 0.6).astype(int), 2), (np.arange(3) * 4 / 3).astype(int)
    _close(out, x[:, :, rows][:, :, :, cols])
    exact = S.interpolate(_t(x), size=(5, 3), mode="nearest-exact")
    rows = ((np.arange(5) + 0.5) * 0.6).astype(int)
    cols = ((np.arange(3) + 0.5) * 4 / 3).astype(int)
    _close(exact, x[:, :, rows][:, :, :, cols])
    _close(S.interpolate(_t(x), size=(1, 2), mode="area"),
           P.adaptive_avg_pool2d(_t(x), (1, 2)).numpy())
    xt = _t(_rand(1, 1, 2, 3), True)
    assert gradcheck(lambda x: S.interpolate(x, size=(3, 5)), (xt,))


# ---------------------------------------------------------------- errors

def _raises(exc, match, fn, *args, **kwargs):
    with pytest.raises(exc, match=match):
        fn(*args, **kwargs)


def test_conv_errors():
    x, w = nbtorch.randn(1, 4, 5, 5), nbtorch.randn(8, 3, 3, 3)
    _raises(RuntimeError, r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got "
            r"input of size: \[2, 3\]", C.conv2d, nbtorch.randn(2, 3), w)
    _raises(RuntimeError, r"Given groups=1, weight of size \[8, 3, 3, 3\], expected "
            r"input\[1, 4, 5, 5\] to have 3 channels, but got 4 channels instead", C.conv2d, x, w)
    _raises(RuntimeError, r"Calculated padded input size per channel: \(2 x 2\). Kernel size: "
            r"\(3 x 3\). Kernel size can't be greater than actual input size",
            C.conv2d, nbtorch.randn(1, 3, 2, 2), w)
    _raises(RuntimeError, "expected weight to be divisible by 3", C.conv2d,
            nbtorch.randn(1, 6, 5, 5), nbtorch.randn(4, 2, 3, 3), groups=3)
    _raises(RuntimeError, "expected bias to be 1-dimensional with 8 elements",
            C.conv2d, nbtorch.randn(1, 3, 5, 5), w, nbtorch.randn(4))
    _raises(ValueError, "padding='same' is not supported for strided convolutions",
            C.conv2d, nbtorch.randn(1, 3, 5, 5), w, padding="same", stride=2)
    _raises(ValueError, "Invalid padding string 'full'", C.conv2d, nbtorch.randn(1, 3, 5, 5), w,
            padding="full")
    _raises(RuntimeError, "non-positive stride", C.conv2d, nbtorch.randn(1, 3, 5, 5), w, stride=0)
    _raises(RuntimeError, "Input type", C.conv2d, nbtorch.randn(1, 3, 5, 5).double(), w)
    _raises(RuntimeError, "not implemented for", C.conv2d, nbtorch.ones(1, 3, 5, 5,
            dtype=nbtorch.int64), nbtorch.ones(8, 3, 3, 3, dtype=nbtorch.int64))
    _raises(RuntimeError, r"Expected 2D \(unbatched\) or 3D \(batched\) input to conv1d",
            C.conv1d, nbtorch.randn(1, 3, 5, 5), nbtorch.randn(2, 3, 3))
    _raises(RuntimeError, "output padding must be smaller than either stride or dilation",
            C.conv_transpose2d, nbtorch.randn(1, 8, 3, 3), w, output_padding=1)


def test_pool_unfold_and_sampling_errors():
    x = nbtorch.randn(1, 3, 2, 2)
    _raises(RuntimeError, r"Given input size: \(3x2x2\). Calculated output size: \(3x0x0\). "
            "Output size is too small", P.max_pool2d, x, 3)
    _raises(RuntimeError, "pad should be at most half of effective kernel size, but got pad=2, "
            "kernel_size=3 and dilation=1", P.max_pool2d, nbtorch.randn(1, 1, 6, 6), 3, padding=2)
    _raises(RuntimeError, "pad should be smaller than or equal to half of kernel size",
            P.max_pool2d, nbtorch.randn(1, 1, 6, 6), 3, padding=2, dilation=2)
    _raises(RuntimeError, "non-empty 3D or 4D", P.avg_pool2d, nbtorch.randn(4, 4), 2)
    _raises(RuntimeError, "stride should not be zero", P.max_pool2d, x, 1, 0)
    _raises(RuntimeError, r"max_pool1d: Expected 2D or 3D \(batch mode\) tensor", P.max_pool1d,
            nbtorch.randn(4), 2)
    _raises(RuntimeError, "divisible by the product of kernel_size", C.fold,
            nbtorch.randn(1, 5, 4), (3, 3), 2)
    _raises(RuntimeError, "match the calculated number of sliding blocks 2 \\* 2 = 4",
            C.fold, nbtorch.randn(1, 4, 5), (3, 3), 2)
    _raises(RuntimeError, "Padding length must be divisible by 2", S.pad, x, (1, 2, 3))
    _raises(RuntimeError, "Padding size should be less than the corresponding input dimension",
            S.pad, x[0], (2, 2), mode="reflect")
    _raises(NotImplementedError, "Only 2D, 3D, 4D, 5D padding with non-constant padding",
            S.pad, x, (1, 1), mode="replicate")
    _raises(RuntimeError, "doesn't take in value argument", S.pad, x, (1, 1, 1, 1),
            mode="reflect", value=1.0)
    _raises(RuntimeError, "resulted in a negative output size", S.pad, x, (-2, -1))
    _raises(ValueError, "only one of size or scale_factor", S.interpolate, x, 3, 2)
    _raises(ValueError, "either size or scale_factor", S.interpolate, x)
    _raises(NotImplementedError, "Got 4D input, but linear mode needs 3D input",
            S.interpolate, x, 3, mode="linear")
    _raises(ValueError, "align_corners option can only be set", S.interpolate, x, 3,
            align_corners=True)


def test_matches_pytorch_when_installed():
    torch = pytest.importorskip("torch")
    tF = torch.nn.functional
    x, w, b = _rand(2, 4, 7, 6), _rand(6, 2, 3, 2, seed=1), _rand(6, seed=2)
    tx, tw, tb = torch.tensor(x), torch.tensor(w), torch.tensor(b)
    _close(C.conv2d(_t(x), _t(w), _t(b), 2, 1, 1, 2), tF.conv2d(tx, tw, tb, 2, 1, 1, 2).numpy())
    _close(C.conv2d(_t(x), _t(w), None, 1, "same", 2, 2),
           tF.conv2d(tx, tw, None, 1, "same", 2, 2).numpy())
    wt = _rand(4, 3, 3, 2, seed=3)
    _close(C.conv_transpose2d(_t(x), _t(wt), None, 2, 1, 1, 2, 1),
           tF.conv_transpose2d(tx, torch.tensor(wt), None, 2, 1, 1, 2, 1).numpy())
    _close(C.unfold(_t(x), (2, 3), 2, 1, (2, 1)), tF.unfold(tx, (2, 3), 2, 1, (2, 1)).numpy())
    cols = _rand(2, 8, 6)
    _close(C.fold(_t(cols), (5, 6), 2, 1, 0, 2),
           tF.fold(torch.tensor(cols), (5, 6), 2, 1, 0, 2).numpy())
    out, idx = P.max_pool2d(_t(x), 3, 2, 1, 2, ceil_mode=True, return_indices=True)
    ref, ref_idx = tF.max_pool2d(tx, 3, 2, 1, 2, ceil_mode=True, return_indices=True)
    _close(out, ref.numpy())
    assert (idx.numpy() == ref_idx.numpy()).all()
    for ceil, incl in ((True, False), (True, True), (False, False)):
        _close(P.avg_pool2d(_t(x), 3, 2, 1, ceil, incl),
               tF.avg_pool2d(tx, 3, 2, 1, ceil, incl).numpy())
    _close(P.adaptive_avg_pool2d(_t(x), (4, 5)), tF.adaptive_avg_pool2d(tx, (4, 5)).numpy())
    out, idx = P.adaptive_max_pool2d(_t(x), (3, 4), True)
    ref, ref_idx = tF.adaptive_max_pool2d(tx, (3, 4), True)
    _close(out, ref.numpy())
    assert (idx.numpy() == ref_idx.numpy()).all()
    for mode in ("constant", "reflect", "replicate", "circular"):
        _close(S.pad(_t(x), (1, 2, 3, 0), mode), tF.pad(tx, (1, 2, 3, 0), mode).numpy())
    x5 = _rand(1, 2, 3, 4, 5)
    for mode, ac in (("bilinear", False), ("bilinear", True), ("nearest", None),
                     ("nearest-exact", None), ("area", None)):
        ref = tF.interpolate(tx, scale_factor=1.7, mode=mode, align_corners=ac)
        _close(S.interpolate(_t(x), scale_factor=1.7, mode=mode, align_corners=ac), ref.numpy())
        ref = tF.interpolate(tx, size=(3, 9), mode=mode, align_corners=ac)
        _close(S.interpolate(_t(x), size=(3, 9), mode=mode, align_corners=ac), ref.numpy())
    _close(S.interpolate(_t(x5), size=(5, 3, 7), mode="trilinear"),
           tF.interpolate(torch.tensor(x5), size=(5, 3, 7), mode="trilinear").numpy())


def test_integer_images_pool_as_in_pytorch():
    x = nbtorch.arange(16).reshape(1, 1, 4, 4)
    for dt in (nbtorch.int64, nbtorch.int32, nbtorch.uint8):
        out = nbtorch.nn.functional.max_pool2d(x.to(dt), 2)       # NotImplementedError before
        assert out.dtype is dt and out.flatten().tolist() == [5, 7, 13, 15]
    assert nbtorch.nn.functional.avg_pool2d(x, 2).flatten().tolist() == [2, 4, 10, 12]
    got = nbtorch.nn.functional.avg_pool2d(-x - 1, 2).flatten().tolist()
    assert got == [-3, -5, -11, -13]                     # the quotient truncated


def test_negative_padding_crops_in_every_mode():
    """reflect/replicate mirror the original span, circular wraps the cropped one, as
    PyTorch's (negative padding raised for the three before)."""
    pad = nbtorch.nn.functional.pad
    x = nbtorch.arange(5.0).reshape(1, 1, 5)
    assert pad(x, (-1, 2), mode="reflect").flatten().tolist() == [1, 2, 3, 4, 3, 2]
    assert pad(x, (-1, 2), mode="replicate").flatten().tolist() == [1, 2, 3, 4, 4, 4]
    assert pad(x, (-1, 2), mode="circular").flatten().tolist() == [1, 2, 3, 4, 1, 2]
    assert pad(x, (2, -2), mode="circular").flatten().tolist() == [1, 2, 0, 1, 2]
    torch = pytest.importorskip("torch")
    a = np.arange(40, dtype=np.float32).reshape(1, 2, 4, 5)
    for mode in ("reflect", "replicate", "circular"):
        for p in ((-1, 2, 1, -1), (2, -2, -1, 3), (-3, 4, 0, 0)):
            want = torch.nn.functional.pad(torch.tensor(a), p, mode=mode).numpy()
            np.testing.assert_array_equal(pad(nbtorch.tensor(a), p, mode=mode).numpy(), want)
