"""Images (the zlib PNG encoder, layouts, grids), figures and embedding files."""
import io
import os

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import nbtorch  # noqa: E402
from nbtorch.utils.tensorboard import SummaryWriter  # noqa: E402
from nbtorch.utils.tensorboard._png import encode_png  # noqa: E402


def _decode(png):
    Image = pytest.importorskip("PIL.Image")
    return np.asarray(Image.open(io.BytesIO(png)))


@pytest.mark.parametrize("shape", [(5, 7), (5, 7, 1), (5, 7, 2), (5, 7, 3), (5, 7, 4), (1, 1, 3)])
def test_png_encoder_round_trip(shape):
    image = np.random.RandomState(1).randint(0, 256, shape).astype(np.uint8)
    got = _decode(encode_png(image))
    assert np.array_equal(got.reshape(image.shape), image)


def test_png_encoder_rejects_bad_input():
    with pytest.raises(TypeError, match="uint8"):
        encode_png(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="shape"):
        encode_png(np.zeros((2, 2, 5), np.uint8))


def test_image_layouts_scaling_and_grids(tmp_path, read):
    rng = np.random.RandomState(0)
    chw = rng.rand(3, 6, 10).astype(np.float32)
    hwc = rng.randint(0, 256, (6, 10, 3)).astype(np.uint8)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", nbtorch.tensor(chw, requires_grad=True), 0)
        w.add_image("hwc", hwc, 1, dataformats="HWC")
        w.add_image("hw", chw[0], 2, dataformats="HW")
        w.add_image("grey", chw[:1], 3)                       # one channel: shown as grey
        w.add_image("rgba", rng.rand(4, 6, 10), 4)
        w.add_images("batch", nbtorch.rand(10, 3, 4, 5), 5)   # 8 columns, 2 rows
        w.add_images("nhwc", rng.rand(3, 4, 5, 1), 6, dataformats="NHWC")
        with pytest.raises(AssertionError, match="size of input tensor and input format"):
            w.add_image("bad", chw, dataformats="HW")
    acc = read(tmp_path)
    sizes = {tag: (acc.Images(tag)[0].width, acc.Images(tag)[0].height)
             for tag in acc.Tags()["images"]}
    assert sizes == {"chw": (10, 6), "hwc": (10, 6), "hw": (10, 6), "grey": (10, 6),
                     "rgba": (10, 6), "batch": (40, 8), "nhwc": (15, 4)}
    expect = (chw.transpose(1, 2, 0) * 255).clip(0, 255).astype(np.uint8)     # truncation
    assert np.array_equal(_decode(acc.Images("chw")[0].encoded_image_string), expect)
    assert np.array_equal(_decode(acc.Images("hwc")[0].encoded_image_string), hwc)
    grey = _decode(acc.Images("hw")[0].encoded_image_string)
    assert grey.shape == (6, 10, 3) and np.array_equal(grey[..., 1], expect[..., 0])
    assert _decode(acc.Images("rgba")[0].encoded_image_string).shape == (6, 10, 4)
    batch = _decode(acc.Images("batch")[0].encoded_image_string)
    assert not batch[4:, 10:].any()                           # the unused cells stay black


def test_figure(tmp_path, read):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figs = []
    for _ in range(2):
        fig = plt.figure(figsize=(2, 1), dpi=50)
        plt.plot([0, 1], [1, 0])
        figs.append(fig)
    with SummaryWriter(tmp_path) as w:
        w.add_figure("one", figs[0], 0, close=False)
        w.add_figure("two", figs, 0)
    acc = read(tmp_path)
    assert (acc.Images("one")[0].width, acc.Images("one")[0].height) == (100, 50)
    assert (acc.Images("two")[0].width, acc.Images("two")[0].height) == (200, 50)
    assert not plt.fignum_exists(figs[1].number)


def test_embedding_projector_files(tmp_path):
    from google.protobuf import text_format
    from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
    mat = nbtorch.randn(6, 3, requires_grad=True)
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(mat, metadata=list("abcdef"), label_img=nbtorch.rand(6, 3, 4, 4))
        w.add_embedding(np.eye(2), metadata=[["x", 1], ["y", 2]], metadata_header=["n", "k"],
                        global_step=3, tag="a/b")
        with pytest.raises(AssertionError, match="#labels"):
            w.add_embedding(np.eye(2), metadata=["x"], global_step=4)
    rows = (tmp_path / "00000" / "default" / "tensors.tsv").read_text().splitlines()
    assert len(rows) == 6
    assert np.allclose([[float(v) for v in r.split("\t")] for r in rows], mat.detach().numpy())
    assert (tmp_path / "00000" / "default" / "metadata.tsv").read_text() == "a\nb\nc\nd\ne\nf\n"
    sprite = _decode((tmp_path / "00000" / "default" / "sprite.png").read_bytes())
    assert sprite.shape == (12, 12, 3)                        # 6 images on a 3x3 grid
    assert (tmp_path / "00003" / "a%2fb" / "metadata.tsv").read_text() == "n\tk\nx\t1\ny\t2\n"
    config = text_format.Parse((tmp_path / "projector_config.pbtxt").read_text(),
                               ProjectorConfig())
    first, second = config.embeddings
    assert (first.tensor_name, first.tensor_path) == ("default:00000", "00000/default/tensors.tsv")
    assert list(first.sprite.single_image_dim) == [4, 4]
    assert second.tensor_name == "a/b:00003" and second.metadata_path == "00003/a%2fb/metadata.tsv"
    assert os.path.isdir(tmp_path / "00004" / "default")      # made before the check, as PyTorch


def test_boxes_and_video(tmp_path, read, capsys):
    pytest.importorskip("PIL")
    image = np.zeros((3, 20, 20), np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_image_with_boxes("boxes", image, np.array([[2, 2, 12, 12]]), 0, labels=["cat"])
        w.add_image_with_boxes("big", image, nbtorch.tensor([[1, 1, 5, 5]]), 0, rescale=2)
        w.add_video("clip", np.random.rand(1, 2, 3, 4, 4), 0)
    acc = read(tmp_path)
    boxes = _decode(acc.Images("boxes")[0].encoded_image_string)
    assert boxes[2, 7].tolist() == [255, 0, 0] and boxes[16, 16].tolist() == [0, 0, 0]
    assert (boxes[3:12, 3:12] != 0).any()                  # the label, drawn inside
    big = acc.Images("big")[0]
    assert (big.width, big.height) == (20, 20)                 # the size before rescaling
    assert _decode(big.encoded_image_string).shape == (40, 40, 3)
    import importlib.util
    if importlib.util.find_spec("moviepy") is None:         # as PyTorch: a message, no image
        assert "add_video needs package moviepy" in capsys.readouterr().out
        assert "clip" not in acc.Tags()["images"]
