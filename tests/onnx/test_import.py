"""nbtorch.onnx.load: ONNX models (exported by nbtorch or PyTorch) run on nbtorch's kernels,
checked against onnxruntime; bad files are clear errors and nothing runs."""
import io
import warnings

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch.onnx.importer import OnnxImportError

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear")
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        x = F.pad(self.up(x), (1, 1, 1, 1), mode="reflect")
        return F.log_softmax(self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1)), -1)


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.rnn = nn.LSTM(8, 6, num_layers=2, bidirectional=True)
        self.gru = nn.GRU(12, 4)
        self.out = nn.Linear(4, 20)

    def forward(self, tokens):
        h, _ = self.rnn(self.emb(tokens))
        return self.out(self.gru(h)[0])


class Geometry(nn.Module):
    """grid_sample, cdist and cosine_similarity: symbolics of their own."""

    def forward(self, img, grid):
        warped = F.grid_sample(img, grid, padding_mode="border", align_corners=False)
        rows = warped.flatten(2)                               # (N, C, H*W)
        return torch.cdist(rows, rows.flip(1)) + F.cosine_similarity(rows, rows.flip(1),
                                                                      dim=2).unsqueeze(2)


MODELS = {
    "geometry": (Geometry, lambda: (torch.randn(2, 3, 6, 7), torch.rand(2, 4, 5, 2) * 2 - 1)),
    "cnn": (CNN, lambda: (torch.randn(2, 3, 8, 8),)),
    "lstm_lm": (LM, lambda: (torch.randint(0, 20, (5, 2)),)),
    "transformer": (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2),
                    lambda: (torch.randn(5, 2, 8),)),
    "attention": (lambda: nn.MultiheadAttention(8, 2),
                  lambda: (torch.randn(4, 2, 8), torch.randn(5, 2, 8), torch.randn(5, 2, 8))),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_roundtrip_matches_onnxruntime(ort_run, name):
    torch.manual_seed(0)
    make, data = MODELS[name]
    model, args = make().eval(), data()
    proto = torch.onnx.export(model, args, None)
    feeds = {i.name: a.numpy() for i, a in zip(proto.graph.input, args)}
    want = ort_run(proto, feeds)
    loaded = torch.onnx.load(proto.SerializeToString())
    got = loaded(*args)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-5)


def test_loaded_module_state_and_keywords(tmp_path):
    lin = nn.Linear(3, 2).eval()
    path = tmp_path / "lin.onnx"
    torch.onnx.export(lin, (torch.randn(1, 3),), str(path), input_names=["x"],
                      dynamic_axes={"x": {0: "n"}})
    m = torch.onnx.load(path)
    assert len(m.state_dict()) == 2
    x = torch.randn(4, 3)
    np.testing.assert_allclose(m(x=x).numpy(), lin(x).detach().numpy(), rtol=1e-5)
    with pytest.raises(TypeError, match="missing input 'x'"):
        m()


def test_model_exported_by_pytorch_runs_on_nbtorch(ort_run):
    real = pytest.importorskip("torch")
    real.manual_seed(0)
    net = real.nn.Sequential(real.nn.Conv2d(3, 4, 3, padding=1), real.nn.BatchNorm2d(4),
                             real.nn.ReLU(), real.nn.MaxPool2d(2), real.nn.Flatten(),
                             real.nn.Linear(16, 5), real.nn.Softmax(-1)).eval()
    x = real.randn(2, 3, 4, 4)
    buf = io.BytesIO()
    with warnings.catch_warnings():            # PyTorch deprecates its TorchScript exporter
        warnings.simplefilter("ignore", DeprecationWarning)
        real.onnx.export(net, (x,), buf, dynamo=False, input_names=["x"])
    m = torch.onnx.load(buf.getvalue())
    want = ort_run(buf.getvalue(), {"x": x.numpy()})[0]
    np.testing.assert_allclose(m(torch.tensor(x.numpy())).numpy(), want, rtol=1e-4,
                               atol=1e-6)


def _tiny_model(op_type="Relu", domain=""):
    from onnx import TensorProto, helper
    node = helper.make_node(op_type, ["x"], ["y"], domain=domain)
    graph = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain
                                              else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def test_bad_files_are_clear_errors(tmp_path):
    data = _tiny_model().SerializeToString()
    assert torch.onnx.load(data)(torch.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
    with pytest.raises(OnnxImportError, match="malformed or truncated|no ONNX graph"):
        torch.onnx.load(data[: len(data) // 2])
    with pytest.raises(OnnxImportError):
        torch.onnx.load(b"\x00\x01 definitely not protobuf \xff" * 3)
    with pytest.raises(OnnxImportError, match="cannot run: NonMaxSuppression"):
        torch.onnx.load(_tiny_model("NonMaxSuppression"))
    with pytest.raises(OnnxImportError, match="cannot run: MyOp"):
        torch.onnx.load(_tiny_model("MyOp", "com.example"))
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    with pytest.raises(OnnxImportError):
        torch.onnx.load(path)


def test_external_weights_are_read_from_the_model_folder(tmp_path):
    import onnx
    lin = nn.Linear(40, 30).eval()
    proto = torch.onnx.export(lin, (torch.randn(2, 40),), None)
    path = tmp_path / "ext.onnx"
    onnx.save_model(proto, str(path), save_as_external_data=True, location="weights.bin",
                    size_threshold=0)
    x = torch.randn(3, 40)
    np.testing.assert_allclose(torch.onnx.load(path)(x).numpy(), lin(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(OnnxImportError, match="external"):
        torch.onnx.load(path.read_bytes())
    (tmp_path / "weights.bin").unlink()
    with pytest.raises(OnnxImportError, match="external weights"):
        torch.onnx.load(path)


def test_pytorch_exported_sequence_models_run_on_nbtorch(ort_run):
    real = pytest.importorskip("torch")
    real.manual_seed(0)

    class LM(real.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = real.nn.Embedding(30, 8)
            self.rnn = real.nn.LSTM(8, 16, num_layers=2, bidirectional=True)
            self.gru = real.nn.GRU(32, 8)
            self.out = real.nn.Linear(8, 30)

        def forward(self, t):
            return self.out(self.gru(self.rnn(self.emb(t))[0])[0]).log_softmax(-1)
    enc = real.nn.TransformerEncoder(real.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True),
                                     2, enable_nested_tensor=False)
    up = real.nn.Sequential(real.nn.Upsample(scale_factor=2, mode="bilinear"),
                            real.nn.ConvTranspose2d(3, 2, 2, stride=2),
                            real.nn.Upsample(scale_factor=2))
    for model, x in ((LM(), real.randint(0, 30, (7, 3))), (enc, real.randn(2, 5, 16)),
                     (up, real.randn(1, 3, 4, 4))):
        buf = io.BytesIO()
        with warnings.catch_warnings():        # PyTorch deprecates its TorchScript exporter
            warnings.simplefilter("ignore")
            real.onnx.export(model.eval(), (x,), buf, dynamo=False, input_names=["x"])
        want = ort_run(buf.getvalue(), {"x": x.numpy()})[0]
        got = torch.onnx.load(buf.getvalue())(torch.tensor(x.numpy()))
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
