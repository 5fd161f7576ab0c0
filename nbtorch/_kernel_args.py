"""How a tensor's values reach the copy and fill kernels: its flat storage, element offset
and strides (kernels never see a Tensor). Below the op layer, so autograd's nodes can copy
and fill gradients without importing ops."""
from ._registry import get_kernel

__all__ = ["copy_values", "fill_values", "broadcast_strides"]


def broadcast_strides(src, shape):
    """`src`'s strides broadcast to `shape` (0 along new and expanded dims)."""
    lead = len(shape) - len(src._shape)
    out = [0] * lead
    for n, s, m in zip(src._shape, src._strides, shape[lead:]):
        out.append(0 if n == 1 and m != 1 else s)
    return out


def copy_values(dst, src):
    """dst[...] = src (broadcast, cast to dst's dtype; same device), no autograd, no bump.
    A complex source into a real destination gives its real part, with PyTorch's warning."""
    if src.is_quantized:                # its integers are not its values: refuse a cast
        src._array                      # raises PyTorch's QuantizedCPU error
    if dst.dtype.limited or src.dtype.limited:
        from ._limited import copy_values as limited_copy
        return limited_copy(dst, src)   # uint16-64 and float8: NumPy, no kernel compiled
    if src.dtype.is_complex and dst.dtype.name == "bool":
        src = src != 0                  # truth of the whole value, as PyTorch's (2j is True)
    elif src.dtype.is_complex and not dst.dtype.is_complex:
        import warnings
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=3)
        from ._complex_views import real_part
        src = real_part(src)
    get_kernel("copy_", dst.device.type)(
        dst._storage.data, dst._offset, dst._strides,
        src._storage.data, src._offset, broadcast_strides(src, dst._shape), dst._shape)


def fill_values(dst, value):
    """dst[...] = value (a Python number), no autograd, no bump."""
    if dst.dtype.limited:
        from ._limited import fill_values as limited_fill
        return limited_fill(dst, value)
    get_kernel("fill_", dst.device.type)(dst._storage.data, dst._offset, dst._strides,
                                         dst._shape, value)
