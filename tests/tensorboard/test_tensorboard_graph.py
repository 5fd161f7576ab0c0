"""add_graph: the GraphDef built from nbtorch.jit.trace's fx graph, read back."""
import pytest

pytest.importorskip("tensorboard")

import nbtorch  # noqa: E402
import nbtorch.nn as nn  # noqa: E402
import nbtorch.nn.functional as F  # noqa: E402
from nbtorch.utils.tensorboard import SummaryWriter  # noqa: E402


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)) + x)          # the add and relu: Block's scope


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 4, 3)
        self.block = Block()
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.5), nn.Linear(4 * 6 * 6, 10))

    def forward(self, x, unused=None):
        return self.head(F.max_pool2d(self.block(self.stem(x)), 1))


def _graph(tmp_path, read, model, inputs):
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, inputs)
    acc = read(tmp_path)
    assert acc.Tags()["run_metadata"] == ["step1"]
    return {n.name: n for n in acc.Graph().node}


def _shape(node):
    return [[d.size for d in s.dim] for s in node.attr["_output_shapes"].list.shape]


def test_small_cnn_graph(tmp_path, read):
    model = SmallCNN()
    model.train()
    nodes = _graph(tmp_path, read, model, nbtorch.randn(2, 1, 8, 8))
    assert model.training                                   # traced in eval mode, restored
    # input, output; stem 3 (op, weight, bias), block.conv 3, block.bn 6 (op, 2 parameters,
    # 3 buffers), block's add and relu 2, max_pool2d 1, head: Flatten 1, Dropout 1, Linear 3
    assert len(nodes) == 22
    for node in nodes.values():                             # every edge names a node
        assert all(i in nodes for i in node.input), node.name
    assert nodes["input/x"].op == "IO Node" and _shape(nodes["input/x"]) == [[2, 1, 8, 8]]
    stem = nodes["SmallCNN/Conv2d[stem]/stem"]
    assert stem.op == "Conv2d" and _shape(stem) == [[2, 4, 6, 6]]
    assert list(stem.input) == ["input/x", "SmallCNN/Conv2d[stem]/weight",
                                "SmallCNN/Conv2d[stem]/bias"]
    assert b"kernel_size=(3, 3)" in stem.attr["attr"].s
    assert nodes["SmallCNN/Conv2d[stem]/weight"].op == "Parameter"
    assert _shape(nodes["SmallCNN/Conv2d[stem]/weight"]) == [[4, 1, 3, 3]]
    assert nodes["SmallCNN/Block[block]/BatchNorm2d[bn]/running_mean"].op == "Buffer"
    adds = [n for n in nodes.values() if n.op == "operator.add"]
    assert [n.name for n in adds] == ["SmallCNN/Block[block]/add"]
    assert set(adds[0].input) == {"SmallCNN/Block[block]/BatchNorm2d[bn]/block_bn",
                                  "SmallCNN/Conv2d[stem]/stem"}
    pool = [n for n in nodes.values() if "max_pool2d" in n.op]
    assert pool[0].name.startswith("SmallCNN/") and b"1" in pool[0].attr["attr"].s
    linear = nodes["SmallCNN/Sequential[head]/Linear[2]/head_2"]
    assert _shape(linear) == [[2, 10]]
    out = nodes["output/output.1"]
    assert list(out.input) == [linear.name] and _shape(out) == [[2, 10]]


def test_graph_of_tuple_outputs_and_functions(tmp_path, read):
    lstm = nn.LSTM(3, 5, batch_first=True)
    nodes = _graph(tmp_path / "lstm", read, lstm, nbtorch.randn(2, 4, 3))
    assert [n for n in nodes if n.startswith("output/")] == ["output/output.1"]
    assert _shape(nodes["output/output.1"]) == [[2, 4, 5], [1, 2, 5], [1, 2, 5]]  # out, (h, c)
    assert nodes["LSTM/weight_ih_l0"].op == "Parameter" and len(nodes) == 7
    for node in nodes.values():
        assert all(i in nodes for i in node.input), node.name

    def fn(a, b):
        return (a * b).sum(1)
    nodes = _graph(tmp_path / "fn", read, fn, (nbtorch.ones(2, 3), nbtorch.ones(2, 3)))
    assert set(nodes) == {"input/a", "input/b", "fn/mul", "fn/sum_1", "output/output.1"}
    assert nodes["fn/sum_1"].op == "Tensor.sum"


def test_untraceable_model_raises(tmp_path, capsys):
    class Bad(nn.Module):
        def forward(self, x):
            raise RuntimeError("cannot run")
    with SummaryWriter(tmp_path) as w, pytest.raises(RuntimeError, match="cannot run"):
        w.add_graph(Bad(), nbtorch.ones(1))
    assert "No graph saved" in capsys.readouterr().out


def test_onnx_graph(tmp_path, read):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    weight = helper.make_tensor("w", TensorProto.FLOAT, [3, 2], [0.0] * 6)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 2])], [weight])
    onnx.save(helper.make_model(graph), str(tmp_path / "m.onnx"))
    with SummaryWriter(tmp_path / "run") as w:
        w.add_onnx_graph(str(tmp_path / "m.onnx"))
    nodes = {n.name: n for n in read(tmp_path / "run").Graph().node}
    assert {k: (v.op, list(v.input)) for k, v in nodes.items()} == {
        "w": ("Const", []), "x": ("Variable", []), "y": ("MatMul", ["x", "w"]),
        "z": ("Relu", ["y"]), "output/z": ("Variable", ["z"])}
    assert [d.size for d in nodes["x"].attr["shape"].shape.dim] == [1, 3]
