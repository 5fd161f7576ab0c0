"""SummaryWriter: scalars, histograms, text, hparams, PR curves, tensors and the other
summaries, read back with tensorboard's EventAccumulator."""
import os

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import nbtorch  # noqa: E402
from nbtorch.utils.tensorboard import SummaryWriter  # noqa: E402


def test_scalars_steps_values_and_inputs(tmp_path, read):
    x = nbtorch.tensor([2.0], requires_grad=True)
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("loss", x * 3, 0)                  # requires grad: detached
        w.add_scalar("loss", np.float32(1.5), 1)
        w.add_scalar("loss", 7, 2, walltime=123.0)
        w.add_scalar("loss", np.array([[0.25]]), 3)
        w.add_scalar("new", 0.1, 0, new_style=True)
        w.add_scalar("double", 0.1, 0, new_style=True, double_precision=True)
    acc = read(tmp_path)
    events = acc.Scalars("loss")
    assert [(e.step, e.value) for e in events] == [(0, 6.0), (1, 1.5), (2, 7.0), (3, 0.25)]
    assert events[2].wall_time == 123.0
    from tensorboard.util import tensor_util
    new = acc.Tensors("new")[0].tensor_proto
    double = acc.Tensors("double")[0].tensor_proto
    assert new.dtype == 1 and tensor_util.make_ndarray(new) == np.float32(0.1)   # DT_FLOAT
    assert double.dtype == 2 and tensor_util.make_ndarray(double) == 0.1         # DT_DOUBLE
    assert acc.SummaryMetadata("new").plugin_data.plugin_name == "scalars"
    with pytest.raises(AssertionError, match="one element"):
        SummaryWriter(tmp_path / "bad").add_scalar("x", nbtorch.ones(2))


def test_add_scalars_writes_one_run_per_tag(tmp_path, read):
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalars("run/loss", {"train": step, "val": 2 * step}, step)
    assert {"run_loss_train", "run_loss_val"} <= set(os.listdir(tmp_path))
    val = read(tmp_path / "run_loss_val").Scalars("run/loss")
    assert [(e.step, e.value) for e in val] == [(0, 0.0), (1, 2.0), (2, 4.0)]


def _reference_histogram(values, edges):
    """np.histogram, trimmed to the non-empty range plus one empty bucket before it."""
    counts, limits = np.histogram(values, bins=edges)
    nz = np.flatnonzero(counts)
    lo, hi = nz[0], nz[-1]
    if lo > 0:
        return limits[lo:hi + 2], counts[lo - 1:hi + 1]
    return limits[:hi + 2], np.concatenate([[0], counts[:hi + 1]])


def test_histograms_default_and_numpy_bins(tmp_path, read):
    values = np.random.RandomState(0).randn(1000)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("tf", nbtorch.tensor(values), 5)
        w.add_histogram("auto", values, 5, bins="auto")
        w.add_histogram("ten", values.astype(np.float32), 5, bins=10, max_bins=4)
        w.add_histogram_raw("raw", min=0.0, max=3.0, num=6, sum=9.0, sum_squares=19.0,
                            bucket_limits=[1.0, 2.0, 3.0], bucket_counts=[1, 2, 3],
                            global_step=1)
        with pytest.raises(ValueError, match="bucket_limits"):
            w.add_histogram_raw("bad", 0, 1, 1, 1, 1, [1.0], [1, 2])
        with pytest.raises(ValueError, match="no element"):
            w.add_histogram("empty", np.zeros(0))
    acc = read(tmp_path)
    tf = acc.Histograms("tf")[0]
    assert tf.step == 5
    h = tf.histogram_value
    assert (h.num, h.min, h.max) == (1000, values.min(), values.max())
    assert h.sum == pytest.approx(values.sum())
    assert h.sum_squares == pytest.approx((values ** 2).sum())
    from nbtorch.utils.tensorboard.writer import _tensorflow_bins
    limits, counts = _reference_histogram(values, _tensorflow_bins())
    assert np.allclose(h.bucket_limit, limits) and list(h.bucket) == counts.tolist()
    assert sum(h.bucket) == 1000 and len(_tensorflow_bins()) == 1 + 2 * 774
    auto = acc.Histograms("auto")[0].histogram_value
    limits, counts = _reference_histogram(values, np.histogram_bin_edges(values, "auto"))
    assert np.allclose(auto.bucket_limit, limits) and list(auto.bucket) == counts.tolist()
    ten = acc.Histograms("ten")[0].histogram_value          # 10 bins merged in pairs
    counts, limits = np.histogram(values.astype(np.float32).astype(float), bins=10)
    assert list(ten.bucket) == [0] + counts.reshape(5, 2).sum(1).tolist()
    assert np.allclose(ten.bucket_limit, limits[::2])
    raw = acc.Histograms("raw")[0]
    assert raw.step == 1 and list(raw.histogram_value.bucket) == [1, 2, 3]


def test_text_and_tensor(tmp_path, read):
    from tensorboard.util import tensor_util
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "hello **world** é", 3)
        w.add_tensor("t32", nbtorch.arange(6, dtype=nbtorch.float32).reshape(2, 3), 0)
        w.add_tensor("t16", nbtorch.tensor([1.5, -2.0], dtype=nbtorch.float16), 0)
        w.add_tensor("tbf", nbtorch.tensor([1.5, -2.0], dtype=nbtorch.bfloat16), 0)
        w.add_tensor("i64", nbtorch.tensor([1, 2, 3]), 0)
        w.add_tensor("np", np.array([[True, False]]), 0)
    acc = read(tmp_path)
    text = acc.Tensors("notes/text_summary")[0]
    assert text.step == 3
    assert tensor_util.make_ndarray(text.tensor_proto)[0].decode() == "hello **world** é"
    assert acc.SummaryMetadata("notes/text_summary").plugin_data.plugin_name == "text"
    t32 = tensor_util.make_ndarray(acc.Tensors("t32")[0].tensor_proto)
    assert t32.shape == (2, 3) and t32.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert tensor_util.make_ndarray(acc.Tensors("t16")[0].tensor_proto).tolist() == [1.5, -2.0]
    bf16 = acc.Tensors("tbf")[0].tensor_proto          # tensorboard's stub cannot decode it
    assert bf16.dtype == 14 and list(bf16.half_val) == [0x3FC0, 0xC000]   # DT_BFLOAT16 bits
    assert tensor_util.make_ndarray(acc.Tensors("i64")[0].tensor_proto).tolist() == [1, 2, 3]
    assert tensor_util.make_ndarray(acc.Tensors("np")[0].tensor_proto).tolist() == [[True, False]]


def test_hparams_plugin_data(tmp_path, read):
    from tensorboard.plugins.hparams import plugin_data_pb2
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1, "bsize": 32, "opt": "adam", "skip": None,
                       "wd": nbtorch.tensor(0.5)},
                      {"hparam/accuracy": 0.9, "hparam/loss": nbtorch.tensor(0.3)},
                      hparam_domain_discrete={"opt": ["adam", "sgd"]}, run_name="trial")
        with pytest.raises(TypeError, match="should be dictionary"):
            w.add_hparams([("lr", 0.1)], {})
        with pytest.raises(ValueError, match="should be one of"):
            w.add_hparams({"lr": [0.1]}, {})
    acc = read(tmp_path / "trial")
    content = acc.PluginTagToContent("hparams")
    assert set(content) == {"_hparams_/experiment", "_hparams_/session_start_info",
                            "_hparams_/session_end_info"}
    exp = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"])
    infos = {i.name: i for i in exp.experiment.hparam_infos}
    assert set(infos) == {"lr", "bsize", "opt", "wd"}
    assert [v.string_value for v in infos["opt"].domain_discrete.values] == ["adam", "sgd"]
    assert [m.name.tag for m in exp.experiment.metric_infos] == ["hparam/accuracy", "hparam/loss"]
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hp = start.session_start_info.hparams
    assert (hp["lr"].number_value, hp["bsize"].number_value, hp["opt"].string_value,
            hp["wd"].number_value) == (0.1, 32, "adam", 0.5)
    assert acc.Scalars("hparam/accuracy")[0].value == pytest.approx(0.9)
    assert acc.Scalars("hparam/loss")[0].value == pytest.approx(0.3)


def test_pr_curve_counts(tmp_path, read):
    from tensorboard.util import tensor_util
    labels = np.array([1, 0, 1, 1, 0, 0])
    preds = nbtorch.tensor([0.9, 0.8, 0.6, 0.3, 0.2, 0.1])
    with SummaryWriter(tmp_path) as w:
        w.add_pr_curve("pr", labels, preds, 2, num_thresholds=11)
        w.add_pr_curve_raw("raw", [3, 2], [3, 1], [0, 2], [0, 1], [0.5, 0.66], [1.0, 0.66],
                           2, num_thresholds=2)
    acc = read(tmp_path)
    data = tensor_util.make_ndarray(acc.Tensors("pr")[0].tensor_proto)
    assert data.shape == (6, 11)
    t = np.linspace(0, 1, 11)
    for i, thr in enumerate(t[:-1]):      # bucket floor(p * 10) >= i
        above = np.floor(preds.numpy() * 10) >= i
        assert data[0, i] == (above & (labels == 1)).sum()       # tp
        assert data[1, i] == (above & (labels == 0)).sum()       # fp
    assert data[0, 0] + data[3, 0] == 3 and data[4, 0] == pytest.approx(0.5)
    raw = tensor_util.make_ndarray(acc.Tensors("raw")[0].tensor_proto)
    assert raw.shape == (6, 2) and raw[0].tolist() == [3, 2]


def test_custom_scalars_mesh_audio(tmp_path, read):
    from tensorboard.plugins.custom_scalar import layout_pb2
    from tensorboard.util import tensor_util
    layout = {"Losses": {"both": ["Multiline", ["loss/train", "loss/val"]],
                         "band": ["Margin", ["acc", "acc_lo", "acc_hi"]]}}
    verts = nbtorch.rand(1, 4, 3)
    with SummaryWriter(tmp_path) as w:
        w.add_custom_scalars(layout)
        w.add_mesh("cube", verts, colors=np.full((1, 4, 3), 200),
                   faces=np.array([[[0, 1, 2], [1, 2, 3]]]), global_step=1)
        w.add_audio("beep", np.sin(np.linspace(0, 200, 800)), 0, sample_rate=8000)
        with pytest.raises(AssertionError):
            w.add_custom_scalars_marginchart(["a", "b"])
    acc = read(tmp_path)
    proto = acc.Tensors("custom_scalars__config__")[0].tensor_proto
    parsed = layout_pb2.Layout.FromString(proto.string_val[0])
    charts = {c.title: c for c in parsed.category[0].chart}
    assert parsed.category[0].title == "Losses"
    assert list(charts["both"].multiline.tag) == ["loss/train", "loss/val"]
    assert charts["band"].margin.series[0].upper == "acc_hi"
    assert set(acc.Tags()["tensors"]) >= {"cube_VERTEX", "cube_FACE", "cube_COLOR"}
    got = tensor_util.make_ndarray(acc.Tensors("cube_VERTEX")[0].tensor_proto)
    assert np.allclose(got, verts.numpy())
    audio = acc.Audio("beep")[0]
    assert (audio.sample_rate, audio.length_frames, audio.content_type) == (8000, 800, "audio/wav")


def test_default_logdir_purge_step_close_and_reopen(tmp_path, read, monkeypatch):
    import socket
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1")
    logdir = w.get_logdir()
    assert logdir.startswith("runs" + os.sep) and logdir.endswith(socket.gethostname() + "_lr0.1")
    assert os.path.isdir(logdir)
    w.add_scalar("a", 1.0, 0)
    w.flush()
    w.close()
    w.close()                                       # a second close does nothing
    w.add_scalar("a", 2.0, 1)                       # writing again reopens a new file
    w.close()
    assert [e.value for e in read(logdir).Scalars("a")] == [1.0, 2.0]
    with SummaryWriter(tmp_path / "p", purge_step=5, filename_suffix=".x") as p:
        p.add_scalar("a", 1.0, 5)
    files = os.listdir(tmp_path / "p")
    assert len(files) == 1 and files[0].endswith(".x")
    from tensorboard.backend.event_processing import event_file_loader
    events = list(event_file_loader.EventFileLoader(str(tmp_path / "p" / files[0])).Load())
    assert any(e.session_log.status == e.session_log.START and e.step == 5 for e in events)


def test_reachable_as_torch_utils_tensorboard():
    import nbtorch as torch
    assert torch.utils.tensorboard.SummaryWriter is SummaryWriter
    from nbtorch.utils.tensorboard import FileWriter, RecordWriter, summary
    assert callable(summary.hparams) and FileWriter.__name__ == "FileWriter"
    assert RecordWriter.__module__.startswith("tensorboard.")
