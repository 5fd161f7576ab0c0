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


_FAKE_QUANTS = {
    "fused_act": lambda tq: tq.default_fused_act_fake_quant(),
    "fused_weight": lambda tq: tq.default_fused_wt_fake_quant(),
    "fused_per_channel": lambda tq: tq.default_fused_per_channel_wt_fake_quant(),
    "qat_x86_act": lambda tq: tq.get_default_qat_qconfig("x86").activation(),
    "qat_x86_weight": lambda tq: tq.get_default_qat_qconfig("x86").weight(),
    "qat_v0_weight": lambda tq: tq.get_default_qat_qconfig("x86", 0).weight(),
}


@pytest.mark.parametrize("name", sorted(_FAKE_QUANTS))
def test_fake_quantize_steps_match_pytorch(name):
    """Outputs and qparams after each of several steps (the fused fake-quantize chooses
    its qparams with ATen's ChooseQuantizationParams: it drifted ~0.4% before)."""
    torch = _torch()
    runs = []
    for t in (torch, nbtorch):
        fq = _FAKE_QUANTS[name](t.ao.quantization)
        rng = np.random.default_rng(0)
        steps = []
        for i in range(6):
            x = (rng.standard_normal((4, 6)) * (1 + i) + i * 0.3).astype(np.float32)
            y = fq(t.from_numpy(x))
            steps.append((y.detach().numpy().tolist(), fq.scale.tolist(),
                          fq.zero_point.tolist()))
        steps.append([v.tolist() for v in fq.calculate_qparams()])
        runs.append(steps)
    assert runs[0] == runs[1]


def _describe(factory):
    obs = factory()
    inner = getattr(obs, "activation_post_process", obs)
    return (type(obs).__name__, type(inner).__name__, str(inner.dtype), str(inner.qscheme),
            inner.quant_min, inner.quant_max, getattr(inner, "ch_axis", None))


@pytest.mark.parametrize("fn", ["get_default_qconfig", "get_default_qat_qconfig"])
@pytest.mark.parametrize("backend", ["x86", "fbgemm", "qnnpack", "onednn", "bogus"])
@pytest.mark.parametrize("version", [None, 0, 1, 2])
def test_default_qconfigs_match_pytorch(fn, backend, version):
    torch = _torch()
    results = []
    for t in (torch, nbtorch):
        args = (backend,) if version is None else (backend, version)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                qc = getattr(t.ao.quantization, fn)(*args)
                results.append((_describe(qc.activation), _describe(qc.weight)))
        except AssertionError as e:
            results.append(("AssertionError", str(e)))
    assert results[0] == results[1]
