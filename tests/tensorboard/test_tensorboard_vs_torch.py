"""The same logging program under PyTorch's SummaryWriter and nbtorch's: the events
TensorBoard reads back agree (values, buckets, decoded pixels, plugin data, files).

The GraphDefs differ by design (PyTorch's lists aten ops and constants, nbtorch's the
fx graph's module and function calls); their module scopes agree.
"""
import io
import os

import numpy as np
import pytest

pytest.importorskip("tensorboard")
torch = pytest.importorskip("torch")
pytest.importorskip("torch.utils.tensorboard")

import nbtorch  # noqa: E402
from nbtorch.utils.tensorboard import SummaryWriter  # noqa: E402


def _program(T, writer_cls, logdir):
    rng = np.random.RandomState(0)
    values = rng.randn(500).astype(np.float32)
    img = rng.rand(3, 5, 6).astype(np.float32)
    with writer_cls(str(logdir)) as w:
        for step in range(3):
            w.add_scalar("loss", T.tensor(0.5 + step), step, walltime=1.0)
            w.add_scalars("group", {"a": step, "b": -step}, step, walltime=1.0)
        w.add_scalar("new", 0.25, 0, walltime=1.0, new_style=True, double_precision=True)
        w.add_histogram("tf", T.tensor(values), 1, walltime=1.0)
        w.add_histogram("fd", values, 1, bins="fd", walltime=1.0, max_bins=7)
        w.add_image("chw", T.tensor(img), 0, walltime=1.0)
        w.add_image("hw", img[0], 0, walltime=1.0, dataformats="HW")
        w.add_image("u8", (img * 255).astype(np.uint8).transpose(1, 2, 0), 0, walltime=1.0,
                    dataformats="HWC")
        w.add_images("batch", rng.rand(9, 1, 3, 4), 0, walltime=1.0)
        w.add_text("note", "*markdown* text", 2, walltime=1.0)
        w.add_pr_curve("pr", rng.randint(0, 2, 50), rng.rand(50), 0, walltime=1.0,
                       num_thresholds=20)
        w.add_custom_scalars({"c": {"m": ["Multiline", ["loss"]],
                                    "g": ["Margin", ["a", "b", "c"]]}})
        w.add_audio("snd", rng.uniform(-1, 1, 300), 0, sample_rate=1000, walltime=1.0)
        w.add_mesh("mesh", T.tensor(rng.rand(1, 4, 3)), faces=T.tensor([[[0, 1, 2]]]),
                   global_step=0, walltime=1.0)
        w.add_hparams({"lr": 0.01, "layers": 3, "act": "relu", "flag": True},
                      {"hp/acc": 0.75}, hparam_domain_discrete={"act": ["relu", "gelu"]},
                      run_name="hp")
        w.add_embedding(T.tensor(rng.randn(4, 2)), metadata=["a", "b", "c", "d"],
                        label_img=T.tensor(rng.rand(4, 3, 2, 2)), tag="emb")


@pytest.fixture
def runs(tmp_path, read):
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    _program(torch, TorchWriter, tmp_path / "torch")
    _program(nbtorch, SummaryWriter, tmp_path / "nbtorch")
    return tmp_path / "torch", tmp_path / "nbtorch"


def _pixels(png):
    Image = pytest.importorskip("PIL.Image")
    return np.asarray(Image.open(io.BytesIO(png)))


def test_events_agree_with_pytorch(runs, read):
    from tensorboard.util import tensor_util
    ref, got = read(runs[0]), read(runs[1])
    assert got.Tags() == ref.Tags()
    assert ref.Scalars("loss") == got.Scalars("loss")
    for tag in ("tf", "fd"):
        assert ref.Histograms(tag) == got.Histograms(tag)
    for tag in ref.Tags()["images"]:
        a, b = ref.Images(tag)[0], got.Images(tag)[0]
        assert (a.width, a.height) == (b.width, b.height)
        assert np.array_equal(_pixels(a.encoded_image_string), _pixels(b.encoded_image_string))
    for tag in ref.Tags()["tensors"]:
        a, b = ref.Tensors(tag)[0], got.Tensors(tag)[0]
        assert a.step == b.step
        assert np.array_equal(tensor_util.make_ndarray(a.tensor_proto),
                              tensor_util.make_ndarray(b.tensor_proto)), tag
        assert ref.SummaryMetadata(tag) == got.SummaryMetadata(tag), tag
    assert ref.Audio("snd") == got.Audio("snd")


def test_files_and_plugin_data_agree_with_pytorch(runs, read):
    def listing(root):
        return sorted(os.path.relpath(os.path.join(d, f), root).split(os.sep)[:-1] + [f[:6]]
                      for d, _, files in os.walk(root) for f in files)
    assert listing(runs[0]) == listing(runs[1])
    for sub in ("group_a", "group_b"):
        assert read(runs[0] / sub).Scalars("group") == read(runs[1] / sub).Scalars("group")
    ref, got = read(runs[0] / "hp"), read(runs[1] / "hp")
    assert ref.PluginTagToContent("hparams") == got.PluginTagToContent("hparams")
    assert ref.Scalars("hp/acc")[0].value == got.Scalars("hp/acc")[0].value
    for name in ("projector_config.pbtxt", "00000/emb/tensors.tsv", "00000/emb/metadata.tsv"):
        assert (runs[0] / name).read_text() == (runs[1] / name).read_text(), name
    assert np.array_equal(_pixels((runs[0] / "00000/emb/sprite.png").read_bytes()),
                          _pixels((runs[1] / "00000/emb/sprite.png").read_bytes()))


def _scopes(graph_def):
    """The module scopes of a GraphDef: name prefixes ending in ``Class[attr]``."""
    found = set()
    for node in graph_def.node:
        parts = node.name.split("/")
        for i, part in enumerate(parts):
            if part.endswith("]"):
                found.add("/".join(parts[:i + 1]))
    return found


@pytest.mark.filterwarnings("ignore::DeprecationWarning")     # torch.jit.trace's own
def test_graph_scopes_agree_with_pytorch(tmp_path, read):
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    def build(T):
        class Block(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = T.nn.Conv2d(2, 2, 3, padding=1)
                self.bn = T.nn.BatchNorm2d(2)

            def forward(self, x):
                return T.relu(self.bn(self.conv(x)) + x)

        class Net(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = T.nn.Conv2d(1, 2, 3)
                self.block = Block()
                self.head = T.nn.Sequential(T.nn.Flatten(), T.nn.Linear(2 * 4 * 4, 3))

            def forward(self, x):
                return self.head(self.block(self.stem(x)))
        return Net()

    for T, cls, name in ((torch, TorchWriter, "torch"), (nbtorch, SummaryWriter, "nbtorch")):
        with cls(str(tmp_path / name)) as w:
            w.add_graph(build(T), T.zeros(1, 1, 6, 6))
    ref, got = read(tmp_path / "torch").Graph(), read(tmp_path / "nbtorch").Graph()
    assert _scopes(ref) == _scopes(got)
    assert {"Net/Block[block]/Conv2d[conv]", "Net/Sequential[head]/Linear[1]"} <= _scopes(got)
    outs = [n for n in got.node if n.name.startswith("output/")]
    ref_outs = [n for n in ref.node if n.name.startswith("output/")]
    assert [o.attr["_output_shapes"] for o in outs] == [o.attr["_output_shapes"] for o in ref_outs]
