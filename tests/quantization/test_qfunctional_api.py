"""torch.ao.nn.quantized.functional with PyTorch's signatures (quantized weights in, not
nbtorch's packed ones): integers and qparams against PyTorch."""
import warnings

import numpy as np
import pytest

import nbtorch


def _inputs(t):
    rng = np.random.default_rng(0)
    x4 = t.quantize_per_tensor(t.from_numpy(rng.standard_normal((2, 4, 6, 5)).astype(
        np.float32)), 0.04, 100, t.quint8)
    x3 = t.quantize_per_tensor(t.from_numpy(rng.standard_normal((2, 4, 9)).astype(
        np.float32)), 0.04, 100, t.quint8)
    x2 = t.quantize_per_tensor(t.from_numpy(rng.standard_normal((3, 8)).astype(
        np.float32)), 0.05, 120, t.quint8)
    w4 = t.quantize_per_tensor(t.from_numpy(rng.standard_normal((6, 2, 3, 3)).astype(
        np.float32) * 0.2), 0.005, 0, t.qint8)
    w3 = t.quantize_per_channel(t.from_numpy(rng.standard_normal((6, 4, 3)).astype(
        np.float32) * 0.2), t.tensor([0.004] * 3 + [0.006] * 3, dtype=t.float64),
        t.zeros(6, dtype=t.long), 0, t.qint8)
    w2 = t.quantize_per_tensor(t.from_numpy(rng.standard_normal((5, 8)).astype(
        np.float32) * 0.3), 0.006, 0, t.qint8)
    b = t.from_numpy(rng.standard_normal(6).astype(np.float32) * 0.1)
    return x4, x3, x2, w4, w3, w2, b


CASES = {
    "linear": lambda f, x4, x3, x2, w4, w3, w2, b: f.linear(x2, w2, b[:5], 0.1, 60),
    "linear_input_qparams": lambda f, x4, x3, x2, w4, w3, w2, b: f.linear(x2, w2),
    "conv2d_groups": lambda f, x4, x3, x2, w4, w3, w2, b: f.conv2d(
        x4, w4, b, stride=2, padding=1, groups=2, scale=0.08, zero_point=40),
    "conv1d": lambda f, x4, x3, x2, w4, w3, w2, b: f.conv1d(x3, w3, b, padding=1,
                                                           scale=0.07, zero_point=50),
    "max_pool1d": lambda f, x4, x3, x2, w4, w3, w2, b: f.max_pool1d(x3, 3, 2, 1),
    "upsample_nearest": lambda f, x4, x3, x2, w4, w3, w2, b: f.upsample_nearest(
        x4, scale_factor=2),
    "interpolate_size": lambda f, x4, x3, x2, w4, w3, w2, b: f.interpolate(x4, size=(7, 3)),
    "threshold": lambda f, x4, x3, x2, w4, w3, w2, b: f.threshold(x4, 0.3, -0.5),
    "celu": lambda f, x4, x3, x2, w4, w3, w2, b: f.celu(x4, 0.03, 90, 1.5),
    "hardtanh": lambda f, x4, x3, x2, w4, w3, w2, b: f.hardtanh(x4, -0.5, 0.7),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_functional_matches_pytorch(name):
    torch = pytest.importorskip("torch")
    results = []
    for t in (torch, nbtorch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = CASES[name](t.ao.nn.quantized.functional, *_inputs(t))
        results.append((tuple(r.shape), r.int_repr().numpy().astype(int), r.q_scale(),
                        r.q_zero_point()))
    (ts, ti, tsc, tz), (ns, ni, nsc, nz) = results
    assert (ns, nsc, nz) == (ts, tsc, tz)
    assert np.abs(ni - ti).max() <= (1 if name == "celu" else 0)   # exp's last bit
