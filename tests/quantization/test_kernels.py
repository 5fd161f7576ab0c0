"""The int8 kernels and quantized functional ops: exact integers against NumPy references
of the same arithmetic, and against PyTorch's x86 quantized ops where installed."""
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch.ao.nn.quantized import functional as qF
from nbtorch.kernels.cpu import qgemm
from nbtorch.kernels.cpu import quantized as k  # noqa: F401

F32 = np.float32


def ref_requant(acc, scale_x, scales_w, bias, out_scale, zo, relu):
    """fbgemm's float-bias requantization of int32 accumulators (float32 arithmetic)."""
    a_w = (F32(scale_x) * scales_w.astype(F32)).astype(F32)
    mult = (a_w / F32(out_scale)).astype(F32)
    v = np.rint((acc.astype(F32) + (bias / a_w).astype(F32)) * mult)
    return np.clip(v, 0 if relu else -zo, 255 - zo).astype(np.int64) + zo


@pytest.mark.parametrize("m,kk,n", [(1, 1, 1), (5, 37, 13), (33, 70, 65)])
def test_qgemm_exact(m, kk, n):
    rng = np.random.default_rng(m)
    a = rng.integers(0, 256, (m, kk)).astype(np.uint8)
    b = rng.integers(-128, 128, (n, kk)).astype(np.int8)
    out = np.empty((m, n), np.int32)
    qgemm.qgemm(a, b, out)
    np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64).T)


ENGINES = ["loop", "vnni"] if qgemm.vnni.AVAILABLE else ["loop"]


def _engine(packed, engine):
    """The packed weight run by `engine` (the loop engine: no VNNI panels)."""
    if engine == "loop":
        packed.wp = None
    return packed


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("relu,weight_zp", [(False, False), (True, False), (False, True)])
def test_linear_requant_reference(relu, weight_zp, engine):
    rng = np.random.default_rng(3)
    m, kk, n, za, zo = 9, 41, 70, 37, 90
    a = rng.integers(0, 256, (m, kk)).astype(np.uint8)
    b = rng.integers(-127, 128, (n, kk)).astype(np.int8)
    sw = rng.uniform(0.001, 0.01, n)
    zw = rng.integers(-5, 6, n) if weight_zp else np.zeros(n, np.int64)
    bias = rng.standard_normal(n).astype(F32)
    acc = (a.astype(np.int64) - za) @ (b.astype(np.int64) - zw[:, None]).T
    from nbtorch._qtensor import QTensor
    packed = _engine(qF.PackedWeight(QTensor._from_int(b, nbtorch.qint8, scales=sw,
                                                       zero_points=zw, axis=0),
                                     nbtorch.tensor(bias)), engine)
    x = QTensor._from_int(a, nbtorch.quint8, 0.02, za)
    got = qF.linear_packed(x, packed, 0.05, zo, relu=relu).int_repr()._host()
    np.testing.assert_array_equal(got, ref_requant(acc, 0.02, sw, bias, 0.05, zo, relu))


def test_im2col_pads_with_zero_point():
    x = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3) + 1
    col = np.empty((9, 2 * 9), np.uint8)
    qgemm.im2col_u8(x, col, 200, 3, 3, 1, 1, 1, 1, 1, 1)
    assert col[0, 0] == 200 and col[4].tolist()[:9] == list(range(1, 10))


def test_pooling_and_relu_reference():
    rng = np.random.default_rng(5)
    q = nbtorch.quantize_per_tensor(nbtorch.tensor(rng.standard_normal((2, 3, 6, 7))
                                                   .astype(F32)), 0.05, 100, nbtorch.quint8)
    ints = q.int_repr()._host().astype(np.int64)
    mp = qF.max_pool2d(q, 2).int_repr()._host()
    np.testing.assert_array_equal(mp, ints[..., :6, :6].reshape(2, 3, 3, 2, 3, 2).max((3, 5)))
    np.testing.assert_array_equal(qF.relu(q).int_repr()._host(), np.maximum(ints, 100))
    assert nbtorch.nn.functional.relu(q).is_quantized          # float code accepts it
    assert nbtorch.nn.MaxPool2d(2)(q).q_zero_point() == 100
    assert nbtorch.nn.AdaptiveAvgPool2d((3, 2))(q).is_quantized
    aap = qF.adaptive_avg_pool2d(q, 1).int_repr()._host()[..., 0, 0]
    np.testing.assert_array_equal(aap, np.rint(ints.mean((2, 3))))


def _torch_pair(torch, x, s, z):
    return (torch.quantize_per_tensor(torch.tensor(x), s, z, torch.quint8),
            nbtorch.quantize_per_tensor(nbtorch.tensor(x), s, z, nbtorch.quint8))


def _per_channel(torch, w):
    n = w.shape[0]
    sw = np.abs(w.reshape(n, -1)).max(1) / 127.5
    z = np.zeros(n, np.int64)
    return (torch.quantize_per_channel(torch.tensor(w), torch.tensor(sw), torch.tensor(z), 0,
                                       torch.qint8),
            nbtorch.quantize_per_channel(nbtorch.tensor(w), sw, z, 0, nbtorch.qint8))


def _units(a, b):
    """max |difference| of two quantized tensors' integers, in units of their scale."""
    return int(np.abs(a.int_repr().numpy().astype(np.int64)
                      - b.int_repr()._host().astype(np.int64)).max())


@pytest.mark.parametrize("engine", ENGINES)
def test_against_pytorch_linear_conv_dynamic(engine):
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore")
    import torch.ao.nn.quantized as tnnq
    import torch.ao.nn.quantized.dynamic as tnnqd
    from nbtorch.ao.nn.quantized.dynamic.linear import linear_dynamic
    torch.backends.quantized.engine = "x86"
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 96)).astype(F32)
    w = (rng.standard_normal((40, 96)) * 0.1).astype(F32)
    b = rng.standard_normal(40).astype(F32)
    tx, nx = _torch_pair(torch, x, 0.03, 64)
    tw, nw = _per_channel(torch, w)
    tl = tnnq.Linear(96, 40)
    tl.set_weight_bias(tw, torch.tensor(b))
    tl.scale, tl.zero_point = 0.05, 70
    packed = _engine(qF.PackedWeight(nw, nbtorch.tensor(b)), engine)
    assert _units(tl(tx), qF.linear_packed(nx, packed, 0.05, 70)) == 0
    td = tnnqd.Linear(96, 40)
    td.set_weight_bias(tw, torch.tensor(b))
    np.testing.assert_allclose(linear_dynamic(nbtorch.tensor(x), packed)._host(),
                               td(torch.tensor(x)).numpy(), rtol=0, atol=1e-6)
    xc = rng.standard_normal((2, 3, 9, 9)).astype(F32)
    wc = (rng.standard_normal((8, 3, 3, 3)) * 0.2).astype(F32)
    tx, nx = _torch_pair(torch, xc, 0.02, 100)
    tw, nw = _per_channel(torch, wc)
    for stride, pad, dil in ((1, 1, 1), (2, 0, 1), (1, 2, 2)):
        tc = tnnq.Conv2d(3, 8, 3, stride=stride, padding=pad, dilation=dil)
        tc.set_weight_bias(tw, torch.tensor(b[:8]))
        tc.scale, tc.zero_point = 0.1, 60
        packed = _engine(qF.PackedWeight(nw, nbtorch.tensor(b[:8])), engine)
        got = qF.conv2d_packed(nx, packed, stride, pad, dil, 1, 0.1, 60)
        assert _units(tc(tx), got) == 0


def test_against_pytorch_elementwise():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 8, 8)).astype(F32)       # 384 values: whole vectors
    ta, na = _torch_pair(torch, x, 0.02, 100)
    tb, nb = _torch_pair(torch, x[::-1].copy(), 0.03, 90)
    assert _units(torch.ops.quantized.add(ta, tb, 0.04, 80), qF.add(na, nb, 0.04, 80)) == 0
    assert _units(torch.ops.quantized.add_relu(ta, tb, 0.04, 80),
                  qF.add(na, nb, 0.04, 80, relu=True)) == 0
    assert _units(torch.ops.quantized.cat([ta, tb], 1, 0.05, 77),
                  qF.cat([na, nb], 1, 0.05, 77)) == 0
    assert _units(torch.nn.functional.max_pool2d(ta, 2), qF.max_pool2d(na, 2)) == 0
    assert _units(torch.nn.functional.adaptive_avg_pool2d(ta, (3, 2)),
                  qF.adaptive_avg_pool2d(na, (3, 2))) == 0


def test_float_input_to_quantized_op_is_an_error():
    from nbtorch._qtensor import QTensor
    packed = qF.PackedWeight(QTensor._from_int(np.ones((2, 3), np.int8), nbtorch.qint8,
                                               0.1, 0), None)
    with pytest.raises(NotImplementedError, match="expected a quantized tensor"):
        qF.linear_packed(nbtorch.ones(1, 3), packed, 0.1, 0)
