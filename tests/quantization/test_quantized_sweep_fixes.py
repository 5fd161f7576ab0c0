"""Quantized tensors a sweep against PyTorch found wrong: qint8 max pooling over negative
windows, views of per-channel tensors."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn.functional as F


def test_qint8_max_pool_of_an_all_negative_window():
    x = nbtorch.tensor([[[[-1.7, -1.6], [-2.0, -1.65]]]])
    q = nbtorch.quantize_per_tensor(x, 0.05, 3, nbtorch.qint8)
    got = F.max_pool2d(q, 2).dequantize()
    assert got.flatten().tolist() == pytest.approx([-1.6])    # -1.65 (the last) before


def test_views_of_per_channel_tensors_carry_their_channels_qparams():
    x = nbtorch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    q = nbtorch.quantize_per_channel(x, nbtorch.tensor([0.1, 0.2, 0.5]),
                                     nbtorch.tensor([0, 0, 0]), 0, nbtorch.quint8)
    np.testing.assert_allclose(q[1:].dequantize().numpy(), [[3, 4], [5, 6]], atol=1e-6)
    np.testing.assert_allclose(q[2].dequantize().numpy(), [5, 6], atol=1e-6)
    u = q.unsqueeze(0)
    assert u.q_per_channel_axis() == 1
    np.testing.assert_allclose(u.dequantize().numpy(), x.unsqueeze(0).numpy(), atol=1e-6)
    np.testing.assert_allclose(q.reshape(-1).dequantize().numpy(), x.reshape(-1).numpy(),
                               atol=1e-6)      # a scale per element along the one dim
    with pytest.raises(RuntimeError, match="mixes its channels"):
        q.reshape(2, 3)                        # channels varying along both dims


def test_observers_carry_eps_and_int32_zero_points_and_detach_stays_quantized():
    obs = nbtorch.ao.quantization.MinMaxObserver()
    assert "eps" in obs.state_dict()                   # PyTorch's observers' key
    with pytest.warns(UserWarning, match="must run observer"):
        scale, zp = obs.calculate_qparams()            # raised before any data
    assert scale.tolist() == [1.0] and zp.tolist() == [0]
    obs(nbtorch.tensor([-1.0, 2.0]))
    assert obs.calculate_qparams()[1].dtype is nbtorch.int32
    q = nbtorch.quantize_per_tensor(nbtorch.tensor([0.5, -1.0, 2.0]), 0.1, 10, nbtorch.quint8)
    d = q.detach()
    assert d.is_quantized and d.dequantize().tolist() == pytest.approx([0.5, -1.0, 2.0])


def test_quantized_avg_pool2d():
    x = nbtorch.arange(16.0).reshape(1, 1, 4, 4)
    q = nbtorch.quantize_per_tensor(x, 1.0, 0, nbtorch.quint8)
    assert F.avg_pool2d(q, 2).int_repr().flatten().tolist() == [2, 4, 10, 12]  # raised
    assert nbtorch.nn.AvgPool2d(2)(q).is_quantized
