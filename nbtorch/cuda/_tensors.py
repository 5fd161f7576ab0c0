"""How a Tensor lives on CUDA: its storage allocator and its strided view maker.

Registered into `nbtorch._tensor` by `nbtorch.cuda` at import; neither runs
(nor imports numba.cuda) until a CUDA tensor is made. A storage is a 1-D
device array; a tensor's `_array` is a strided device array over the same
memory (offset, shape and strides from the tensor), so views share memory
exactly as NumPy views do on the CPU.
"""
from .. import _dtype
from . import _runtime

__all__ = ["alloc_cuda", "view_cuda"]


def alloc_cuda(n, np_dtype, device):
    """A 1-D device array of `n` elements on `device`, from the caching allocator."""
    if np_dtype.name == "bfloat16":            # named: no ml_dtypes import here
        raise TypeError(f"bfloat16 tensors are not supported on device '{device}': numba.cuda "
                        "has no bfloat16 arrays. Keep bfloat16 tensors on the CPU, or use "
                        "float16/float32 on the GPU.")
    _runtime.lazy_init()
    idx = _runtime.check_index(device.index if device.index is not None else
                               _runtime.current_device())
    if _runtime.simulator():
        from ._sim_driver import device_array
        return device_array(_runtime.allocator(idx), n, np_dtype, _runtime.stream_key())
    cuda = _runtime.cuda_module()
    if idx != _runtime.current_device():
        with cuda.gpus[idx]:
            return cuda.device_array(n, np_dtype, stream=_runtime.raw_stream())
    return cuda.device_array(n, np_dtype, stream=_runtime.raw_stream())


def view_cuda(data, offset, shape, strides, np_dtype):
    """The strided device array (element offset/strides) over storage array `data`."""
    from nbtorch.kernels.cuda._launch import strided_view
    isz = np_dtype.itemsize
    return strided_view(data, shape, tuple(s * isz for s in strides), offset * isz)
