"""nbtorch.onnx.export's API: files, names, dynamic axes, opsets, export_params, constant
folding, training modes, unsupported ops, the optional dependency, and models people ship
(the demo CNN, a PyTorch checkpoint) checked against onnxruntime and PyTorch's exporter."""
import importlib.util
import io
import warnings
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn as nn
import nbtorch.nn.functional as F

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[2]


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(self.drop(F.gelu(self.fc1(x)))).softmax(-1)


def test_writes_path_and_file_with_names_and_dynamic_axes(tmp_path, ort_run):
    import onnx
    torch.manual_seed(0)
    model = Small()
    x = torch.randn(2, 4)
    path = tmp_path / "small.onnx"
    torch.onnx.export(model, (x,), str(path), input_names=["features"],
                      output_names=["probs"], dynamic_axes={"features": {0: "batch"},
                                                            "probs": {0: "batch"}})
    buf = io.BytesIO()
    torch.onnx.export(model, x, buf, input_names=["features"], output_names=["probs"],
                      dynamic_axes={"features": [0], "probs": [0]})
    for data in (path.read_bytes(), buf.getvalue()):
        proto = onnx.load_model_from_string(data)
        onnx.checker.check_model(proto, full_check=True)
        assert [i.name for i in proto.graph.input] == ["features"]
        assert [o.name for o in proto.graph.output] == ["probs"]
        dim0 = proto.graph.input[0].type.tensor_type.shape.dim[0]
        assert dim0.dim_param and not dim0.dim_value
        assert {i.name for i in proto.graph.initializer} >= {"fc1.weight", "fc2.bias"}
        x7 = torch.randn(7, 4)
        got = ort_run(data, {"features": x7.numpy()})[0]
        np.testing.assert_allclose(got, model.eval()(x7).detach().numpy(), rtol=1e-4,
                                   atol=1e-6)
    assert model.training is False            # eval() above; export restores the mode


@pytest.mark.parametrize("opset", [17, 18, 21, 23])
def test_opsets(check, opset):
    fn = nn.Sequential(nn.Conv2d(2, 3, 3), nn.GroupNorm(1, 3), nn.Flatten(), nn.Linear(12, 2))
    proto = check(fn, (torch.randn(2, 2, 4, 4),), others=[(torch.randn(3, 2, 4, 4),)],
                  opset_version=opset)
    assert proto.opset_import[0].version == opset


def test_unsupported_opset_is_a_value_error():
    with pytest.raises(ValueError, match="opset_version 17 to"):
        torch.onnx.export(nn.ReLU(), torch.randn(2), None, opset_version=11)


def test_export_params_false_and_initializers_as_inputs(ort_run):
    torch.manual_seed(0)
    model = Small().eval()
    x = torch.randn(2, 4)
    proto = torch.onnx.export(model, (x,), None, export_params=False, input_names=["x"])
    assert not [t for t in proto.graph.initializer if t.name.startswith("fc")]
    names = [i.name for i in proto.graph.input]
    assert names[0] == "x" and "fc1.weight" in names
    feeds = {"x": x.numpy()}
    feeds.update({k: v.detach().numpy() for k, v in model.state_dict().items() if k in names})
    np.testing.assert_allclose(ort_run(proto, feeds)[0], model(x).detach().numpy(), rtol=1e-4)
    kept = torch.onnx.export(model, (x,), None, keep_initializers_as_inputs=True)
    assert {t.name for t in kept.graph.initializer} <= {i.name for i in kept.graph.input}


def test_constant_folding_off_and_on(check):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4, 4))

        def forward(self, x):
            return x @ (self.w.t() * 2 + torch.ones(4, 4))
    folded = check(M(), (torch.randn(2, 4),))
    unfolded = check(M(), (torch.randn(2, 4),), do_constant_folding=False)
    assert len(folded.graph.node) < len(unfolded.graph.node)


def test_training_modes():
    model = Small().train()
    proto = torch.onnx.export(model, torch.randn(2, 4), None)
    assert "Dropout" not in {n.op_type for n in proto.graph.node}
    assert model.training                     # restored
    proto = torch.onnx.export(model, torch.randn(2, 4), None,
                              training=torch.onnx.TrainingMode.TRAINING)
    assert "Dropout" in {n.op_type for n in proto.graph.node}


def test_unsupported_op_names_it():
    class M(nn.Module):
        def forward(self, x):
            return torch.linalg.det(x)
    with pytest.raises(torch.onnx.UnsupportedOperatorError, match="'det'"):
        torch.onnx.export(M(), torch.randn(2, 3, 3), None)


def test_stored_function_exports_and_lost_data_flow_is_refused(check):
    class StoredFunction(nn.Module):
        def __init__(self):
            super().__init__()
            self.act = F.relu                # recorded: the tracer patches module attributes
            self.fc = nn.Linear(3, 3)

        def forward(self, x):
            return self.act(self.fc(x)) * 2
    check(StoredFunction(), (torch.randn(2, 3),), [(torch.randn(5, 3),)])

    class HiddenFunction(StoredFunction):
        def __init__(self):
            super().__init__()
            self.acts = [F.relu]             # inside a container: the tracer does not see it

        def forward(self, x):
            return self.acts[0](self.fc(x)) * 2
    with pytest.raises(torch.onnx.UnsupportedOperatorError, match="lost the data flow"):
        torch.onnx.export(HiddenFunction(), torch.randn(2, 3), None)


def test_is_in_onnx_export_and_traced_input(check):
    seen = []

    class M(nn.Module):
        def forward(self, x):
            seen.append(torch.onnx.is_in_onnx_export())
            return x.relu() * 2
    check(M(), (torch.randn(3, 2),))
    assert seen[0] is True and not torch.onnx.is_in_onnx_export()
    traced = torch.jit.trace(Small().eval(), torch.randn(2, 4))
    check(traced, (torch.randn(2, 4),), others=[(torch.randn(5, 4),)])


def test_import_without_onnx_then_clear_error():
    code = ("import sys; sys.modules['onnx'] = None\n"
            "import nbtorch, nbtorch.onnx\n"
            "try:\n"
            "    nbtorch.onnx.export(nbtorch.nn.ReLU(), nbtorch.randn(2), 'x.onnx')\n"
            "except ImportError as e:\n"
            "    print('IMPORT-ERROR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=str(ROOT))
    assert "IMPORT-ERROR" in out.stdout and "nbtorch[onnx]" in out.stdout, out.stderr


def test_demo_cnn_dynamic_batch(check):
    spec = importlib.util.spec_from_file_location("nbtorch_demo_onnx",
                                                  ROOT / "examples" / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    torch.manual_seed(0)
    check(demo.DigitsCNN(), (torch.randn(2, 1, 8, 8),), others=[(torch.randn(9, 1, 8, 8),)])


def test_pytorch_checkpoint_and_pytorch_exporter_agree(tmp_path, ort_run):
    real = pytest.importorskip("torch")
    real.manual_seed(0)

    def build(lib):
        return lib.nn.Sequential(lib.nn.Conv2d(3, 6, 3, padding=1), lib.nn.BatchNorm2d(6),
                                 lib.nn.ReLU(), lib.nn.AdaptiveAvgPool2d(1), lib.nn.Flatten(),
                                 lib.nn.Linear(6, 4), lib.nn.LogSoftmax(-1))
    theirs = build(real).eval()
    for name, buf in theirs.named_buffers():
        if "running" in name:
            buf.uniform_(0.5, 1.5)
    ckpt = tmp_path / "model.pt"
    real.save(theirs.state_dict(), ckpt)
    ours = build(torch)
    ours.load_state_dict(torch.load(ckpt))
    ours.eval()
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype(np.float32)
    mine = torch.onnx.export(ours, (torch.tensor(x),), None, input_names=["x"])
    buf = io.BytesIO()
    with warnings.catch_warnings():            # PyTorch deprecates its TorchScript exporter
        warnings.simplefilter("ignore", DeprecationWarning)
        real.onnx.export(theirs, (real.tensor(x),), buf, dynamo=False, input_names=["x"])
    a = ort_run(mine, {"x": x})[0]
    b = ort_run(buf.getvalue(), {"x": x})[0]
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    with real.no_grad():
        np.testing.assert_allclose(a, theirs(real.tensor(x)).numpy(), rtol=1e-4, atol=1e-6)


def test_lstm_language_model_agrees_with_pytorch_export(tmp_path, ort_run):
    real = pytest.importorskip("torch")
    real.manual_seed(0)

    def build(lib):
        class LM(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = lib.nn.Embedding(30, 8)
                self.rnn = lib.nn.LSTM(8, 16, num_layers=2, bidirectional=True)
                self.out = lib.nn.Linear(32, 30)

            def forward(self, tokens):
                h, _ = self.rnn(self.emb(tokens))
                return self.out(h).log_softmax(-1)
        return LM()
    theirs = build(real).eval()
    real.save(theirs.state_dict(), tmp_path / "lm.pt")
    ours = build(torch)
    ours.load_state_dict(torch.load(tmp_path / "lm.pt"))
    ours.eval()
    tokens = np.random.default_rng(0).integers(0, 30, (7, 3))
    mine = torch.onnx.export(ours, (torch.tensor(tokens),), None, input_names=["t"],
                             dynamic_axes={"t": {0: "time", 1: "batch"}})
    buf = io.BytesIO()
    with warnings.catch_warnings():            # PyTorch deprecates its TorchScript exporter
        warnings.simplefilter("ignore")
        real.onnx.export(theirs, (real.tensor(tokens),), buf, dynamo=False,
                         input_names=["t"], dynamic_axes={"t": {0: "time", 1: "batch"}})
    for t in (tokens, np.random.default_rng(1).integers(0, 30, (4, 5))):
        a = ort_run(mine, {"t": t})[0]
        b = ort_run(buf.getvalue(), {"t": t})[0]
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_custom_op_symbolic(check):
    class M(nn.Module):
        def forward(self, x):
            return x.cumprod(1)
    with pytest.raises(torch.onnx.UnsupportedOperatorError, match="'cumprod'"):
        torch.onnx.export(M(), torch.rand(2, 3) + 0.5, None)

    def cumprod(e, out, x, dim, dtype=None):     # exact enough for positive inputs
        axis = e.g.const(np.int64(dim))
        return e.g.op("Exp", e.g.op("CumSum", e.g.op("Log", e.name(x)), axis))
    torch.onnx.register_custom_op_symbolic("aten::cumprod", cumprod, 17)
    try:
        check(M(), (torch.rand(2, 3) + 0.5,), others=[(torch.rand(4, 3) + 0.5,)])
    finally:
        torch.onnx.unregister_custom_op_symbolic("aten::cumprod", 17)


def test_nested_inputs_tuple_state_and_dict_kwargs(ort_run):
    lstm = nn.LSTM(3, 4, num_layers=2).eval()
    x, h, c = torch.randn(5, 2, 3), torch.randn(2, 2, 4), torch.randn(2, 2, 4)
    proto = torch.onnx.export(lstm, (x, (h, c)), None, input_names=["x", "h0", "c0"],
                              output_names=["y", "hn", "cn"])
    got = ort_run(proto, {"x": x.numpy(), "h0": h.numpy(), "c0": c.numpy()})
    y, (hn, cn) = lstm(x, (h, c))
    for g, w in zip(got, (y, hn, cn)):
        np.testing.assert_allclose(g, w.detach().numpy(), rtol=1e-4, atol=1e-5)

    class Scaled(nn.Module):
        def forward(self, a, scale=None):
            return a * scale["s"] + scale["t"]
    a, s, t = torch.randn(2), torch.randn(2), torch.randn(2)
    proto = torch.onnx.export(Scaled(), (a, {"scale": {"s": s, "t": t}}), None)
    names = [i.name for i in proto.graph.input]
    got = ort_run(proto, dict(zip(names, (a.numpy(), s.numpy(), t.numpy()))))[0]
    np.testing.assert_allclose(got, (a * s + t).numpy(), rtol=1e-6)


def test_transformer_encoder_agrees_with_pytorch_export(ort_run):
    real = pytest.importorskip("torch")
    real.manual_seed(0)

    def build(lib):
        layer = lib.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True)
        return lib.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    theirs = build(real).eval()
    ours = build(torch)
    ours.load_state_dict({k: torch.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    ours.eval()
    x = np.random.default_rng(0).standard_normal((2, 5, 16)).astype(np.float32)
    mine = torch.onnx.export(ours, (torch.tensor(x),), None, input_names=["x"],
                             dynamic_axes={"x": {0: "batch", 1: "time"}})
    buf = io.BytesIO()
    with warnings.catch_warnings():            # PyTorch deprecates its TorchScript exporter
        warnings.simplefilter("ignore")
        real.onnx.export(theirs, (real.tensor(x),), buf, dynamo=False, input_names=["x"])
    np.testing.assert_allclose(ort_run(mine, {"x": x})[0], ort_run(buf.getvalue(), {"x": x})[0],
                               rtol=1e-4, atol=1e-5)
    # nbtorch's export keeps batch and length dynamic (PyTorch's TorchScript export of this
    # model bakes them into its reshapes)
    x2 = np.random.default_rng(1).standard_normal((3, 7, 16)).astype(np.float32)
    with real.no_grad():
        want = theirs(real.tensor(x2)).numpy()
    np.testing.assert_allclose(ort_run(mine, {"x": x2})[0], want, rtol=1e-4, atol=1e-5)


def test_plain_function_with_captured_tensor(ort_run):
    w = torch.randn(2, 2)

    def f(x):
        return (x.relu() @ w + torch.tensor([1.0, 2.0])).sum(-1)
    x = torch.randn(3, 2)
    proto = torch.onnx.export(f, (x,), None, input_names=["x"])
    np.testing.assert_allclose(ort_run(proto, {"x": x.numpy()})[0], f(x).numpy(), rtol=1e-5)


def test_dynamo_export_returns_an_onnx_program_and_takes_export_style_arguments(tmp_path):
    """PyTorch 2.13's `torch.onnx.export(..., dynamo=True)`: an ONNXProgram (.save,
    .model_proto, callable), dynamic_shapes with Dims, an ExportedProgram as the model."""
    import onnxruntime as ort
    from nbtorch.export import Dim
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).eval()
    x, x7 = torch.randn(3, 4), torch.randn(7, 4)
    program = torch.onnx.export(m, (x,), dynamo=True,
                                dynamic_shapes={"input": {0: Dim("batch")}})
    path = tmp_path / "m.onnx"
    program.save(path)
    sess = ort.InferenceSession(str(path))
    assert sess.get_inputs()[0].shape == ["batch", 4]
    got = sess.run(None, {"input": x7.numpy()})[0]
    np.testing.assert_allclose(got, m(x7).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(program(x7)[0].detach().numpy(), got, rtol=1e-5, atol=1e-6)
    ep = torch.export.export(m, (x,), dynamic_shapes={"input": {0: Dim("batch")}})
    from_ep = torch.onnx.export(ep, dynamo=True, dynamic_shapes={"input": {0: Dim("batch")}})
    assert from_ep.exported_program is ep
    assert [d.dim_param for d in from_ep.model_proto.graph.input[0].type.tensor_type.shape.dim
            ][:1] == ["batch"]
    assert isinstance(torch.onnx.export(m, (x,)), type(program.model_proto))  # dynamo=False
