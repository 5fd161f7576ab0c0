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


def _conv1d_net(t):
    q = t.ao.quantization

    class M(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = q.QuantStub(), q.DeQuantStub()
            self.conv = t.nn.Conv1d(3, 6, 3, padding=1, stride=2)
            self.bn, self.relu = t.nn.BatchNorm1d(6), t.nn.ReLU()
            self.conv2 = t.nn.Conv1d(6, 6, 3, groups=3, bias=False)

        def forward(self, x):
            return self.dequant(self.conv2(self.relu(self.bn(self.conv(self.quant(x))))))
    return M()


def test_conv1d_workflow_matches_pytorch(tmp_path):
    """Conv1d + BatchNorm1d + ReLU fused, a grouped Conv1d: same model, integers and
    state dict as PyTorch's, and PyTorch's checkpoint loads."""
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    sd = {k: v.detach().numpy().copy() for k, v in _conv1d_net(torch).state_dict().items()}
    x = np.random.default_rng(0).standard_normal((4, 3, 11)).astype(np.float32)
    results = []
    for t in (torch, nbtorch):
        m = _conv1d_net(t)
        m.load_state_dict({k: t.from_numpy(v.copy()) for k, v in sd.items()})
        m.eval()
        q = t.ao.quantization
        m.qconfig = q.get_default_qconfig("x86")
        p = q.prepare(q.fuse_modules(m, [["conv", "bn", "relu"]]))
        p(t.from_numpy(x))
        c = q.convert(p)
        results.append((c, repr(c), list(c.state_dict()), c(t.from_numpy(x)).numpy()))
    (tc, *want), (nc, *got) = results
    assert got[:2] == want[:2]
    np.testing.assert_array_equal(got[2], want[2])
    torch.save(tc.state_dict(), tmp_path / "c1.pt")
    nc.conv2.scale = 1.0
    nc.load_state_dict(nbtorch.load(tmp_path / "c1.pt"))
    np.testing.assert_array_equal(nc(nbtorch.from_numpy(x)).numpy(), want[2])
