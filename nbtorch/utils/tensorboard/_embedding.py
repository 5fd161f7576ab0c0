"""The projector plugin's files for ``add_embedding``: tensors.tsv, metadata.tsv,
sprite.png, and the projector_config.pbtxt that lists every embedding of the run.

Paths go through tensorboard's gfile, as the event files do, so a log_dir on
a remote filesystem tensorboard supports works here too.
"""
import math

import numpy as np
from tensorboard.compat import tf
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo

from ._convert import make_np
from ._image import make_grid
from ._png import encode_png


def _join(a, b):
    """Join paths the way the active gfile does (tensorboard's stub and TF differ)."""
    if hasattr(tf.io.gfile, "join"):
        return tf.io.gfile.join(a, b)
    return tf.io.gfile.get_filesystem(a).join(a, b)


def _write(path, data):
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(data)


def make_tsv(metadata, save_path, metadata_header=None):
    """metadata.tsv: one label per line, or a header row and tab-separated columns."""
    if not metadata_header:
        lines = [str(x) for x in metadata]
    else:
        if len(metadata_header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in "
                                 "metadata")
        lines = ["\t".join(str(e) for e in row) for row in [metadata_header] + list(metadata)]
    _write(_join(save_path, "metadata.tsv"), ("\n".join(lines) + "\n").encode("utf-8"))


def make_sprite(label_img, save_path):
    """sprite.png: the (N, C, H, W) label images in float [0, 1] tiled on a square grid."""
    images = make_np(label_img)
    nrow = math.ceil(images.shape[0] ** 0.5)
    grid = make_grid(images, ncols=nrow).transpose(1, 2, 0)       # HWC
    square = np.zeros((grid.shape[1], grid.shape[1], 3))
    square[:grid.shape[0]] = grid
    _write(_join(save_path, "sprite.png"), encode_png(np.uint8((square * 255).clip(0, 255))))


def make_mat(mat, save_path):
    """tensors.tsv: one data point per line, its values tab-separated."""
    with tf.io.gfile.GFile(_join(save_path, "tensors.tsv"), "wb") as f:
        for row in mat:
            f.write(("\t".join(str(v.item()) for v in row) + "\n").encode("utf-8"))


def get_embedding_info(metadata, label_img, subdir, global_step, tag):
    """The ``EmbeddingInfo`` entry of projector_config.pbtxt for one embedding."""
    info = EmbeddingInfo()
    info.tensor_name = f"{tag}:{str(global_step).zfill(5)}"
    info.tensor_path = _join(subdir, "tensors.tsv")
    if metadata is not None:
        info.metadata_path = _join(subdir, "metadata.tsv")
    if label_img is not None:
        info.sprite.image_path = _join(subdir, "sprite.png")
        info.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])
    return info


def write_pbtxt(save_path, contents):
    """Write projector_config.pbtxt (text format) into the run's log dir."""
    _write(_join(save_path, "projector_config.pbtxt"), contents.encode("utf-8"))
