"""Observers, qconfigs, fusion and the three workflows (dynamic, static, QAT): against
NumPy formulas, PyTorch where installed, and the errors the issue lists."""
import io
import warnings

import numpy as np
import pytest

import nbtorch
import nbtorch.ao.quantization as nq
from nbtorch import nn

F32 = np.float32


def test_alias_module_and_top_level_names():
    import nbtorch.quantization as alias
    assert alias.MinMaxObserver is nq.MinMaxObserver and alias.prepare is nq.prepare
    assert repr(nbtorch.qint8) == "torch.qint8" and not nbtorch.qint8.is_floating_point


def test_minmax_qparams_formula():
    obs = nq.MinMaxObserver()
    obs(nbtorch.tensor([-1.0, 3.0]))
    scale, zp = obs.calculate_qparams()
    expect = F32(4.0) / F32(255)
    assert scale.tolist() == [float(expect)] and zp.tolist() == [int(np.rint(1 / expect))]
    sym = nq.MinMaxObserver(dtype=nbtorch.qint8, qscheme=nbtorch.per_tensor_symmetric)
    sym(nbtorch.tensor([-1.0, 3.0]))
    s, z = sym.calculate_qparams()
    assert s.tolist() == [float(F32(3.0) / F32(127.5))] and z.tolist() == [0]


def test_qconfig_refuses_instances():
    with pytest.raises(ValueError, match="observer instance"):
        nq.QConfig(activation=nq.MinMaxObserver(), weight=nq.MinMaxObserver)


def _observers(lib, q):
    return [(q.MinMaxObserver, {}),
            (q.MinMaxObserver, dict(dtype=lib.qint8, qscheme=lib.per_tensor_symmetric)),
            (q.MovingAverageMinMaxObserver, dict(averaging_constant=0.3)),
            (q.PerChannelMinMaxObserver, dict(dtype=lib.qint8,
                                              qscheme=lib.per_channel_symmetric)),
            (q.PerChannelMinMaxObserver, dict(ch_axis=1)),
            (q.HistogramObserver, {}), (q.HistogramObserver, dict(reduce_range=True)),
            (q.HistogramObserver, dict(dtype=lib.qint8, qscheme=lib.per_tensor_symmetric))]


def test_observers_against_pytorch():
    torch = pytest.importorskip("torch")
    import torch.ao.quantization as tq
    warnings.filterwarnings("ignore")
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal((32, 20)).astype(F32) * (1 + i) + i * 0.3
               for i in range(4)]
    for (tcls, tkw), (ncls, nkw) in zip(_observers(torch, tq), _observers(nbtorch, nq)):
        to, no = tcls(**tkw), ncls(**nkw)
        for b in batches:
            to(torch.tensor(b))
            no(nbtorch.tensor(b))
        (ts, tz), (ns, nz) = to.calculate_qparams(), no.calculate_qparams()
        np.testing.assert_array_equal(ns._host(), ts.numpy(), err_msg=ncls.__name__)
        np.testing.assert_array_equal(nz._host(), tz.numpy(), err_msg=ncls.__name__)


def test_fake_quantize_straight_through():
    x = nbtorch.tensor([-1.0, 0.04, 0.26, 9.0], requires_grad=True)
    y = nq.fake_quantize_per_tensor_affine(x, 0.1, 10, 0, 50)
    y.sum().backward()
    assert np.allclose(y.tolist(), [-1.0, 0.0, 0.3, 4.0])
    assert x.grad.tolist() == [1.0, 1.0, 1.0, 0.0]        # clipped values get no gradient


def test_fake_quantize_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(1000) * 3).astype(F32)
    tx, nx = torch.tensor(x, requires_grad=True), nbtorch.tensor(x, requires_grad=True)
    ty = torch.fake_quantize_per_tensor_affine(tx, 0.05, 10, 0, 127)
    ny = nq.fake_quantize_per_tensor_affine(nx, 0.05, 10, 0, 127)
    ty.sum().backward()
    ny.sum().backward()
    np.testing.assert_array_equal(ny.detach()._host(), ty.detach().numpy())
    np.testing.assert_array_equal(nx.grad._host(), tx.grad.numpy())


def _net(lib, q):
    """conv-bn-relu-pool-linear-relu-linear between quant/dequant stubs, in `lib`."""
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = q.QuantStub(), q.DeQuantStub()
            self.conv = lib.nn.Conv2d(1, 8, 3, padding=1)
            self.bn = lib.nn.BatchNorm2d(8)
            self.relu = lib.nn.ReLU()
            self.pool = lib.nn.MaxPool2d(2)
            self.fc = lib.nn.Linear(8 * 4 * 4, 10)
            self.relu2 = lib.nn.ReLU()
            self.fc2 = lib.nn.Linear(10, 5)

        def forward(self, x):
            x = self.pool(self.relu(self.bn(self.conv(self.quant(x)))))
            return self.dequant(self.fc2(self.relu2(self.fc(x.flatten(1)))))
    return Net().eval()


def _static(lib, q, model, x):
    model.qconfig = q.get_default_qconfig("x86")
    fused = q.fuse_modules(model, [["conv", "bn", "relu"], ["fc", "relu2"]])
    prepared = q.prepare(fused)
    for i in range(4):
        prepared(lib.tensor(x[i * 16:(i + 1) * 16]))
    return q.convert(prepared)


def _state(rng, sd):
    sd = {k: v.detach().numpy() for k, v in sd.items()}
    sd["bn.running_mean"] = rng.standard_normal(8).astype(F32) * 0.1
    sd["bn.running_var"] = rng.uniform(0.5, 2, 8).astype(F32)
    return sd


def test_static_quantization_matches_pytorch():
    torch = pytest.importorskip("torch")
    import torch.ao.quantization as tq
    warnings.filterwarnings("ignore")
    torch.backends.quantized.engine = "x86"
    torch.manual_seed(0)
    tm = _net(torch, tq)
    rng = np.random.default_rng(0)
    sd = _state(rng, tm.state_dict())
    tm.load_state_dict({k: torch.tensor(v) for k, v in sd.items()})
    nm = _net(nbtorch, nq)
    nm.load_state_dict({k: nbtorch.tensor(v) for k, v in sd.items()})
    x = rng.standard_normal((64, 1, 8, 8)).astype(F32)
    tc, nc = _static(torch, tq, tm, x), _static(nbtorch, nq, nm, x)
    assert nc.fc2.scale == pytest.approx(tc.fc2.scale, rel=1e-6)
    assert nc.fc2.zero_point == tc.fc2.zero_point
    out_t, out_n = tc(torch.tensor(x)).numpy(), nc(nbtorch.tensor(x))._host()
    assert np.abs(out_t - out_n).max() <= nc.fc2.scale * 1.001     # at most one unit
    assert np.mean(np.abs(out_t - out_n) < 1e-6) > 0.99         # the same integers


def test_static_roundtrip_through_save_and_errors(tmp_path):
    rng = np.random.default_rng(2)
    model = _net(nbtorch, nq)
    x = rng.standard_normal((64, 1, 8, 8)).astype(F32)
    q = _static(nbtorch, nq, model, x)
    out = q(nbtorch.tensor(x))._host()
    path = tmp_path / "q.pt"
    nbtorch.save(q.state_dict(), path)
    fresh = _static(nbtorch, nq, _net(nbtorch, nq), x[::-1].copy())
    fresh.load_state_dict(nbtorch.load(path))
    np.testing.assert_array_equal(fresh(nbtorch.tensor(x))._host(), out)
    assert q.fc.weight().dtype is nbtorch.qint8
    # converting before calibration warns and uses default qparams, as PyTorch's
    m = _net(nbtorch, nq)
    m.qconfig = nq.get_default_qconfig("x86")
    with pytest.warns(UserWarning, match="must run observer before"):
        nq.convert(nq.prepare(m))
    # a weight observer for activations, a dynamic qconfig for static convert
    for qconfig in (nq.QConfig(activation=nq.default_weight_observer,
                               weight=nq.default_weight_observer), nq.default_dynamic_qconfig):
        m = _net(nbtorch, nq)
        m.qconfig = qconfig
        p = nq.prepare(m)
        p(nbtorch.tensor(x[:8]))
        with pytest.raises(RuntimeError, match="quint8 activations"):
            nq.convert(p)
    # a float tensor into a quantized layer
    with pytest.raises(NotImplementedError, match="expected a quantized tensor"):
        q.fc(nbtorch.ones(1, 128))
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        nq.fuse_modules(_net(nbtorch, nq).train(), [["conv", "bn"]])


def test_dynamic_quantization_and_errors():
    rng = np.random.default_rng(3)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    q = nq.quantize_dynamic(model, {nn.Linear}, dtype=nbtorch.qint8)
    assert type(q[0]).__module__.endswith("dynamic.linear")
    x = nbtorch.tensor(rng.standard_normal((5, 16)).astype(F32))
    ref = model(x).detach()._host()
    got = q(x)._host()
    assert np.abs(got - ref).max() < 0.05 * np.abs(ref).max()
    with pytest.raises(RuntimeError, match="Conv2d has no dynamically quantized"):
        nq.quantize_dynamic(model, {nn.Conv2d})
    with pytest.raises(RuntimeError, match="Unknown dtype"):     # PyTorch's error
        nq.quantize_dynamic(model, {nn.Linear}, dtype=nbtorch.qint32)
    with pytest.raises(ValueError, match="Provide full qconfig"):
        nq.quantize_dynamic(model, None, dtype=nbtorch.qint32)
    big = nn.Sequential(nn.Linear(256, 256))
    sizes = []
    for m in (big, nq.quantize_dynamic(big, {nn.Linear})):
        buf = io.BytesIO()
        nbtorch.save(m.state_dict(), buf)
        sizes.append(buf.tell())
    assert sizes[1] < 0.3 * sizes[0]                                # int8 weights
    buf.seek(0)
    other = nq.quantize_dynamic(nn.Sequential(nn.Linear(256, 256)), {nn.Linear})
    other.load_state_dict(nbtorch.load(buf))
    x = nbtorch.randn(3, 256)
    np.testing.assert_array_equal(other(x)._host(), m(x)._host())


def test_dynamic_rnn_against_pytorch():
    torch = pytest.importorskip("torch")
    import torch.ao.quantization as tq
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    rng = np.random.default_rng(4)
    xs = rng.standard_normal((3, 5, 6)).astype(F32)
    for tcls, ncls, kw in ((torch.nn.LSTM, nn.LSTM, dict(num_layers=2, bidirectional=True)),
                           (torch.nn.GRU, nn.GRU, dict(batch_first=True))):
        tr, nr = tcls(6, 12, **kw), ncls(6, 12, **kw)
        nr.load_state_dict({k: nbtorch.tensor(v.detach().numpy())
                            for k, v in tr.state_dict().items()})
        tq_m = tq.quantize_dynamic(torch.nn.Sequential(tr), {tcls})
        nq_m = nq.quantize_dynamic(nn.Sequential(nr), {ncls})
        to, no = tq_m(torch.tensor(xs))[0], nq_m(nbtorch.tensor(xs))[0]
        np.testing.assert_allclose(no._host(), to.detach().numpy(), atol=1e-6)


def test_qat_trains_and_converts():
    nbtorch.manual_seed(0)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = nq.QuantStub(), nq.DeQuantStub()
            self.conv, self.relu = nn.Conv2d(1, 4, 3, padding=1), nn.ReLU()
            self.fc = nn.Linear(4 * 8 * 8, 3)

        def forward(self, x):
            return self.dequant(self.fc(self.relu(self.conv(self.quant(x))).flatten(1)))
    m = M().train()
    m.qconfig = nq.get_default_qat_qconfig("x86")
    with pytest.raises(AssertionError, match="training mode"):
        nq.prepare_qat(M().eval())
    p = nq.prepare_qat(nq.fuse_modules_qat(m, [["conv", "relu"]]))
    opt = nbtorch.optim.SGD(p.parameters(), lr=0.05)
    x = nbtorch.randn(8, 1, 8, 8)
    y = nbtorch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(p(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    p.eval()
    c = nq.convert(p)
    assert c.conv.weight().dtype is nbtorch.qint8
    p.apply(nq.disable_observer)
    # the fake-quantized activations clip at the observer's 7-bit range; the converted
    # model's uint8 outputs use the full range (as PyTorch's): compare predictions
    agree = (c(x).argmax(1) == p(x).argmax(1)).float().mean().item()
    assert agree >= 0.85


def test_dynamic_per_channel_against_pytorch():
    torch = pytest.importorskip("torch")
    import torch.ao.quantization as tq
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(40, 30), torch.nn.ReLU(), torch.nn.Linear(30, 7))
    nm = nn.Sequential(nn.Linear(40, 30), nn.ReLU(), nn.Linear(30, 7))
    nm.load_state_dict({k: nbtorch.tensor(v.detach().numpy())
                        for k, v in tm.state_dict().items()})
    tqm = tq.quantize_dynamic(tm, {torch.nn.Linear: tq.per_channel_dynamic_qconfig})
    nqm = nq.quantize_dynamic(nm, {nn.Linear: nq.per_channel_dynamic_qconfig})
    assert nqm[0].weight().qscheme() is nbtorch.per_channel_affine
    x = np.random.default_rng(0).standard_normal((9, 40)).astype(F32)
    np.testing.assert_allclose(nqm(nbtorch.tensor(x))._host(), tqm(torch.tensor(x)).numpy(),
                               atol=1e-6)


def test_qat_conv_bn_relu_folds_batchnorm():
    nbtorch.manual_seed(1)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = nq.QuantStub(), nq.DeQuantStub()
            self.conv, self.bn, self.relu = nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), \
                nn.ReLU()
            self.fc = nn.Linear(4 * 8 * 8, 3)

        def forward(self, x):
            x = self.relu(self.bn(self.conv(self.quant(x))))
            return self.dequant(self.fc(x.flatten(1)))
    m = M().train()
    m.qconfig = nq.get_default_qat_qconfig("x86")
    p = nq.prepare_qat(nq.fuse_modules_qat(m, [["conv", "bn", "relu"]]))
    assert type(p.conv).__name__ == "ConvBnReLU2d" and hasattr(p.conv, "bn")
    opt = nbtorch.optim.SGD(p.parameters(), lr=0.05)
    x = nbtorch.randn(16, 1, 8, 8)
    y = nbtorch.tensor([0, 1, 2, 0] * 4)
    for _ in range(5):
        opt.zero_grad()
        nn.functional.cross_entropy(p(x), y).backward()
        opt.step()
    p.eval()
    p.apply(nq.disable_observer)
    c = nq.convert(p)
    assert type(c.conv).__name__ == "ConvReLU2d" and c.conv.weight().dtype is nbtorch.qint8
    assert (c(x).argmax(1) == p(x).argmax(1)).float().mean().item() >= 0.85
    with pytest.raises(NotImplementedError, match="fuse_modules in eval"):
        nq.prepare(nq.fuse_modules_qat(M().train(), [["conv", "bn", "relu"]]))


def test_module_reprs_as_pytorch():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore")
    import torch.ao.nn.quantized as tnnq
    import torch.ao.nn.intrinsic.quantized as tnniq
    import torch.ao.nn.quantized.dynamic as tnnqd
    from nbtorch.ao.nn import quantized as nnq
    from nbtorch.ao.nn.quantized import dynamic as nnqd
    pairs = [(tnnq.Linear(3, 2), nnq.Linear(3, 2)),
             (tnnq.Conv2d(1, 2, 3, padding=1), nnq.Conv2d(1, 2, 3, padding=1)),
             (tnniq.ConvReLU2d(1, 2, 3), nnq.ConvReLU2d(1, 2, 3)),
             (tnniq.LinearReLU(3, 2), nnq.LinearReLU(3, 2)),
             (tnnqd.Linear(3, 2), nnqd.Linear(3, 2)),
             (tnnqd.LSTM(3, 4, num_layers=2, bidirectional=True), None),
             (tnnq.Quantize(0.1, 2, torch.quint8), nnq.Quantize(0.1, 2, nbtorch.quint8)),
             (tnnq.DeQuantize(), nnq.DeQuantize())]
    for t, n in pairs:
        if n is None:
            n = nq.quantize_dynamic(nn.Sequential(nn.LSTM(3, 4, num_layers=2,
                                                          bidirectional=True)), {nn.LSTM})[0]
        assert repr(n) == repr(t)
