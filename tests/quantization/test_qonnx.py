"""ONNX export of a converted (static) quantized model in QDQ format, run by onnxruntime:
within one output quantization step of nbtorch's int8 kernels (bit-equal on these
inputs); dynamically quantized layers are refused, as in PyTorch."""
import sys

import numpy as np
import pytest

import nbtorch as torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_qjit import _dynamic, _residual, _static  # noqa: E402

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")


def test_export_static_qdq(tmp_path):
    q = _static()
    path = tmp_path / "q.onnx"
    torch.onnx.export(q, (torch.randn(2, 2, 6, 6),), path, dynamic_axes={"x": {0: "n"}},
                      input_names=["x"])
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear", "Conv", "MatMul"} <= ops
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    step = q.fc.scale                    # one step of the last quantized layer's output
    for batch in (2, 5):
        x = torch.randn(batch, 2, 6, 6) * 2
        got = sess.run(None, {"x": x.numpy()})[0]
        np.testing.assert_allclose(got, q(x).numpy(), rtol=0, atol=step * 1.01)


def test_export_residual_qdq(tmp_path):
    """Unfused ReLU, max/avg pooling and a quantized add: each layer within one step of
    nbtorch's integer rounding, so a few steps at the output."""
    q = _residual()
    path = tmp_path / "r.onnx"
    torch.onnx.export(q, (torch.randn(2, 2, 8, 8),), path, input_names=["x"])
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    torch.manual_seed(3)
    for _ in range(3):
        x = torch.randn(2, 2, 8, 8)
        got = sess.run(None, {"x": x.numpy()})[0]
        np.testing.assert_allclose(got, q(x).numpy(), rtol=0, atol=q.fc.scale * 4.01)


def test_export_dynamic_refused(tmp_path):
    with pytest.raises(RuntimeError, match="dynamically quantized Linear"):
        torch.onnx.export(_dynamic(), (torch.randn(3, 6),), tmp_path / "d.onnx")


def test_export_layers_qdq(tmp_path):
    from test_qjit import _layers, _Wrap
    for i, (layer, shape) in enumerate(_layers()):
        m = _Wrap(layer).eval()
        x = torch.randn(*shape)
        torch.onnx.export(m, (x,), tmp_path / f"{i}.onnx", input_names=["x"])
        sess = ort.InferenceSession(str(tmp_path / f"{i}.onnx"),
                                    providers=["CPUExecutionProvider"])
        got = sess.run(None, {"x": x.numpy()})[0]
        q = m.m(torch.quantize_per_tensor(x, 0.05, 128, torch.quint8))
        step = q.q_scale()
        np.testing.assert_allclose(got, m(x).numpy(), rtol=0, atol=step * 1.01,
                                   err_msg=type(layer).__name__)
