"""Quantized tensors: quantize/dequantize against a NumPy reference of the same arithmetic
(exact integers), printing, views, errors; against PyTorch where it is installed."""
import warnings

import numpy as np
import pytest

import nbtorch

F32 = np.float32


def ref_quantize(x, scale, zp, qmin, qmax):
    """PyTorch's x86 per-tensor quantize: one rounding of x * (1/scale) + zp (an FMA)."""
    inv = F32(1) / F32(scale)
    exact = x.astype(np.float64) * np.float64(inv) + zp        # the FMA's exact value
    return np.clip(np.rint(exact.astype(F32)).astype(np.int64), qmin, qmax)


@pytest.mark.parametrize("dtype,zp,lo,hi", [(nbtorch.quint8, 128, 0, 255),
                                            (nbtorch.qint8, -3, -128, 127),
                                            (nbtorch.qint32, 7, -2**31, 2**31 - 1)])
def test_quantize_matches_reference(dtype, zp, lo, hi):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(500) * 4).astype(F32)
    x[:4] = [0.05, 0.25, -0.35, 1e9]                   # ties and saturation
    q = nbtorch.quantize_per_tensor(nbtorch.tensor(x), 0.1, zp, dtype)
    got = q.int_repr()._host().astype(np.int64)
    np.testing.assert_array_equal(got, ref_quantize(x, 0.1, zp, lo, hi))
    assert q.dtype is dtype and q.is_quantized and not nbtorch.tensor(x).is_quantized
    assert q.q_scale() == 0.1 and q.q_zero_point() == zp
    deq = q.dequantize()._host()
    np.testing.assert_array_equal(deq, (got - zp).astype(F32) * F32(0.1))


def test_saturates_never_wraps():
    q = nbtorch.quantize_per_tensor(nbtorch.tensor([1e30, -1e30, 300.0, -300.0]), 1.0, 0,
                                    nbtorch.qint8)
    assert q.int_repr().tolist() == [127, -128, 127, -128]


def test_per_channel():
    x = nbtorch.tensor([[-1.0, 0.5, 2.3], [0.0, 100.0, -3.0]])
    q = nbtorch.quantize_per_channel(x, nbtorch.tensor([0.1, 0.2], dtype=nbtorch.float64),
                                     nbtorch.tensor([0, 1]), 0, nbtorch.qint8)
    assert q.int_repr().tolist() == [[-10, 5, 23], [1, 127, -14]]
    assert q.qscheme() is nbtorch.per_channel_affine and q.q_per_channel_axis() == 0
    assert q.q_per_channel_scales().tolist() == [0.1, 0.2]
    assert q.q_per_channel_zero_points().tolist() == [0, 1]
    with pytest.raises(RuntimeError):
        q.q_scale()


def test_printing_as_pytorch():
    x = nbtorch.tensor([[-1.0, 0.5, 2.3], [0.0, 100.0, -3.0]])
    assert repr(nbtorch.quantize_per_tensor(x, 0.1, 3, nbtorch.quint8)) == (
        "tensor([[-0.3000,  0.5000,  2.3000],\n"
        "        [ 0.0000, 25.2000, -0.3000]], size=(2, 3), dtype=torch.quint8,\n"
        "       quantization_scheme=torch.per_tensor_affine, scale=0.1, zero_point=3)")
    q = nbtorch.quantize_per_channel(x, nbtorch.tensor([0.1, 0.2], dtype=nbtorch.float64),
                                     nbtorch.tensor([0, 1]), 0, nbtorch.qint8)
    assert repr(q) == (
        "tensor([[-1.0000,  0.5000,  2.3000],\n"
        "        [ 0.0000, 25.2000, -3.0000]], size=(2, 3), dtype=torch.qint8,\n"
        "       quantization_scheme=torch.per_channel_affine,\n"
        "       scale=tensor([0.1000, 0.2000], dtype=torch.float64),\n"
        "       zero_point=tensor([0, 1]), axis=0)")
    assert repr(nbtorch.quantize_per_tensor(nbtorch.tensor(2.5), 0.1, 0, nbtorch.qint32)) == (
        "tensor(2.5000, size=(), dtype=torch.qint32,\n"
        "       quantization_scheme=torch.per_tensor_affine, scale=0.1, zero_point=0)")


def test_views_keep_qparams_and_float_ops_refuse():
    q = nbtorch.quantize_per_tensor(nbtorch.arange(12.0).reshape(3, 4), 0.5, 2,
                                    nbtorch.quint8)
    for v in (nbtorch.flatten(q), q[1], q.reshape(4, 3), q.t()):
        assert v.is_quantized and v.q_scale() == 0.5 and v.q_zero_point() == 2
    assert q[1].dequantize().tolist() == [4.0, 5.0, 6.0, 7.0]
    with pytest.raises(NotImplementedError, match="QuantizedCPU"):
        q + q


@pytest.mark.parametrize("scale,zp,dtype,match", [
    (0.0, 0, nbtorch.quint8, "scale"), (float("nan"), 0, nbtorch.quint8, "scale"),
    (0.1, 256, nbtorch.quint8, "zero_point"), (0.1, -129, nbtorch.qint8, "zero_point"),
    (0.1, 0, nbtorch.float32, "quantized dtype")])
def test_bad_qparams(scale, zp, dtype, match):
    with pytest.raises(RuntimeError, match=match):
        nbtorch.quantize_per_tensor(nbtorch.ones(3), scale, zp, dtype)


def test_float_math_on_quantized_tensors_refused():
    q = nbtorch.quantize_per_tensor(nbtorch.randn(2, 3), 0.1, 10, nbtorch.quint8)
    for op in (nbtorch.sigmoid, lambda t: t.sum(), lambda t: t.float(), lambda t: t * 2,
               lambda t: t.exp()):
        with pytest.raises(NotImplementedError, match="QuantizedCPU"):
            op(q)
    assert nbtorch.q_scale(q) == 0.1 and nbtorch.int_repr(q).dtype is nbtorch.uint8
    with pytest.raises(NotImplementedError, match="q_scale"):
        nbtorch.ones(2).q_scale()


def test_integer_input_refused():
    with pytest.raises(RuntimeError, match="Float Tensor"):
        nbtorch.quantize_per_tensor(nbtorch.ones(3, dtype=nbtorch.int64), 0.1, 0,
                                    nbtorch.quint8)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", message=".*quantize.*deprecated")
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((64, 33)) * 3).astype(F32)
    x[0, :6] = [0.05, 0.15, 0.25, -0.35, -0.25, 0.35]
    for tdt, ndt, zp in ((torch.quint8, nbtorch.quint8, 3), (torch.qint8, nbtorch.qint8, 4),
                         (torch.qint32, nbtorch.qint32, 0)):
        for s in (0.1, 0.0213, 1e-3):
            a = nbtorch.quantize_per_tensor(nbtorch.tensor(x), s, zp, ndt).int_repr()._host()
            b = torch.quantize_per_tensor(torch.tensor(x), s, zp, tdt).int_repr().numpy()
            np.testing.assert_array_equal(a, b)
    sc = rng.uniform(0.01, 0.1, 33)
    zps = rng.integers(-5, 5, 33)
    a = nbtorch.quantize_per_channel(nbtorch.tensor(x), sc, zps, 1, nbtorch.qint8)
    b = torch.quantize_per_channel(torch.tensor(x), torch.tensor(sc), torch.tensor(zps), 1,
                                   torch.qint8)
    np.testing.assert_array_equal(a.int_repr()._host(), b.int_repr().numpy())
    np.testing.assert_array_equal(a.dequantize()._host(), b.dequantize().numpy())
