"""Saving and loading quantized tensors and quantized models (PyTorch's
``_rebuild_qtensor`` pickle format, both ways when PyTorch is installed)."""
import io
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch import nn
import nbtorch.ao.quantization as tq


def _tensors():
    x = nbtorch.randn(3, 4)
    return {
        "u8": nbtorch.quantize_per_tensor(x, 0.1, 3, nbtorch.quint8),
        "i8": nbtorch.quantize_per_tensor(x, 0.05, -2, nbtorch.qint8),
        "i32": nbtorch.quantize_per_tensor(x * 100, 0.01, 5, nbtorch.qint32),
        "ch": nbtorch.quantize_per_channel(x, nbtorch.tensor([0.1, 0.2, 0.3], dtype=nbtorch.float64),
                                           nbtorch.tensor([0, 1, -1]), 0, nbtorch.qint8),
        "ch1": nbtorch.quantize_per_channel(x, nbtorch.tensor([0.1, 0.2, 0.3, 0.4]),
                                            nbtorch.tensor([0, 1, 2, 3]), 1, nbtorch.quint8),
    }


def _same(a, b):
    assert a.is_quantized and b.is_quantized and str(a.dtype) == str(b.dtype)
    assert tuple(a.shape) == tuple(b.shape) and str(a.qscheme()) == str(b.qscheme())
    assert a.int_repr().tolist() == b.int_repr().tolist()
    if str(a.qscheme()) == "torch.per_tensor_affine":
        assert (a.q_scale(), a.q_zero_point()) == (b.q_scale(), b.q_zero_point())
    else:
        assert a.q_per_channel_scales().tolist() == b.q_per_channel_scales().tolist()
        assert a.q_per_channel_zero_points().tolist() == b.q_per_channel_zero_points().tolist()
        assert a.q_per_channel_axis() == b.q_per_channel_axis()


def test_round_trip_keeps_ints_qparams_and_dtype():
    ts = _tensors()
    ts["view"] = ts["u8"][1:, 2:]
    ts["chview"] = ts["ch"][1:]
    buf = io.BytesIO()
    nbtorch.save(ts, buf)
    buf.seek(0)
    back = nbtorch.load(buf)
    for k, t in ts.items():
        _same(t, back[k])
    assert back["view"]._storage is back["u8"]._storage      # shared storage stays shared
    buf = io.BytesIO()
    nbtorch.save(ts["ch"], buf)                               # a bare quantized tensor
    buf.seek(0)
    _same(ts["ch"], nbtorch.load(buf))


def test_corrupted_qparams_are_refused(tmp_path):
    q = nbtorch.quantize_per_tensor(nbtorch.randn(3), 0.1, 3, nbtorch.quint8)
    q._qparams = (-1.0, 3)
    nbtorch.save(q, tmp_path / "bad.pt")
    with pytest.raises(RuntimeError, match="scale"):
        nbtorch.load(tmp_path / "bad.pt")


def _model():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = tq.QuantStub()
            self.conv = nn.Conv2d(2, 3, 3)
            self.relu = nn.ReLU()
            self.fc = nn.Linear(12, 4)
            self.dequant = tq.DeQuantStub()

        def forward(self, x):
            x = self.relu(self.conv(self.quant(x)))
            return self.dequant(self.fc(x.reshape(x.shape[0], -1)))
    return M()


def _converted(mod, torch_mod):
    m = mod().eval()
    m.qconfig = torch_mod.ao.quantization.get_default_qconfig("x86")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = torch_mod.ao.quantization.prepare(m)
        p(torch_mod.randn(2, 2, 4, 4))
        return torch_mod.ao.quantization.convert(p)


def test_converted_model_state_dict_round_trip(tmp_path):
    nbtorch.manual_seed(0)
    a = _converted(_model, nbtorch)
    nbtorch.save(a.state_dict(), tmp_path / "q.pt")
    nbtorch.manual_seed(1)
    b = _converted(_model, nbtorch)
    b.load_state_dict(nbtorch.load(tmp_path / "q.pt"))
    x = nbtorch.randn(2, 2, 4, 4)
    assert a(x).tolist() == b(x).tolist()
    for k, v in a.state_dict().items():
        w = b.state_dict()[k]
        if getattr(v, "is_quantized", False):
            _same(v, w)


def test_pytorch_reads_nbtorch_quantized_tensors(tmp_path):
    torch = pytest.importorskip("torch")
    ts = _tensors()
    nbtorch.save(ts, tmp_path / "nb.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = torch.load(tmp_path / "nb.pt", weights_only=True)
    for k, t in ts.items():
        _same(t, back[k])


def test_nbtorch_reads_pytorch_quantized_tensors(tmp_path):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = torch.randn(3, 4)
        ts = {"u8": torch.quantize_per_tensor(x, 0.1, 3, torch.quint8),
              "i32": torch.quantize_per_tensor(x, 0.01, -7, torch.qint32),
              "ch": torch.quantize_per_channel(x, torch.tensor([0.1, 0.2, 0.3]),
                                               torch.tensor([0, 1, -1]), 0, torch.qint8)}
        ts["view"] = ts["u8"][1:]
        torch.save(ts, tmp_path / "pt.pt")
    back = nbtorch.load(tmp_path / "pt.pt")
    for k, t in ts.items():
        _same(t, back[k])
    np.testing.assert_array_equal(back["ch"].dequantize().numpy(), ts["ch"].dequantize().numpy())


def _torch_model(torch):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = torch.ao.quantization.QuantStub()
            self.conv = torch.nn.Conv2d(2, 3, 3)
            self.relu = torch.nn.ReLU()
            self.fc = torch.nn.Linear(12, 4)
            self.dequant = torch.ao.quantization.DeQuantStub()

        def forward(self, x):
            x = self.relu(self.conv(self.quant(x)))
            return self.dequant(self.fc(x.reshape(x.shape[0], -1)))
    return M()


def test_converted_state_dicts_cross_load(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    t = _converted(lambda: _torch_model(torch), torch)
    n = _converted(_model, nbtorch)
    assert list(t.state_dict()) == list(n.state_dict())       # PyTorch's keys
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save(t.state_dict(), tmp_path / "pt.pt")
    n.load_state_dict(nbtorch.load(tmp_path / "pt.pt"))
    x = np.random.default_rng(0).standard_normal((2, 2, 4, 4)).astype(np.float32)
    want = t(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(n(nbtorch.from_numpy(x)).numpy(), want, atol=0.02)
    # and back: an nbtorch checkpoint into PyTorch's converted model
    t2 = _converted(lambda: _torch_model(torch), torch)
    nbtorch.save(n.state_dict(), tmp_path / "nb.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t2.load_state_dict(torch.load(tmp_path / "nb.pt", weights_only=True))
    np.testing.assert_array_equal(t2(torch.from_numpy(x)).numpy(), want)


def test_dynamic_linear_state_dict_cross_load(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    t = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(5, 3)))
    n = tq.quantize_dynamic(nn.Sequential(nn.Linear(5, 3)))
    assert list(t.state_dict()) == list(n.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save(t.state_dict(), tmp_path / "pt.pt")
    n.load_state_dict(nbtorch.load(tmp_path / "pt.pt"))
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(n(nbtorch.from_numpy(x)).numpy(),
                               t(torch.from_numpy(x)).numpy(), atol=1e-5)


def test_first_nbtorch_layout_still_loads():
    """Checkpoints from nbtorch's first quantized layout (weight_int8, weight_scale,
    weight_zero_point, bias_) load into today's modules."""
    a = _converted(_model, nbtorch)
    sd = a.state_dict()
    legacy = {k: v for k, v in sd.items() if not k.startswith(("conv.", "fc."))}
    for name in ("conv", "fc"):
        w = getattr(a, name).weight()
        legacy[f"{name}.weight_int8"] = w.int_repr()
        legacy[f"{name}.weight_scale"] = w.q_per_channel_scales()
        legacy[f"{name}.weight_zero_point"] = w.q_per_channel_zero_points()
        legacy[f"{name}.bias_"] = getattr(a, name).bias()
        legacy[f"{name}.scale"] = sd[f"{name}.scale"]
        legacy[f"{name}.zero_point"] = sd[f"{name}.zero_point"]
    nbtorch.manual_seed(3)
    b = _converted(_model, nbtorch)
    b.load_state_dict(legacy)
    x = nbtorch.randn(2, 2, 4, 4)
    assert a(x).tolist() == b(x).tolist()
