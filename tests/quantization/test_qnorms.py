"""Quantized LayerNorm / GroupNorm / InstanceNorm and Softmax against PyTorch: reprs,
state-dict keys and dtypes, output qparams and integers (within one step where the
float normalization's last bit differs)."""
import warnings

import numpy as np
import pytest

import nbtorch


def _modules(t, rng):
    P = t.nn.Parameter
    q = t.ao.nn.quantized

    def v(*shape):
        return P(t.from_numpy(rng.standard_normal(shape).astype(np.float32)))
    return {
        "layer_norm": q.LayerNorm([5, 6], v(5, 6), v(5, 6), 0.05, 120),
        "group_norm": q.GroupNorm(2, 8, v(8), v(8), 0.05, 120),
        "instance_norm": q.InstanceNorm2d(8, v(8), v(8), 0.05, 120),
        "softmax": q.Softmax(1, 0.004, 0),
    }


@pytest.mark.parametrize("name", ["layer_norm", "group_norm", "instance_norm", "softmax"])
def test_norms_match_pytorch(name):
    torch = pytest.importorskip("torch")
    x = (np.random.default_rng(0).standard_normal((4, 8, 5, 6)) * 2 + 0.5).astype(np.float32)
    results = []
    for t in (torch, nbtorch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = _modules(t, np.random.default_rng(1))[name]
            q = t.quantize_per_tensor(t.from_numpy(x), 0.03, 100, t.quint8)
            with t.no_grad():
                r = m(q)
        sd = [(k, str(v.dtype), tuple(v.shape)) for k, v in m.state_dict().items()]
        results.append((repr(m), sd, r.q_scale(), r.q_zero_point(),
                        r.int_repr().numpy().astype(int)))
    want, got = results
    assert got[:4] == want[:4]
    assert np.abs(got[4] - want[4]).max() <= 1 and np.mean(got[4] == want[4]) > 0.99


def test_convert_maps_norms():
    tq, nn = nbtorch.ao.quantization, nbtorch.nn
    m = nn.Sequential(tq.QuantStub(), nn.GroupNorm(2, 4), nn.InstanceNorm2d(4),
                      nn.LayerNorm([3, 3]), tq.DeQuantStub()).eval()
    m.qconfig = tq.default_qconfig
    p = tq.prepare(m)
    p(nbtorch.randn(2, 4, 3, 3))
    c = tq.convert(p)
    assert [type(c[i]).__name__ for i in (1, 2, 3)] == ["GroupNorm", "InstanceNorm2d",
                                                        "LayerNorm"]
    assert c[1]._get_name() == "QuantizedGroupNorm"
    assert c(nbtorch.randn(2, 4, 3, 3)).shape == (2, 4, 3, 3)


def _zoo(t):
    q = t.ao.quantization
    return t.nn.Sequential(
        q.QuantStub(), t.nn.Conv2d(3, 4, 3), t.nn.BatchNorm2d(4), t.nn.Hardswish(),
        t.nn.LeakyReLU(0.2), t.nn.ELU(0.5), t.nn.Dropout(0.1), t.nn.GroupNorm(2, 4),
        t.nn.InstanceNorm2d(4), t.nn.LayerNorm([4, 4]), t.nn.ReLU6(), t.nn.Flatten(),
        t.nn.Linear(64, 3), q.DeQuantStub())


def test_converted_zoo_matches_pytorch_layout():
    """A model of many module kinds: the converted model's repr (scales masked: they
    come from float observers an ulp apart), state-dict keys, dtypes and shapes, and
    outputs as PyTorch's."""
    import re
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    sd = {k: v.detach().numpy().copy() for k, v in _zoo(torch).state_dict().items()}
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)
    runs = []
    for t in (torch, nbtorch):
        m = _zoo(t)
        m.load_state_dict({k: t.from_numpy(v.copy()) for k, v in sd.items()})
        m.eval()
        m.qconfig = t.ao.quantization.default_qconfig
        p = t.ao.quantization.prepare(m)
        p(t.from_numpy(x))
        c = t.ao.quantization.convert(p)
        layout = [(k, str(v.dtype), tuple(getattr(v, "shape", ())))
                  for k, v in c.state_dict().items() if hasattr(v, "shape")]
        runs.append((re.sub(r"scale=[0-9.e-]+", "scale=S", repr(c)), layout,
                     c(t.from_numpy(x)).numpy()))
    (trepr, tlayout, tout), (nrepr, nlayout, nout) = runs
    assert nrepr == trepr and nlayout == tlayout
    np.testing.assert_allclose(nout, tout, atol=1e-6)
