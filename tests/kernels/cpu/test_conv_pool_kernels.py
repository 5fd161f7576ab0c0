"""Convolution, pooling and resampling kernels against straightforward NumPy references.

The references slide the kernel window with slicing and einsum (no im2col), so
they are independent of the kernels' algorithm.  Sizes are tiny; float32 runs
the parallel variants (threshold forced to 0) one image per batch chunk, the convolutions'
batch split over two threads, float64 the serial ones with the whole batch in one chunk.
"""
import numpy as np
import pytest

conv = pytest.importorskip("nbtorch.kernels.cpu.conv")
pool = pytest.importorskip("nbtorch.kernels.cpu.pool")
pool_adaptive = pytest.importorskip("nbtorch.kernels.cpu.pool_adaptive")
from nbtorch.ops.conv import conv_output_size  # noqa: E402  (shape rules live with the ops)
from nbtorch.ops.pooling import pool_output_size  # noqa: E402

DTYPES = [np.float32, np.float64]
TOL = {np.float32: 1e-4, np.float64: 1e-11}

# (N, C, H, W, O, kernel, stride, padding, dilation, groups)
CONV_CASES = [
    (2, 4, 7, 6, 6, (3, 2), (2, 1), (1, 2), (1, 2), 2),
    (1, 3, 5, 5, 4, (1, 1), (1, 1), (0, 0), (1, 1), 1),
    (2, 2, 9, 8, 4, (3, 3), (3, 2), (0, 1), (2, 1), 2),
    (1, 2, 4, 4, 3, (5, 5), (1, 1), (2, 2), (1, 1), 1),
    (2, 3, 1, 9, 3, (1, 3), (1, 2), (0, 1), (1, 1), 3),  # conv1d as H = 1
    # stride 1, one group
    (3, 3, 7, 6, 5, (3, 2), (1, 1), (1, 0), (2, 1), 1),
    (2, 2, 5, 5, 3, (2, 2), (1, 1), (1, 1), (1, 1), 1),
    (3, 2, 6, 6, 4, (5, 5), (1, 1), (0, 0), (1, 1), 1),
    (2, 3, 1, 9, 4, (1, 3), (1, 1), (0, 2), (1, 2), 1),  # conv1d
]


@pytest.fixture(params=DTYPES, ids=["float32", "float64"])
def dtype(request, monkeypatch):
    if request.param == np.float32:   # parallel variants, and batch chunks of one image
        monkeypatch.setattr(conv, "PARALLEL_MIN_ELEMENTS", 0)
        monkeypatch.setattr(conv, "CHUNK_ELEMENTS", 1)
        monkeypatch.setattr(conv, "BATCH_SPLIT_MIN_MACS", 0)      # the batch over 2 threads
        monkeypatch.setattr(conv.batch_threads, "threads", lambda: 2)
        monkeypatch.setattr(conv.batch_threads.workers, "helpers_usable", lambda key=None: True)
        monkeypatch.setattr(pool, "PARALLEL_MIN_ELEMENTS", 0)
        monkeypatch.setattr(pool, "SPLIT_MIN_WORK", 0)
    return request.param


def _rand(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _out_len(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _taps(xp, ki, kj, dil, stride, out_hw):
    """The strided slice of the padded input that tap (ki, kj) reads."""
    h0, w0 = ki * dil[0], kj * dil[1]
    return xp[..., h0:h0 + stride[0] * (out_hw[0] - 1) + 1:stride[0],
              w0:w0 + stride[1] * (out_hw[1] - 1) + 1:stride[1]]


def _pad(x, padding, value=0.0, extra=(0, 0)):
    n, c, h, w = x.shape
    (ph, pw), (eh, ew) = padding, extra
    xp = np.full((n, c, h + 2 * ph + eh, w + 2 * pw + ew), value, dtype=np.float64)
    xp[:, :, ph:ph + h, pw:pw + w] = x
    return xp


def conv_reference(x, w, b, stride, padding, dil, groups):
    """Forward and the two gradients (for a given grad_out) by sliding taps."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = _out_len(h, kh, stride[0], padding[0], dil[0])
    ow = _out_len(wd, kw, stride[1], padding[1], dil[1])
    xp = _pad(x, padding)
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        ci, oi = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
        for ki in range(kh):
            for kj in range(kw):
                patch = _taps(xp[:, ci], ki, kj, dil, stride, (oh, ow))
                out[:, oi] += np.einsum("nchw,oc->nohw", patch, w[oi, :, ki, kj])
    if b is not None:
        out += b[None, :, None, None]
    return out


def conv_grad_reference(x, w, go, stride, padding, dil, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = go.shape[2:]
    xp = _pad(x, padding)
    gxp = np.zeros_like(xp)
    gw = np.zeros(w.shape)
    og = o // groups
    for g in range(groups):
        ci, oi = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
        for ki in range(kh):
            for kj in range(kw):
                patch = _taps(xp[:, ci], ki, kj, dil, stride, (oh, ow))
                gw[oi, :, ki, kj] = np.einsum("nohw,nchw->oc", go[:, oi], patch)
                _taps(gxp[:, ci], ki, kj, dil, stride, (oh, ow))[...] += np.einsum(
                    "nohw,oc->nchw", go[:, oi], w[oi, :, ki, kj])
    ph, pw = padding
    return gxp[:, :, ph:ph + h, pw:pw + wd], gw


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_forward_and_grads(case, dtype):
    n, c, h, wd, o, k, s, p, d, g = case
    x, w, b = _rand((n, c, h, wd), dtype, 1), _rand((o, c // g, *k), dtype, 2), _rand(o, dtype, 3)
    ref = conv_reference(x, w, b, s, p, d, g)
    out = np.empty(ref.shape, dtype)
    conv.conv2d_forward(x, w, b, out, s, p, d, g)
    np.testing.assert_allclose(out, ref, rtol=TOL[dtype], atol=TOL[dtype])
    conv.conv2d_forward(x, w, None, out, s, p, d, g)
    np.testing.assert_allclose(out, ref - b[None, :, None, None], rtol=TOL[dtype], atol=TOL[dtype])

    go = _rand(ref.shape, dtype, 4)
    gx_ref, gw_ref = conv_grad_reference(x, w, go, s, p, d, g)
    gx, gw = np.full_like(x, np.nan), np.full_like(w, np.nan)
    conv.conv2d_grad_input(go, w, gx, s, p, d, g)
    conv.conv2d_grad_weight(x, go, gw, s, p, d, g)
    np.testing.assert_allclose(gx, gx_ref, rtol=TOL[dtype], atol=TOL[dtype])
    np.testing.assert_allclose(gw, gw_ref, rtol=TOL[dtype], atol=TOL[dtype])
    gb = np.empty(o, dtype)
    conv.channel_sum(go.reshape(n, o, -1), gb)
    np.testing.assert_allclose(gb, go.sum(axis=(0, 2, 3)), rtol=TOL[dtype], atol=TOL[dtype])


def test_grad_input_with_output_padding_rows():
    # stride 2 leaves the last input row/col unread: its gradient must be exactly 0
    x, w = _rand((1, 2, 6, 6), np.float64), _rand((3, 2, 3, 3), np.float64, 1)
    go = _rand((1, 3, 2, 2), np.float64, 2)
    gx = np.full_like(x, np.nan)
    conv.conv2d_grad_input(go, w, gx, (2, 2), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(gx, conv_grad_reference(x, w, go, (2, 2), (0, 0), (1, 1), 1)[0])
    assert np.all(gx[:, :, 5, :] == 0) and np.all(gx[:, :, :, 5] == 0)


@pytest.mark.parametrize("padding", [(1, 1), (0, 0)])
def test_stride1_grad_input_into_a_larger_input(padding):
    # conv_transpose with dilation 2 and output_padding 1: an input larger than the windows
    x, w = _rand((2, 2, 7, 7), np.float64), _rand((3, 2, 3, 3), np.float64, 1)
    oh = _out_len(7, 3, 1, padding[0], 2) - 1
    go = _rand((2, 3, oh, oh), np.float64, 2)
    gx = np.full_like(x, np.nan)
    conv.conv2d_grad_input(go, w, gx, (1, 1), padding, (2, 2), 1)
    np.testing.assert_allclose(gx, conv_grad_reference(x, w, go, (1, 1), padding, (2, 2), 1)[0])
    if padding == (0, 0):      # no tap reaches the last row/col
        assert np.all(gx[:, :, 6, :] == 0) and np.all(gx[:, :, :, 6] == 0)


def test_unfold_matches_patches_and_fold_is_its_adjoint(dtype):
    n, c, h, w, k, s, p, d = 2, 3, 6, 5, (2, 3), (2, 1), (1, 1), (2, 1)
    x = _rand((n, c, h, w), dtype)
    oh, ow = _out_len(h, k[0], s[0], p[0], d[0]), _out_len(w, k[1], s[1], p[1], d[1])
    cols = np.empty((n, c * k[0] * k[1], oh * ow), dtype)
    conv.unfold(x, cols, k, s, p, d, (oh, ow))
    xp = _pad(x, p)
    ref = np.stack([_taps(xp, ki, kj, d, s, (oh, ow)) for ki in range(k[0]) for kj in range(k[1])],
                   axis=2).reshape(n, -1, oh * ow)
    np.testing.assert_allclose(cols, ref, rtol=TOL[dtype])
    y = _rand(cols.shape, dtype, 5)
    folded = np.empty_like(x)
    conv.fold(y, folded, k, s, p, d, (oh, ow))
    lhs, rhs = np.vdot(folded.astype(np.float64), x), np.vdot(y.astype(np.float64), cols)
    assert abs(lhs - rhs) < 1e-3 * max(1.0, abs(lhs))


def test_conv_output_size():
    assert conv_output_size(28, 3, 1, 1, 1) == 28
    assert conv_output_size(7, 3, 2, 0, 2) == 2


# ---------------------------------------------------------------- pooling

POOL_CASES = [  # (H, W, kernel, stride, padding, dilation, ceil_mode)
    (7, 6, (3, 2), (2, 2), (1, 1), (1, 1), False),
    (7, 7, (3, 3), (2, 2), (1, 0), (1, 2), True),
    (5, 8, (2, 2), (2, 2), (0, 0), (1, 1), True),
    (1, 9, (1, 3), (1, 2), (0, 1), (1, 1), False),  # max_pool1d as H = 1
]


def _pool_out(h, w, k, s, p, d, ceil):
    return (pool_output_size(h, k[0], s[0], p[0], d[0], ceil),
            pool_output_size(w, k[1], s[1], p[1], d[1], ceil))


def max_pool_reference(x, k, s, p, d, out_hw):
    h, w = x.shape[-2:]
    xp = _pad(x, p, -np.inf, extra=(k[0] * d[0] + s[0], k[1] * d[1] + s[1]))
    taps = np.stack([_taps(xp, ki, kj, d, s, out_hw)
                     for ki in range(k[0]) for kj in range(k[1])], -1)
    arg = taps.argmax(-1)
    ki, kj = arg // k[1], arg % k[1]
    rows = np.arange(out_hw[0])[:, None] * s[0] - p[0] + ki * d[0]
    cols = np.arange(out_hw[1])[None, :] * s[1] - p[1] + kj * d[1]
    return taps.max(-1), rows * w + cols


@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool2d(case, dtype):
    h, w, k, s, p, d, ceil = case
    x = _rand((2, 3, h, w), dtype)
    oh, ow = _pool_out(h, w, k, s, p, d, ceil)
    out, idx = np.empty((6, oh, ow), dtype), np.empty((6, oh, ow), np.int64)
    pool.max_pool2d_forward(x.reshape(6, h, w), out, idx, k, s, p, d)
    ref, ref_idx = max_pool_reference(x, k, s, p, d, (oh, ow))
    np.testing.assert_array_equal(out, ref.reshape(6, oh, ow))
    np.testing.assert_array_equal(idx, ref_idx.reshape(6, oh, ow))
    g = _rand(out.shape, dtype, 1)
    gx = np.full((6, h, w), np.nan, dtype)
    pool.max_pool2d_backward(g, idx, gx)
    gx_ref = np.zeros((6, h * w))
    for plane in range(6):
        np.add.at(gx_ref[plane], idx[plane].ravel(), g[plane].ravel())
    np.testing.assert_allclose(gx.reshape(6, -1), gx_ref, rtol=TOL[dtype])


def test_max_pool_nan_wins_and_output_size():
    x = np.array([[[1.0, np.nan, 3.0, 2.0]]])
    out, idx = np.empty((1, 1, 2)), np.empty((1, 1, 2), np.int64)
    pool.max_pool2d_forward(x, out, idx, (1, 2), (1, 2), (0, 0), (1, 1))
    assert np.isnan(out[0, 0, 0]) and idx[0, 0, 0] == 1 and out[0, 0, 1] == 3.0
    assert pool_output_size(5, 2, 2, 0, 1, True) == 3
    assert pool_output_size(5, 2, 2, 0, 1, False) == 2
    assert pool_output_size(5, 2, 2, 1, 1, True) == 3  # a 4th window would start in padding
    assert pool_output_size(6, 3, 2, 1, 1, True) == 4


def avg_pool_reference(x, k, s, p, out_hw, include_pad, divisor):
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + out_hw)
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            hs, ws = i * s[0] - p[0], j * s[1] - p[1]
            he, we = min(hs + k[0], h + p[0]), min(ws + k[1], w + p[1])
            count = (he - hs) * (we - ws)
            hs, ws, he, we = max(hs, 0), max(ws, 0), min(he, h), min(we, w)
            if not include_pad:
                count = (he - hs) * (we - ws)
            out[..., i, j] = x[..., hs:he, ws:we].sum(axis=(-1, -2)) / (divisor or count)
    return out


@pytest.mark.parametrize("include_pad,divisor,ceil",
                         [(True, None, False), (False, None, True), (True, 5, True)])
def test_avg_pool2d(dtype, include_pad, divisor, ceil):
    h, w, k, s, p = 7, 6, (3, 2), (2, 2), (1, 1)
    x = _rand((6, h, w), dtype)
    oh, ow = _pool_out(h, w, k, s, p, (1, 1), ceil)
    out = np.empty((6, oh, ow), dtype)
    pool.avg_pool2d_forward(x, out, k, s, p, include_pad, divisor)
    np.testing.assert_allclose(out, avg_pool_reference(x, k, s, p, (oh, ow), include_pad, divisor),
                               rtol=TOL[dtype], atol=TOL[dtype])
    # backward is the adjoint: <avg(x), g> == <x, avg_backward(g)>
    g = _rand(out.shape, dtype, 2)
    gx = np.full_like(x, np.nan)
    pool.avg_pool2d_backward(g, gx, k, s, p, include_pad, divisor)
    lhs = np.vdot(avg_pool_reference(x, k, s, p, (oh, ow), include_pad, divisor), g)
    assert abs(lhs - np.vdot(x.astype(np.float64), gx)) < 1e-4 * max(1.0, abs(lhs))


@pytest.mark.parametrize("h,w,k,s,d", [(8, 8, (2, 2), (2, 2), (1, 1)), (7, 9, (3, 2), (2, 3), (1, 2)),
                                       (1, 9, (1, 3), (1, 2), (1, 1)), (6, 5, (2, 3), (1, 1), (2, 1)),
                                       (7, 9, (2, 2), (2, 2), (1, 1))])
def test_inside_window_fast_paths_match_the_general_kernels(dtype, h, w, k, s, d):
    """Unpadded windows run _max_inside (_max_2x2 for 2x2 stride 2) / _avg_inside: bit for
    bit the general kernels'."""
    x = _rand((4, h, w), dtype)
    x[0, 0, :2], x[1, -1, 0], x[2] = np.nan, -np.inf, -np.inf          # NaN wins, ties, -inf
    x[3, ::2] = 1.0
    oh, ow = _pool_out(h, w, k, s, (0, 0), d, False)
    out, idx = np.empty((4, oh, ow), dtype), np.empty((4, oh, ow), np.int64)
    pool.max_pool2d_forward(x, out, idx, k, s, (0, 0), d)
    ref, ref_idx = np.empty_like(out), np.empty_like(idx)
    geom = (1,) + k + (1,) + s + (0, 0, 0) + (1,) + d
    pool._max_serial(x[:, None], ref[:, None], ref_idx[:, None], geom)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(idx, ref_idx)
    if d != (1, 1):
        return
    x[np.isnan(x) | np.isinf(x)] = 0.5
    for divisor in (None, 3):
        out = np.empty((4, oh, ow), dtype)
        pool.avg_pool2d_forward(x, out, k, s, (0, 0), True, divisor)
        ref = np.empty_like(out)
        pool._avg_serial(x[:, None], ref[:, None], (1,) + k + (1,) + s + (0, 0, 0), True,
                         divisor or 0)
        np.testing.assert_array_equal(out, ref)
        g = _rand(out.shape, dtype, 3)
        gx, gx_ref = np.full_like(x, np.nan), np.full_like(x, np.nan)
        pool.avg_pool2d_backward(g, gx, k, s, (0, 0), True, divisor)
        pool._avg_backward_serial(g[:, None], gx_ref[:, None], (1,) + k + (1,) + s + (0, 0, 0),
                                  True, divisor or 0)
        np.testing.assert_array_equal(gx, gx_ref)


@pytest.mark.parametrize("in_hw,out_hw", [((7, 5), (3, 2)), ((4, 4), (4, 4)), ((3, 5), (5, 7))])
def test_adaptive_pools(dtype, in_hw, out_hw):
    x = _rand((3,) + in_hw, dtype)
    hs, he = pool.adaptive_ranges(in_hw[0], out_hw[0])
    ws, we = pool.adaptive_ranges(in_hw[1], out_hw[1])
    ref_avg, ref_max = np.zeros((3,) + out_hw), np.zeros((3,) + out_hw)
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            win = x[:, hs[i]:he[i], ws[j]:we[j]]
            ref_avg[:, i, j], ref_max[:, i, j] = win.mean(axis=(1, 2)), win.max(axis=(1, 2))
    out = np.empty((3,) + out_hw, dtype)
    pool_adaptive.adaptive_avg_pool2d_forward(x, out)
    np.testing.assert_allclose(out, ref_avg, rtol=TOL[dtype], atol=TOL[dtype])
    g = _rand(out.shape, dtype, 1)
    gx = np.full_like(x, np.nan)
    pool_adaptive.adaptive_avg_pool2d_backward(g, gx)
    assert abs(np.vdot(ref_avg, g) - np.vdot(x.astype(np.float64), gx)) < 1e-4
    idx = np.empty(out.shape, np.int64)
    pool_adaptive.adaptive_max_pool2d_forward(x, out, idx)
    np.testing.assert_array_equal(out, ref_max)
    np.testing.assert_array_equal(np.take_along_axis(x.reshape(3, -1), idx.reshape(3, -1), 1),
                                  out.reshape(3, -1))


def test_adaptive_ranges_cover_pytorch_windows():
    start, end = pool.adaptive_ranges(10, 3)
    assert start.tolist() == [0, 3, 6] and end.tolist() == [4, 7, 10]


# ---------------------------------------------------------------- resampling along one axis

def test_gather_axis_and_backward(dtype):
    x = _rand((2, 4, 3), dtype)
    index = np.array([1, 0, -1, 3, 3], np.int64)
    out = np.empty((2, 5, 3), dtype)
    pool.gather_axis(x, index, 7.0, out)
    ref = np.where(index[None, :, None] >= 0, x[:, np.maximum(index, 0)], 7.0)
    np.testing.assert_array_equal(out, ref)
    g = _rand(out.shape, dtype, 1)
    gx = np.full_like(x, np.nan)
    pool.gather_axis_backward(g, index, gx)
    gx_ref = np.zeros(x.shape)
    for m, i in enumerate(index):
        if i >= 0:
            gx_ref[:, i] += g[:, m]
    np.testing.assert_allclose(gx, gx_ref, rtol=TOL[dtype])


def test_lerp_axis_and_backward(dtype):
    x = _rand((2, 4, 3), dtype)
    i0, i1 = np.array([0, 1, 3], np.int64), np.array([1, 2, 3], np.int64)
    w1 = np.array([0.25, 0.5, 0.0], dtype)
    w0 = (1 - w1).astype(dtype)
    out = np.empty((2, 3, 3), dtype)
    pool.lerp_axis(x, i0, i1, w0, w1, out)
    ref = x[:, i0] * w0[None, :, None] + x[:, i1] * w1[None, :, None]
    np.testing.assert_allclose(out, ref, rtol=TOL[dtype])
    g = _rand(out.shape, dtype, 1)
    gx = np.full_like(x, np.nan)
    pool.lerp_axis_backward(g, i0, i1, w0, w1, gx)
    assert abs(np.vdot(ref.astype(np.float64), g) - np.vdot(x.astype(np.float64), gx)) < 1e-4


def test_take_planes_is_the_adjoint_of_scatter(dtype):
    x = _rand((3, 12), dtype)
    idx = np.random.default_rng(1).integers(0, 12, size=(3, 5)).astype(np.int64)
    out = np.empty((3, 5), dtype)
    pool.take_planes(x, idx, out)
    np.testing.assert_array_equal(out, np.take_along_axis(x, idx, 1))


def test_pointwise_grad_input_into_a_larger_input():
    # conv_transpose2d with a 1x1 kernel and output_padding 1: grad_in is 1 larger than grad_out
    w, go = _rand((3, 2, 1, 1), np.float64), _rand((2, 3, 4, 4), np.float64, 1)
    gx = np.full((2, 2, 5, 5), np.nan)
    conv.conv2d_grad_input(go, w, gx, (1, 1), (0, 0), (2, 2), 1)
    np.testing.assert_allclose(gx[:, :, :4, :4], np.einsum("nohw,oc->nchw", go, w[:, :, 0, 0]))
    assert np.all(gx[:, :, 4] == 0) and np.all(gx[:, :, :, 4] == 0)
    x, gw = _rand((2, 2, 5, 5), np.float64, 2), np.empty_like(w)
    conv.conv2d_grad_weight(x, go, gw, (1, 1), (0, 0), (2, 2), 1)
    np.testing.assert_allclose(gw[:, :, 0, 0], np.einsum("nohw,nchw->oc", go, x[:, :, :4, :4]))
