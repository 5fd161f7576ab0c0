"""Tensors as MPI buffers: the storage's own memory through the buffer protocol when the
tensor is a contiguous CPU tensor of a type MPI knows, otherwise a staged contiguous copy
that is written back after the operation (non-contiguous tensors, float16/bfloat16 in
reductions, CUDA tensors without a CUDA-aware MPI). Never pickle."""
import ctypes
import os

import numpy as np

from .. import _dtype

__all__ = ["data_buffer", "reduce_buffer", "check_tensor", "cuda_aware"]

_HALF = (_dtype.float16, _dtype.bfloat16)
_cuda_aware = None


def cuda_aware(MPI):
    """True when the MPI library takes CUDA device memory: MPIX_Query_cuda_support() of
    the loaded libmpi (MPICH, Open MPI), or NBTORCH_MPI_CUDA_AWARE=1/0 to say so."""
    global _cuda_aware
    if _cuda_aware is None:
        forced = os.environ.get("NBTORCH_MPI_CUDA_AWARE")
        _cuda_aware = forced == "1" if forced in ("0", "1") else _query_cuda_support()
    return _cuda_aware


def _query_cuda_support():
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "libmpi" in line}
        for path in libs:
            query = getattr(ctypes.CDLL(path), "MPIX_Query_cuda_support", None)
            if query is not None and query() == 1:
                return True
    except OSError:
        pass
    return False


def check_tensor(t, name="tensor"):
    from .._tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torch.Tensor\n             but got {type(t)} instead.")


class Staged:
    """A contiguous 1-D array standing for tensor `t` during one MPI operation;
    `write_back()` copies what MPI wrote into `t` when `array` is not `t`'s own memory
    (`host` is the host copy of a CUDA tensor)."""

    __slots__ = ("tensor", "array", "owned", "host")

    def __init__(self, tensor, array, owned, host=None):
        self.tensor, self.array, self.owned, self.host = tensor, array, owned, host

    def write_back(self):
        if not self.owned:
            return
        t = self.tensor
        target = t._array if self.host is None else self.host._array
        if t.dtype in _HALF and self.array.dtype == np.uint16:
            target = target.view(np.uint16)         # bits moved as they are
        target[...] = self.array.reshape(target.shape)      # (a cast for half reductions)
        if self.host is not None:
            from ..autograd.grad_mode import no_grad
            with no_grad():
                t.copy_(self.host)


def data_buffer(t, MPI=None):
    """For operations that move bytes (broadcast, gather, send...): half types travel as
    uint16 bit patterns. CUDA memory goes to MPI directly only when MPI is CUDA-aware,
    otherwise through a host copy."""
    if t.device.type != "cpu":
        if MPI is not None and cuda_aware(MPI) and t.is_contiguous():
            data = t._storage.data           # a numba device array (__cuda_array_interface__)
            return Staged(t, data[t._offset:t._offset + t.numel()], False)
        host = t.detach().cpu().contiguous()       # MPI must write into its memory
        arr = host._array.view(np.uint16) if t.dtype in _HALF else host._array
        return Staged(t, arr.reshape(-1), True, host)
    arr = t._array.view(np.uint16) if t.dtype in _HALF else t._array
    if arr.flags["C_CONTIGUOUS"]:
        return Staged(t, arr.reshape(-1), False)
    return Staged(t, np.ascontiguousarray(arr).reshape(-1), True)


def reduce_buffer(t, MPI=None):
    """For reductions: float16/bfloat16 are reduced in float32 (MPI has no half types)."""
    if t.dtype in _HALF:
        host = None if t.device.type == "cpu" else t.detach().cpu().contiguous()
        arr = (t._array if host is None else host._array).astype(np.float32)
        return Staged(t, arr.reshape(-1), True, host)
    return data_buffer(t, MPI)
