"""Conv3d, ConvTranspose1d/3d, MaxPool3d, AvgPool3d, AdaptiveAvg/MaxPool3d, conv_tbc:
values against NumPy references (taps slid with strided slices: no im2col), gradients by
gradcheck (through check_layer), PyTorch's errors, and PyTorch itself where importable.
float32 values and float64 gradients only: the kernels are the 2-D ones over volumes."""
import itertools

import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from harness import check_layer, numpy_params

F32 = (nbtorch.float32,)


def conv_nd_ref(x, w, b, stride, pad, dil, groups):
    """Cross-correlation with any number of spatial dims: one einsum per kernel tap."""
    nd = x.ndim - 2
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(p, p) for p in pad])
    n_o, cg, k = w.shape[0], w.shape[1], w.shape[2:]
    size = [(xp.shape[2 + i] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    out, og = np.zeros((x.shape[0], n_o, *size)), n_o // groups
    for g in range(groups):
        for tap in itertools.product(*map(range, k)):
            sl = tuple(slice(t * d, t * d + s * (o - 1) + 1, s)
                       for t, d, s, o in zip(tap, dil, stride, size))
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
            out[:, g * og:(g + 1) * og] += np.einsum(
                "nc...,oc->no...", patch, w[(slice(g * og, (g + 1) * og), slice(None)) + tap])
    return out if b is None else out + b.reshape((1, -1) + (1,) * nd)


def conv_transpose_nd_ref(x, w, b, stride, pad, out_pad, dil, groups):
    """Every input element scatters value * weight into the (uncropped) output."""
    nd, n_i = x.ndim - 2, x.shape[2:]
    cin, cog, k = w.shape[0], w.shape[1], w.shape[2:]
    full = [(n_i[i] - 1) * stride[i] + dil[i] * (k[i] - 1) + 1 + out_pad[i] for i in range(nd)]
    out, cg = np.zeros((x.shape[0], cog * groups, *full)), cin // groups
    for g in range(groups):
        for tap in itertools.product(*map(range, k)):
            sl = tuple(slice(t * d, t * d + s * (m - 1) + 1, s)
                       for t, d, s, m in zip(tap, dil, stride, n_i))
            out[(slice(None), slice(g * cog, (g + 1) * cog)) + sl] += np.einsum(
                "nc...,co->no...", x[:, g * cg:(g + 1) * cg],
                w[(slice(g * cg, (g + 1) * cg), slice(None)) + tap])
    crop = tuple(slice(p, f - p) for p, f in zip(pad, full))
    out = out[(slice(None), slice(None)) + crop]
    return out if b is None else out + b.reshape((1, -1) + (1,) * nd)


def pool_nd_ref(x, k, stride, pad, how):
    """max (-inf padding) or average (zero padding counted) over strided taps."""
    nd = x.ndim - 2
    fill = -np.inf if how == "max" else 0.0
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(p, p) for p in pad],
                constant_values=fill)
    size = [(xp.shape[2 + i] - k[i]) // stride[i] + 1 for i in range(nd)]
    taps = [xp[(Ellipsis,) + tuple(slice(t, t + s * (o - 1) + 1, s)
                                   for t, s, o in zip(tap, stride, size))]
            for tap in itertools.product(*map(range, k))]
    return np.max(taps, axis=0) if how == "max" else np.mean(taps, axis=0)


def adaptive_ref(x, size, how):
    """PyTorch's adaptive windows [floor(i*L/M), ceil((i+1)*L/M)) per axis."""
    nd = x.ndim - 2
    out = np.zeros(x.shape[:2] + tuple(size))
    for cell in itertools.product(*map(range, size)):
        sl = tuple(slice(i * n // m, -(-(i + 1) * n // m))
                   for i, n, m in zip(cell, x.shape[2:], size))
        win, axes = x[(Ellipsis,) + sl], tuple(range(2, 2 + nd))
        out[(Ellipsis,) + cell] = win.max(axes) if how == "max" else win.mean(axes)
    return out


def _conv_ref(m, x):
    p = numpy_params(m)
    return conv_nd_ref(x, p["weight"], p.get("bias"), m.stride, m.padding, m.dilation, m.groups)


def _convt_ref(m, x):
    p = numpy_params(m)
    return conv_transpose_nd_ref(x, p["weight"], p.get("bias"), m.stride, m.padding,
                                 m.output_padding, m.dilation, m.groups)


LAYERS = [
    ("conv3d", lambda: nn.Conv3d(4, 2, (2, 3, 1), stride=(1, 2, 1), padding=(1, 0, 1),
                                 dilation=(2, 1, 1), groups=2), _conv_ref, (2, 4, 3, 5, 2)),
    ("conv_transpose3d", lambda: nn.ConvTranspose3d(2, 4, (2, 1, 2), stride=(2, 1, 3),
                                                    padding=(1, 0, 0), output_padding=(1, 0, 2),
                                                    groups=2, dilation=(1, 1, 2)),
     _convt_ref, (2, 2, 2, 3, 2)),
    ("conv_transpose1d", lambda: nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1,
                                                    output_padding=1, groups=2, dilation=2),
     _convt_ref, (2, 4, 3)),
    ("max_pool3d", lambda: nn.MaxPool3d((2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0)),
     lambda m, x: pool_nd_ref(x, (2, 3, 2), (1, 2, 2), (1, 1, 0), "max"), (2, 2, 3, 5, 4)),
    ("avg_pool3d", lambda: nn.AvgPool3d((2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0)),
     lambda m, x: pool_nd_ref(x, (2, 3, 2), (1, 2, 2), (1, 1, 0), "avg"), (2, 2, 3, 5, 4)),
    ("adaptive_avg_pool3d", lambda: nn.AdaptiveAvgPool3d((2, None, 3)),
     lambda m, x: adaptive_ref(x, (2, 4, 3), "avg"), (2, 2, 3, 4, 5)),
    ("adaptive_max_pool3d", lambda: nn.AdaptiveMaxPool3d((2, 3, 2)),
     lambda m, x: adaptive_ref(x, (2, 3, 2), "max"), (2, 2, 3, 4, 5)),
]


@pytest.mark.parametrize("name,make,ref,shape", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_values_and_gradients(name, make, ref, shape, device):
    check_layer(make, ref, shape, dtypes=F32, device=device)


def test_max_pool3d_indices_unbatched_and_padding_same():
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    out, idx = F.max_pool3d(nbtorch.tensor(x), 2, return_indices=True)
    flat = x.reshape(2, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, idx.numpy().reshape(2, -1), 1),
                                  out.numpy().reshape(2, -1))
    assert out.shape == (2, 1, 2, 2)
    m = nn.Conv3d(2, 3, (3, 2, 3), padding="same", padding_mode="circular")
    assert m(nbtorch.randn(2, 4, 5, 3)).shape == (3, 4, 5, 3)


def test_conv_tbc_is_conv1d_over_time():
    x, w, b = nbtorch.randn(6, 2, 3), nbtorch.randn(3, 3, 4), nbtorch.randn(4)
    want = F.conv1d(x.permute(1, 2, 0), w.permute(2, 1, 0), b, padding=1).permute(2, 0, 1)
    np.testing.assert_allclose(F.conv_tbc(x, w, b, 1).numpy(), want.numpy(), rtol=1e-6)


def _message(fn):
    try:
        fn()
    except Exception as e:           # noqa: BLE001 -- the error itself is what is compared
        return type(e).__name__, str(e)
    return None


ERRORS = [
    lambda L, F: F.conv3d(L.randn(2, 3, 4), L.randn(2, 3, 1, 1, 1)),
    lambda L, F: F.conv3d(L.randn(1, 4, 3, 3, 3), L.randn(2, 3, 1, 1, 1)),
    lambda L, F: F.conv3d(L.randn(1, 3, 2, 3, 3), L.randn(2, 3, 3, 3, 3)),
    lambda L, F: F.conv_transpose3d(L.randn(1, 2, 2, 2, 2), L.randn(2, 2, 2, 2, 2), stride=2,
                                    output_padding=2),
    lambda L, F: F.max_pool3d(L.randn(4, 4), 2),
    lambda L, F: F.max_pool3d(L.randn(1, 2, 4, 4, 4), 2, padding=2),
    lambda L, F: F.max_pool3d(L.randn(1, 2, 4, 4, 4), 5),
    lambda L, F: F.max_pool3d(L.randn(1, 2, 4, 4, 4), 2, stride=0),
    lambda L, F: F.avg_pool3d(L.randn(1, 2, 3, 3, 3), 5),
    lambda L, F: F.avg_pool3d(L.randn(1, 2, 4, 4, 4), 2, divisor_override=0),
    lambda L, F: F.adaptive_avg_pool3d(L.randn(4, 4), 2),
    lambda L, F: F.adaptive_max_pool3d(L.randn(1, 2, 0, 4, 4), 2),
    lambda L, F: F.adaptive_avg_pool3d(L.randn(1, 2, 4, 4, 4), (2, 2)),
    lambda L, F: F.max_pool1d(L.randn(1, 2, 5), 2, padding=2),
    lambda L, F: F.conv_tbc(L.randn(5, 2, 3), L.randn(3, 2, 4), L.zeros(4)),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_pytorch(case):
    torch = pytest.importorskip("torch")
    want = _message(lambda: ERRORS[case](torch, torch.nn.functional))
    got = _message(lambda: ERRORS[case](nbtorch, F))
    assert want is not None and got == want


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    tF = torch.nn.functional
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 4, 5, 4, 6)), rng.standard_normal((4, 2, 3, 2, 3))
    b = rng.standard_normal(4)
    kw = dict(stride=(2, 1, 2), padding=(1, 0, 2), dilation=(1, 2, 1), groups=2)
    np.testing.assert_allclose(F.conv3d(nbtorch.tensor(x), nbtorch.tensor(w), nbtorch.tensor(b),
                                        **kw).numpy(),
                               tF.conv3d(torch.tensor(x), torch.tensor(w), torch.tensor(b),
                                         **kw).numpy(), atol=1e-12)
    kw = dict(stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2), groups=2,
              dilation=(1, 2, 1))
    np.testing.assert_allclose(
        F.conv_transpose3d(nbtorch.tensor(x), nbtorch.tensor(w), None, **kw).numpy(),
        tF.conv_transpose3d(torch.tensor(x), torch.tensor(w), None, **kw).numpy(), atol=1e-12)
    for args in [((2, 3, 2), (1, 2, 2), (1, 1, 0), (2, 1, 1), True), (3, 2, 1, 1, False)]:
        out, idx = F.max_pool3d(nbtorch.tensor(x), *args, return_indices=True)
        ref, ref_idx = tF.max_pool3d(torch.tensor(x), *args, return_indices=True)
        np.testing.assert_array_equal(out.numpy(), ref.numpy())
        np.testing.assert_array_equal(idx.numpy(), ref_idx.numpy())
    for args in [((2, 3, 2), (1, 2, 2), (1, 1, 0), True, False), (3, 2, 1, False, True, 5)]:
        np.testing.assert_allclose(F.avg_pool3d(nbtorch.tensor(x), *args).numpy(),
                                   tF.avg_pool3d(torch.tensor(x), *args).numpy(), atol=1e-12)
    out, idx = F.adaptive_max_pool3d(nbtorch.tensor(x), (3, 4, 4), True)
    ref, ref_idx = tF.adaptive_max_pool3d(torch.tensor(x), (3, 4, 4), True)
    np.testing.assert_array_equal(idx.numpy(), ref_idx.numpy())
    np.testing.assert_allclose(F.adaptive_avg_pool3d(nbtorch.tensor(x), (3, None, 4)).numpy(),
                               tF.adaptive_avg_pool3d(torch.tensor(x), (3, None, 4)).numpy(),
                               atol=1e-12)
