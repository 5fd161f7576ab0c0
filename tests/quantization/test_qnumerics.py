"""Quantize/dequantize numerics against PyTorch: quantize_per_tensor_dynamic's qparams
(ATen's ChooseQuantizationParams), qint32 rounding and dequantize."""
import warnings

import numpy as np
import pytest

import nbtorch


def _torch():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", message=".*quantiz.*deprecated")
    return torch


_DYNAMIC_INPUTS = [
    np.zeros(5), np.full(4, 3.0), np.full(4, -2.0), [1e-6, 2e-6], [0.0, 1e-3], [-1e-5, 1e-5],
    np.random.default_rng(0).standard_normal(50) * 3,
    np.random.default_rng(1).standard_normal(50) * 1e-4, [5.0, 7.0], [-7.0, -5.0],
    [1e30, -1e30]]


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
@pytest.mark.parametrize("reduce_range", [False, True])
def test_quantize_per_tensor_dynamic_matches_pytorch(dtype, reduce_range):
    torch = _torch()
    for x in _DYNAMIC_INPUTS:
        x = np.asarray(x, np.float32)
        want = torch.quantize_per_tensor_dynamic(torch.from_numpy(x), getattr(torch, dtype),
                                                 reduce_range)
        got = nbtorch.quantize_per_tensor_dynamic(nbtorch.from_numpy(x),
                                                  getattr(nbtorch, dtype), reduce_range)
        assert got.int_repr().tolist() == want.int_repr().tolist(), x[:3]
        assert (got.q_scale(), got.q_zero_point()) == (want.q_scale(), want.q_zero_point())


def test_quantize_per_tensor_dynamic_errors():
    with pytest.raises(RuntimeError, match="QInt32"):
        nbtorch.quantize_per_tensor_dynamic(nbtorch.randn(3), nbtorch.qint32, False)


@pytest.mark.parametrize("dtype", ["qint32", "qint8", "quint8"])
def test_quantize_and_dequantize_match_pytorch(dtype):
    torch = _torch()
    rng = np.random.default_rng(0)
    x = np.concatenate([np.arange(-40, 40) * np.float32(0.05), np.arange(-40, 40) * 0.5,
                        rng.standard_normal(500) * 1e3, rng.standard_normal(500) * 1e8,
                        [3e9, -3e9, 1e38, -1e38, 16777217.0]]).astype(np.float32)
    zps = {"qint32": [7, 0, 12345, -5, 100000001], "qint8": [7, 0, -5],
           "quint8": [7, 0, 200]}[dtype]
    for scale in (0.1, 0.01, 1.0, 2.0, 0.37):
        for zp in zps:
            want = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp,
                                             getattr(torch, dtype))
            got = nbtorch.quantize_per_tensor(nbtorch.from_numpy(x), scale, zp,
                                              getattr(nbtorch, dtype))
            np.testing.assert_array_equal(got.int_repr().numpy(), want.int_repr().numpy())
            np.testing.assert_array_equal(got.dequantize().numpy(), want.dequantize().numpy())
