"""Workflows end to end against PyTorch: QAT of a small CNN (fused conv-bn-relu, linear)
step by step and after convert; dynamically quantized RNN checkpoints."""
import io
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch import nn
import nbtorch.ao.quantization as tq


def _net(t):
    q = t.ao.quantization

    class M(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = q.QuantStub(), q.DeQuantStub()
            self.conv, self.bn, self.relu = t.nn.Conv2d(1, 4, 3, padding=1), \
                t.nn.BatchNorm2d(4), t.nn.ReLU()
            self.fc = t.nn.Linear(4 * 6 * 6, 3)

        def forward(self, x):
            return self.dequant(self.fc(self.relu(self.bn(self.conv(self.quant(x)))).flatten(1)))
    return M()


def _qat(t, sd, x, y):
    m = _net(t)
    m.load_state_dict({k: t.from_numpy(v.copy()) for k, v in sd.items()})
    m.train()
    q = t.ao.quantization
    m.qconfig = q.get_default_qat_qconfig("x86")
    p = q.prepare_qat(q.fuse_modules_qat(m, [["conv", "bn", "relu"]]))
    params = list(p.parameters())
    outs = []
    for _ in range(3):
        for w in params:
            w.grad = None
        o = p(t.from_numpy(x))
        t.nn.functional.cross_entropy(o, t.from_numpy(y)).backward()
        with t.no_grad():           # plain SGD (torch.optim's first use imports dynamo: 2 s)
            for w in params:
                w -= 0.05 * w.grad
        outs.append(o.detach().numpy().copy())
    p.eval()
    c = q.convert(p)
    return (outs, list(p.state_dict()), c(t.from_numpy(x)).numpy(),
            c.conv.weight().int_repr().numpy(), c.fc.weight().int_repr().numpy(),
            (c.conv.scale, c.conv.zero_point, c.fc.zero_point), c.fc.scale)


def test_qat_cnn_matches_pytorch():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    sd = {k: v.detach().numpy().copy() for k, v in _net(torch).state_dict().items()}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 1, 6, 6)).astype(np.float32)
    y = np.array([0, 1, 2, 0] * 4)
    want, got = _qat(torch, sd, x, y), _qat(nbtorch, sd, x, y)
    for a, b in zip(want[0], got[0]):               # fake-quantized training outputs
        np.testing.assert_allclose(b, a, atol=1e-5)
    assert got[1] == want[1]                        # QAT state-dict keys, in order
    np.testing.assert_array_equal(got[3], want[3])  # int8 weights
    np.testing.assert_array_equal(got[4], want[4])
    assert got[5] == want[5] and got[6] == pytest.approx(want[6], rel=1e-6)
    assert np.abs(got[2] - want[2]).max() <= want[6] * 1.001    # within one output step


def test_dynamic_rnn_state_dict_round_trip():
    def make(seed):
        nbtorch.manual_seed(seed)
        return tq.quantize_dynamic(nn.Sequential(
            nn.LSTM(3, 4, num_layers=2, bidirectional=True), nn.LSTMCell(3, 4),
            nn.GRUCell(3, 4)))
    a, b = make(0), make(1)
    buf = io.BytesIO()
    nbtorch.save(a.state_dict(), buf)
    buf.seek(0)
    b.load_state_dict(nbtorch.load(buf))
    assert "0._all_weight_values.3.param" in a.state_dict()
    assert "1._packed_weight_ih" in a.state_dict()
    x, xc = nbtorch.randn(5, 2, 3), nbtorch.randn(2, 3)
    assert a[0](x)[0].tolist() == b[0](x)[0].tolist()
    assert a[1](xc)[0].tolist() == b[1](xc)[0].tolist()
    assert a[2](xc).tolist() == b[2](xc).tolist()
    with pytest.raises(RuntimeError, match="Missing key"):
        b.load_state_dict({})


def test_dynamic_float16_matches_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LSTM(3, 5, num_layers=2))
    nm = nn.Sequential(nn.Linear(4, 3), nn.LSTM(3, 5, num_layers=2))
    nm.load_state_dict({k: nbtorch.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    tqm = torch.ao.quantization.quantize_dynamic(tm, {torch.nn.Linear, torch.nn.LSTM},
                                                 dtype=torch.float16)
    nqm = tq.quantize_dynamic(nm, {nn.Linear, nn.LSTM}, dtype=nbtorch.float16)
    assert repr(nqm) == repr(tqm)
    x = np.random.default_rng(0).standard_normal((6, 2, 4)).astype(np.float32)
    np.testing.assert_allclose(nqm(nbtorch.from_numpy(x))[0].numpy(),
                               tqm(torch.from_numpy(x))[0].detach().numpy(), atol=1e-6)
    torch.save(tqm[0].state_dict(), tmp_path / "fp16.pt")      # PyTorch's checkpoint
    lin = nbtorch.ao.nn.quantized.dynamic.Linear(4, 3, dtype=nbtorch.float16)
    lin.load_state_dict(nbtorch.load(tmp_path / "fp16.pt"))
    np.testing.assert_allclose(lin(nbtorch.from_numpy(x[0])).numpy(),
                               tqm[0](torch.from_numpy(x[0])).detach().numpy(), atol=1e-6)


def test_qat_prepared_state_dicts_cross_load(tmp_path):
    """A QAT checkpoint (observer and fake-quantize buffers included) loads both ways:
    PyTorch's loader reads the observers' state-dict versions."""
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore")
    prepared = []
    for t in (torch, nbtorch):
        m = _net(t).train()
        m.qconfig = t.ao.quantization.get_default_qat_qconfig("x86")
        p = t.ao.quantization.prepare_qat(
            t.ao.quantization.fuse_modules_qat(m, [["conv", "bn", "relu"]]))
        p(t.randn(4, 1, 6, 6))
        prepared.append(p)
    tp, np_ = prepared
    tsd, nsd = tp.state_dict(), np_.state_dict()
    assert [(k, str(v.dtype), tuple(v.shape)) for k, v in tsd.items()] == \
        [(k, str(v.dtype), tuple(v.shape)) for k, v in nsd.items()]
    torch.save(tsd, tmp_path / "t.pt")
    np_.load_state_dict(nbtorch.load(tmp_path / "t.pt"))
    nbtorch.save(np_.state_dict(), tmp_path / "n.pt")
    tp.load_state_dict(torch.load(tmp_path / "n.pt"))


def _mobilenet_like(t):
    q = t.ao.quantization

    class Block(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = t.nn.Sequential(
                t.nn.Conv2d(4, 8, 1, bias=False), t.nn.BatchNorm2d(8), t.nn.ReLU(),
                t.nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False), t.nn.BatchNorm2d(8),
                t.nn.ReLU(), t.nn.Conv2d(8, 4, 1, bias=False), t.nn.BatchNorm2d(4))
            self.skip = t.ao.nn.quantized.FloatFunctional()

        def forward(self, x):
            return self.skip.add(x, self.conv(x))

    class M(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = q.QuantStub(), q.DeQuantStub()
            self.stem = t.nn.Sequential(t.nn.Conv2d(3, 4, 3, padding=1, bias=False),
                                        t.nn.BatchNorm2d(4), t.nn.ReLU())
            self.block, self.pool = Block(), t.nn.AdaptiveAvgPool2d(1)
            self.drop, self.fc, self.act = t.nn.Dropout(0.0), t.nn.Linear(4, 5), t.nn.Sigmoid()

        def forward(self, x):
            x = self.pool(self.block(self.stem(self.quant(x))))
            return self.dequant(self.act(self.fc(self.drop(x.flatten(1)))))
    return M()


def test_qat_mobilenet_like_matches_pytorch():
    """Depthwise conv-bn-relu, a FloatFunctional skip add, Dropout (left unobserved, as
    PyTorch does), a Sigmoid (fixed-qparams fake-quantize in QAT), freeze_bn_stats and
    disable_observer mid-training: every step's output as PyTorch's, and after convert."""
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    sd = {k: v.detach().numpy().copy() for k, v in _mobilenet_like(torch).state_dict().items()}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 3, 8, 8)).astype(np.float32)
    y = rng.uniform(size=(8, 5)).astype(np.float32)
    groups = [["stem.0", "stem.1", "stem.2"], ["block.conv.0", "block.conv.1", "block.conv.2"],
              ["block.conv.3", "block.conv.4", "block.conv.5"], ["block.conv.6", "block.conv.7"]]
    runs = []
    for t in (torch, nbtorch):
        q = t.ao.quantization
        m = _mobilenet_like(t)
        m.load_state_dict({k: t.from_numpy(v.copy()) for k, v in sd.items()})
        m.train()
        m.qconfig = q.get_default_qat_qconfig("x86")
        p = q.prepare_qat(q.fuse_modules_qat(m, groups))
        params, outs = list(p.parameters()), []
        for step in range(3):
            if step == 2:
                p.apply(q.disable_observer)
                p.apply(t.ao.nn.intrinsic.qat.freeze_bn_stats)
            for w in params:
                w.grad = None
            o = p(t.from_numpy(x))
            ((o - t.from_numpy(y)) ** 2).mean().backward()
            with t.no_grad():
                for w in params:
                    w -= 0.05 * w.grad
            outs.append(o.detach().numpy().copy())
        p.eval()
        c = q.convert(p)
        runs.append((outs, c(t.from_numpy(x)).numpy(), type(c.act).__name__,
                     hasattr(c.act, "activation_post_process")))
    (t_outs, t_final, *t_rest), (n_outs, n_final, *n_rest) = runs
    for a, b in zip(t_outs, n_outs):
        np.testing.assert_allclose(b, a, atol=1e-6)
    np.testing.assert_allclose(n_final, t_final, atol=1e-6)
    assert n_rest == t_rest == ["Sigmoid", False]


def test_dynamic_rnn_cell_linear_relu_and_embeddings_match_pytorch():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)

    def build(t):
        return t.nn.Sequential(t.nn.RNNCell(3, 4, nonlinearity="relu"),
                               t.ao.nn.intrinsic.LinearReLU(t.nn.Linear(4, 2), t.nn.ReLU()),
                               t.nn.RNNCell(2, 3))
    tm, nm = build(torch), build(nbtorch)
    nm.load_state_dict({k: nbtorch.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    spec = lambda t: {t.nn.RNNCell, t.ao.nn.intrinsic.LinearReLU}    # noqa: E731
    tq_, nq_ = (torch.ao.quantization.quantize_dynamic(tm, spec(torch)),
                tq.quantize_dynamic(nm, spec(nbtorch)))
    assert repr(nq_) == repr(tq_)
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(nq_(nbtorch.from_numpy(x)).numpy(),
                               tq_(torch.from_numpy(x)).numpy(), atol=1e-6)
    # dtype=torch.quint8: embedding tables with float qparams by default
    emb = [t.ao.quantization.quantize_dynamic(t.nn.Sequential(t.nn.Embedding(7, 3)),
                                              dtype=t.quint8) for t in (torch, nbtorch)]
    assert repr(emb[1]) == repr(emb[0])
