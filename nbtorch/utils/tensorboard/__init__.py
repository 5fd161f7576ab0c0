"""nbtorch.utils.tensorboard: `SummaryWriter` for TensorBoard (``torch.utils.tensorboard``).

Needs the ``tensorboard`` package (``pip install 'nbtorch[tensorboard]'``):
event files are written with its protos and its EventFileWriter, so
TensorBoard reads them as PyTorch's. Images are PNG-encoded without Pillow;
`add_figure` needs matplotlib, `add_image_with_boxes` Pillow, `add_video`
moviepy, `add_onnx_graph` onnx.
"""
try:
    import tensorboard
except ImportError as _err:
    _missing = ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")
    if hasattr(_missing, "add_note"):
        _missing.add_note("Install it with: pip install 'nbtorch[tensorboard]' "
                          "(or pip install tensorboard)")
    raise _missing from _err


def _version_tuple(version):
    """ "2.21.0" -> (2, 21, 0); stops at the first part that is not a number."""
    parts = []
    for part in version.split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


if _version_tuple(getattr(tensorboard, "__version__", "0")) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")
del tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
