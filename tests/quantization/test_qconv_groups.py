"""Grouped and depthwise quantized Conv2d: integers equal to PyTorch's (fbgemm) for
per-tensor and per-channel weights."""
import warnings

import numpy as np
import pytest

import nbtorch


def _conv(t, w, b, groups, per_channel, stride, x, relu):
    cls = t.ao.nn.intrinsic.quantized.ConvReLU2d if relu else t.ao.nn.quantized.Conv2d
    m = cls(w.shape[1] * groups, w.shape[0], w.shape[2], stride=stride, padding=1,
            groups=groups)
    wt = t.from_numpy(w)
    if per_channel:
        scales = t.from_numpy(np.abs(w).reshape(w.shape[0], -1).max(1).astype(np.float64) / 127)
        qw = t.quantize_per_channel(wt, scales, t.zeros(w.shape[0], dtype=t.long), 0, t.qint8)
    else:
        qw = t.quantize_per_tensor(wt, float(np.abs(w).max() / 127), 0, t.qint8)
    m.set_weight_bias(qw, t.from_numpy(b))
    m.scale, m.zero_point = 0.05, 70
    qx = t.quantize_per_tensor(t.from_numpy(x), 0.03, 100, t.quint8)
    return m(qx).int_repr().numpy()


@pytest.mark.parametrize("cin,cout,groups", [(4, 6, 2), (6, 6, 6), (3, 6, 3)])
@pytest.mark.parametrize("per_channel", [False, True])
def test_grouped_conv_matches_pytorch(cin, cout, groups, per_channel):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(cin + cout + groups)
    w = rng.standard_normal((cout, cin // groups, 3, 3)).astype(np.float32) * 0.3
    b = rng.standard_normal(cout).astype(np.float32) * 0.1
    x = rng.standard_normal((2, cin, 7, 6)).astype(np.float32)
    for stride, relu in ((1, False), (2, True)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = _conv(torch, w, b, groups, per_channel, stride, x, relu)
        got = _conv(nbtorch, w, b, groups, per_channel, stride, x, relu)
        np.testing.assert_array_equal(got, want)
