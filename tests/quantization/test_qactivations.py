"""Quantized activations (modules and the float API on quantized tensors) against
PyTorch: same output qparams; integers equal, or within one step where PyTorch's
vectorised exp/tanh round their last bit differently."""
import warnings

import numpy as np
import pytest

import nbtorch

CASES = {   # name: (fn(t, q), max integer difference allowed)
    "hardswish": (lambda t, q: t.ao.nn.quantized.Hardswish(0.02, 60)(q), 0),
    "elu": (lambda t, q: t.ao.nn.quantized.ELU(0.03, 90, 0.7)(q), 1),
    "leaky_module": (lambda t, q: t.ao.nn.quantized.LeakyReLU(0.04, 20, 0.1)(q), 0),
    "leaky_float_api": (lambda t, q: t.nn.functional.leaky_relu(q, 0.2), 0),
    "sigmoid": (lambda t, q: t.nn.Sigmoid()(q), 1),
    "tanh": (lambda t, q: t.nn.functional.tanh(q), 1),
    "hardsigmoid": (lambda t, q: t.nn.functional.hardsigmoid(q), 0),
    "hardtanh": (lambda t, q: t.nn.Hardtanh(-0.7, 1.3)(q), 0),
    "relu6": (lambda t, q: t.nn.functional.relu6(q), 0),
    "relu6_module": (lambda t, q: t.ao.nn.quantized.ReLU6()(q), 0),
}


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_activation_matches_pytorch(name, dtype):
    torch = pytest.importorskip("torch")
    fn, tol = CASES[name]
    x = (np.random.default_rng(0).standard_normal(517) * 3).astype(np.float32)
    zp = 110 if dtype == "quint8" else -10
    results = []
    for t in (torch, nbtorch):
        q = t.quantize_per_tensor(t.from_numpy(x), 0.037, zp, getattr(t, dtype))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(t, q)
        results.append((r.int_repr().numpy().astype(int), r.q_scale(), r.q_zero_point()))
    (want, ws, wz), (got, gs, gz) = results
    assert (gs, gz) == (ws, wz)
    assert np.abs(got - want).max() <= tol
    assert np.mean(got == want) > 0.99


def test_float_api_refuses_what_pytorch_refuses():
    q = nbtorch.quantize_per_tensor(nbtorch.randn(4), 0.1, 3, nbtorch.quint8)
    with pytest.raises(NotImplementedError, match="QuantizedCPU"):
        nbtorch.nn.functional.hardswish(q)


def test_convert_maps_activations_and_dropout():
    tq = nbtorch.ao.quantization
    nn = nbtorch.nn
    m = nn.Sequential(tq.QuantStub(), nn.Hardswish(), nn.LeakyReLU(0.1), nn.ELU(),
                      nn.Dropout(0.5), tq.DeQuantStub()).eval()
    m.qconfig = tq.default_qconfig
    p = tq.prepare(m)
    p(nbtorch.randn(4, 6))
    c = tq.convert(p)
    assert [type(c[i]).__name__ for i in range(1, 5)] == ["Hardswish", "LeakyReLU", "ELU",
                                                          "Dropout"]
    assert "1.scale" in c.state_dict() and c(nbtorch.randn(4, 6)).shape == (4, 6)
