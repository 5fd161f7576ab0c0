"""Flagging operations that make the host wait for the GPU (``torch.cuda.set_sync_debug_mode``).

In mode "warn" (1) or "error" (2), copying a CUDA tensor to the host (``.item()``,
``.cpu()``, ``.tolist()``, printing) warns or raises "called a synchronizing CUDA
operation", as PyTorch does, so hidden syncs in a training loop can be found.
Reads of a count inside a kernel's launcher (``unique``, ``nonzero``...) are not
flagged: nbtorch does them below the tensor layer.
"""
import warnings

from . import _runtime

__all__ = ["set_sync_debug_mode", "get_sync_debug_mode", "check_transfer"]

_MODE = [0]
_NAMES = {"default": 0, "warn": 1, "error": 2}
MESSAGE = "called a synchronizing CUDA operation"


def set_sync_debug_mode(debug_mode):
    """0 / "default": say nothing; 1 / "warn": warn on syncs; 2 / "error": raise."""
    _runtime.lazy_init()
    if isinstance(debug_mode, str):
        if debug_mode not in _NAMES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, "
                               "`warn`, `error`")
        debug_mode = _NAMES[debug_mode]
    _MODE[0] = int(debug_mode)


def get_sync_debug_mode():
    _runtime.lazy_init()
    return _MODE[0]


def check_transfer(src, dst):
    """Warn or raise for a device -> host copy, as the mode asks."""
    mode = _MODE[0]
    if mode and src.type == "cuda" and dst.type == "cpu":
        if mode >= 2:
            raise RuntimeError(MESSAGE)
        warnings.warn(MESSAGE, UserWarning, stacklevel=4)
