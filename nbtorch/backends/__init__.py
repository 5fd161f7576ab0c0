"""`torch.backends`: switches and availability of the libraries PyTorch can run on.

nbtorch runs every kernel on Numba, so the vendor libraries PyTorch names here
(cuDNN, oneDNN/mkldnn, MKL, MPS) are never used: their flags are settable, as
programs set them, and `is_available()` answers False. ``cuda.matmul.allow_tf32``
is tied to ``nbtorch.set_float32_matmul_precision`` as in PyTorch.

Example:
    >>> import nbtorch.backends.cudnn as cudnn
    >>> cudnn.benchmark = True          # accepted; nothing to tune
"""
import contextlib

from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]


@contextlib.contextmanager
def _flags(module, **values):
    """Set `module`'s attributes for the block; restore them after (cudnn.flags etc.)."""
    values = {k: v for k, v in values.items() if v is not None}
    old = {k: getattr(module, k) for k in values}
    for k, v in values.items():
        setattr(module, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)
