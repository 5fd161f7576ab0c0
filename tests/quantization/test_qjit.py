"""jit.trace / jit.save / jit.load of converted quantized models (static and dynamic):
one graph node per quantized layer, outputs bit-equal to the eager quantized model,
and a saved archive that a fresh process loads without the model's class."""
import subprocess
import sys
import textwrap

import numpy as np

import nbtorch as torch
import nbtorch.ao.nn.quantized as nnq
from nbtorch import nn
from nbtorch.ao.nn.quantized import ops
from nbtorch.ao.quantization import (DeQuantStub, QuantStub, convert, fuse_modules,
                                     get_default_qconfig, prepare, quantize_dynamic)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = QuantStub()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(4, 4, 3, groups=2)
        self.fc = nn.Linear(4 * 4 * 4, 5)
        self.dequant = DeQuantStub()

    def forward(self, x):
        x = self.relu(self.conv(self.quant(x)))
        x = self.conv2(x).flatten(1)
        return self.dequant(self.fc(x))


class Residual(nn.Module):
    """Unfused ReLU, pooling and a FloatFunctional add on quantized values."""

    def __init__(self):
        super().__init__()
        self.quant, self.dequant = QuantStub(), DeQuantStub()
        self.conv, self.relu, self.pool = nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), \
            nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.skip = nnq.FloatFunctional()
        self.gap, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(4, 3)

    def forward(self, x):
        x = self.pool(self.relu(self.conv(self.quant(x))))
        x = self.skip.add(x, self.conv2(x))
        return self.dequant(self.fc(self.gap(x).flatten(1)))


def _calibrated(m, shape):
    m.eval().qconfig = get_default_qconfig("x86")
    p = prepare(m)
    for _ in range(3):
        p(torch.randn(*shape))
    return convert(p)


def _residual():
    torch.manual_seed(2)
    return _calibrated(Residual(), (8, 2, 8, 8))


def _static():
    torch.manual_seed(0)
    m = Net().eval()
    m = fuse_modules(m, [["conv", "relu"]])
    m.qconfig = get_default_qconfig("x86")
    p = prepare(m)
    for _ in range(3):
        p(torch.randn(8, 2, 6, 6))
    return convert(p)


def _dynamic():
    torch.manual_seed(1)
    m = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
    return quantize_dynamic(m, {nn.Linear}, dtype=torch.qint8)


def _targets(traced):
    return [n.target for n in traced.graph.nodes if n.op == "call_function"]


def _same(a, b):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_trace_static_bit_equal():
    q = _static()
    x = torch.randn(3, 2, 6, 6)
    traced = torch.jit.trace(q, x)
    targets = _targets(traced)
    assert ops.quantized_conv2d_relu in targets and ops.quantized_conv2d in targets and \
        ops.quantized_linear in targets
    for batch in (3, 5):                 # follows the batch size
        x = torch.randn(batch, 2, 6, 6)
        _same(traced(x), q(x))


def test_trace_dynamic_bit_equal():
    q = _dynamic()
    traced = torch.jit.trace(q, torch.randn(4, 6))
    assert _targets(traced).count(ops.quantized_linear_dynamic) == 2
    x = torch.randn(7, 6) * 3
    _same(traced(x), q(x))


_LOAD = textwrap.dedent("""
    import sys, numpy as np, nbtorch as torch
    m = torch.jit.load(sys.argv[1])
    x = torch.from_numpy(np.load(sys.argv[2]))
    np.save(sys.argv[3], m(x).numpy())
""")


def _round_trip(q, x, tmp_path):
    """Save the trace, load it in a fresh process (no model class) and run it on x."""
    traced = torch.jit.trace(q, x)
    path = tmp_path / "q.pt"
    torch.jit.save(traced, path)
    loaded = torch.jit.load(path)
    _same(loaded(x), q(x))
    np.save(tmp_path / "x.npy", x.numpy())
    subprocess.run([sys.executable, "-c", _LOAD, str(path), str(tmp_path / "x.npy"),
                    str(tmp_path / "y.npy")], check=True, timeout=120)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), q(x).numpy())
    return loaded


def test_save_load_static(tmp_path):
    q = _static()
    loaded = _round_trip(q, torch.randn(2, 2, 6, 6), tmp_path)
    consts = [t for n, t in loaded.named_buffers() if n.startswith("_tensor_constant")
              and t.is_quantized]           # the graph's weights: stored quantized
    assert len(consts) == 3 and all(t.dtype is torch.qint8 for t in consts)


def test_save_load_dynamic(tmp_path):
    _round_trip(_dynamic(), torch.randn(5, 6), tmp_path)


def test_residual_trace_save_load(tmp_path):
    q = _residual()
    traced = torch.jit.trace(q, torch.randn(2, 2, 8, 8))
    assert ops.quantized_add in _targets(traced)
    x = torch.randn(3, 2, 8, 8)
    _same(traced(x), q(x))
    torch.jit.save(traced, tmp_path / "r.pt")
    _same(torch.jit.load(tmp_path / "r.pt")(x), q(x))


def test_load_refuses_other_quantized_names(tmp_path):
    from nbtorch.jit._save import _resolve_target
    assert _resolve_target("nbtorch.ao.nn.quantized.ops.quantized_linear") is \
        ops.quantized_linear
    assert _resolve_target("nbtorch.ao.nn.quantized.ops.qF") is None
    assert _resolve_target("nbtorch.ao.nn.quantized.functional.PackedWeight") is None


class _Wrap(nn.Module):
    """A quantized module between a quantize_per_tensor and a dequantize."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(torch.quantize_per_tensor(x, 0.05, 128, torch.quint8)).dequantize()


def _layers():
    torch.manual_seed(4)
    conv1d = nnq.Conv1d(4, 3, 3, padding=1)
    w = torch.quantize_per_tensor(torch.randn(3, 4, 3) * 0.2, 0.01, 0, torch.qint8)
    conv1d.set_weight_bias(w, torch.randn(3))
    bn = nnq.BatchNorm2d(3)
    bn.weight.data, bn.bias.data = torch.rand(3) + 0.5, torch.randn(3)
    bn.running_mean, bn.running_var = torch.randn(3) * 0.1, torch.rand(3) + 0.5
    bn.scale, bn.zero_point = torch.tensor([0.06]), torch.tensor([120])
    return [(nnq.Hardswish(0.04, 10), (2, 4, 5, 5)), (nnq.ELU(0.05, 100), (2, 4, 5, 5)),
            (nnq.LeakyReLU(0.05, 128, 0.1), (2, 4, 5, 5)), (conv1d, (2, 4, 7)),
            (nnq.ReLU(), (2, 3, 4, 4)), (nnq.ReLU6(), (2, 3, 4, 4)),
            (nnq.MaxPool2d(2, 2, 1), (2, 3, 5, 5)), (bn, (2, 3, 4, 4))]


def test_layers_trace_save_load(tmp_path):
    for i, (layer, shape) in enumerate(_layers()):
        m = _Wrap(layer).eval()
        x = torch.randn(*shape)
        traced = torch.jit.trace(m, x)
        assert any(getattr(t, "__module__", "") == ops.__name__ for t in _targets(traced))
        torch.jit.save(traced, tmp_path / f"{i}.pt")
        _same(torch.jit.load(tmp_path / f"{i}.pt")(x), m(x))
