"""Quantized ConvTranspose2d: integers equal to requantizing the float transposed
convolution of the dequantized operands (exact integer sums, the conv kernels'
requantization) and to PyTorch's where PyTorch's fbgemm path agrees with that reference
(groups > 1 or output_padding > 0; for groups=1 and output_padding=0 PyTorch 2.13's
result is tens of steps away from its own float reference here)."""
import warnings

import numpy as np
import pytest

import nbtorch

CONFIGS = [  # cin, cout, kernel, stride, padding, output_padding, groups, dilation, bias
    (4, 6, 3, 2, 1, 1, 2, 1, True), (3, 5, 2, 2, 0, 0, 1, 1, True),
    (4, 4, 3, 1, 1, 0, 4, 2, False), (2, 3, (2, 3), (1, 2), (0, 1), (0, 1), 1, 1, True)]


def _run(t, cfg, rng_seed=0):
    cin, cout, k, s, p, op, g, d, bias = cfg
    rng = np.random.default_rng(rng_seed)
    kk = (k, k) if isinstance(k, int) else k
    w = (rng.standard_normal((cin, cout // g) + kk) * 0.3).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) * 0.1
    x = rng.standard_normal((2, cin, 5, 6)).astype(np.float32)
    m = t.ao.nn.quantized.ConvTranspose2d(cin, cout, k, s, p, op, g, bias, d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qw = t.quantize_per_tensor(t.from_numpy(w), float(np.abs(w).max() / 127), 0, t.qint8)
        m.set_weight_bias(qw, t.from_numpy(b) if bias else None)
        m.scale, m.zero_point = 0.06, 80
        qx = t.quantize_per_tensor(t.from_numpy(x), 0.03, 110, t.quint8)
        return m, qx, qw, m(qx)


@pytest.mark.parametrize("cfg", CONFIGS)
def test_conv_transpose_matches_float_reference(cfg):
    m, qx, qw, out = _run(nbtorch, cfg)
    cin, cout, k, s, p, op, g, d, bias = cfg
    ref = nbtorch.nn.functional.conv_transpose2d(qx.dequantize(), qw.dequantize(),
                                                 m.bias(), s, p, op, g, d)
    want = nbtorch.quantize_per_tensor(ref, 0.06, 80, nbtorch.quint8).int_repr().numpy()
    diff = np.abs(out.int_repr().numpy().astype(int) - want.astype(int))
    assert diff.max() <= 1 and np.mean(diff == 0) > 0.99   # float sums vs exact integers


@pytest.mark.parametrize("cfg", [c for c in CONFIGS if c[6] > 1 or c[5] != 0])
def test_conv_transpose_matches_pytorch(cfg):
    torch = pytest.importorskip("torch")
    tm, _, _, tout = _run(torch, cfg)
    nm, _, _, nout = _run(nbtorch, cfg)
    assert repr(nm) == repr(tm)
    np.testing.assert_array_equal(nout.int_repr().numpy(), tout.int_repr().numpy())
    assert [(k, str(v.dtype)) for k, v in nm.state_dict().items() if v is not None] == \
        [(k, str(v.dtype)) for k, v in tm.state_dict().items() if v is not None]


def test_convert_and_per_channel_refusal():
    tq, nn = nbtorch.ao.quantization, nbtorch.nn
    m = nn.Sequential(tq.QuantStub(), nn.ConvTranspose2d(3, 4, 2, stride=2),
                      tq.DeQuantStub()).eval()
    m.qconfig = tq.default_qconfig
    p = tq.prepare(m)
    p(nbtorch.randn(2, 3, 4, 4))
    c = tq.convert(p)
    assert type(c[1]).__name__ == "ConvTranspose2d" and c(nbtorch.randn(1, 3, 4, 4)).shape \
        == (1, 4, 8, 8)
    m.qconfig = tq.get_default_qconfig("x86")          # per-channel weights
    p = tq.prepare(m)
    p(nbtorch.randn(2, 3, 4, 4))
    with pytest.raises(AssertionError, match="Per channel weight observer"):
        tq.convert(p)
