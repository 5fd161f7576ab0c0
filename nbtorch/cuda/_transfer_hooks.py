"""What a host <-> device copy (`nbtorch/ops/transfer.py`) checks first: no copy inside CUDA
graph capture (`_capture.py`), and the sync debug mode (`sync_debug.py`)."""
from . import _capture, sync_debug

__all__ = ["on_transfer"]


def on_transfer(x, src, dst):
    """Called by `transfer` for every copy from or to a CUDA device."""
    _capture.check_transfer(x, src, dst)
    sync_debug.check_transfer(src, dst)
