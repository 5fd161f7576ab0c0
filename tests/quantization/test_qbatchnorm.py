"""Quantized batch norm (an unfused BatchNorm after a conv converts to it, as in
PyTorch): integers against PyTorch's quantized::batch_norm kernels and workflow."""
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch import nn
import nbtorch.ao.quantization as tq
from nbtorch.ao.nn import quantized as nnq


def _stats(rng, c):
    w, b, mean, var = (rng.standard_normal(c).astype(np.float32) for _ in range(4))
    return w, b, mean, np.abs(var) + np.float32(0.1)


@pytest.mark.parametrize("shape,relu", [((2, 3, 5, 4), False), ((2, 70, 6, 6), False),
                                        ((2, 5, 4, 4), True), ((2, 3, 2, 3, 4), False)])
def test_batch_norm_matches_pytorch(shape, relu):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    stats = _stats(rng, shape[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qt = torch.quantize_per_tensor(torch.from_numpy(x), 0.05, 60, torch.quint8)
        op = getattr(torch.ops.quantized, f"batch_norm{len(shape) - 2}d" + ("_relu" if relu else ""))
        want = op(qt, *(torch.from_numpy(s) for s in stats), 1e-5, 0.07, 100)
    qn = nbtorch.quantize_per_tensor(nbtorch.from_numpy(x), 0.05, 60, nbtorch.quint8)
    got = nnq.batchnorm.batch_norm(qn, *(nbtorch.from_numpy(s) for s in stats), 1e-5, 0.07,
                                   100, relu)
    assert got.int_repr().tolist() == want.int_repr().tolist()
    assert (got.q_scale(), got.q_zero_point()) == (0.07, 100)


class _Net:
    @staticmethod
    def build(t):
        class M(t.nn.Module):
            def __init__(self):
                super().__init__()
                self.quant = t.ao.quantization.QuantStub()
                self.conv = t.nn.Conv2d(2, 3, 3)
                self.bn = t.nn.BatchNorm2d(3)
                self.relu = t.nn.ReLU()
                self.dequant = t.ao.quantization.DeQuantStub()

            def forward(self, x):
                return self.dequant(self.relu(self.bn(self.conv(self.quant(x)))))
        return M()


def test_unfused_batchnorm_converts_as_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 2, 6, 6)).astype(np.float32)
    outs = []
    for t in (torch, nbtorch):
        m = _Net.build(t)
        sd = {k: t.from_numpy(rng.standard_normal(tuple(v.shape)).astype(np.float32))
              for k, v in m.state_dict().items() if v.dtype == t.float32}
        sd["bn.running_var"] = sd["bn.running_var"].abs() + 0.5
        rng = np.random.default_rng(1)
        rng.standard_normal((2, 2, 6, 6))
        m.load_state_dict(sd, strict=False)
        m.eval()
        m.qconfig = t.ao.quantization.default_qconfig
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = t.ao.quantization.prepare(m)
            p(t.from_numpy(x))
            c = t.ao.quantization.convert(p)
            outs.append((type(c.bn).__name__, list(c.state_dict()), c(t.from_numpy(x)).numpy()))
    assert outs[1][0] == "BatchNorm2d" and outs[0][:2] == outs[1][:2]
    np.testing.assert_array_equal(outs[1][2], outs[0][2])


def test_bn_relu_fused_and_shape_check():
    m = nn.Sequential(tq.QuantStub(), nn.BatchNorm2d(3), nn.ReLU(), tq.DeQuantStub()).eval()
    m = tq.fuse_modules(m, [["1", "2"]])
    m.qconfig = tq.default_qconfig
    p = tq.prepare(m)
    x = nbtorch.randn(2, 3, 4, 4)
    p(x)
    c = tq.convert(p)
    assert isinstance(c[1], nnq.BNReLU2d)
    assert (c(x) >= 0).all()
    with pytest.raises(ValueError, match="Input shape must be"):
        c[1](nbtorch.quantize_per_tensor(nbtorch.randn(3, 4), 0.1, 0, nbtorch.quint8))
