"""Creation with an explicit memory layout: frombuffer (a tensor over a Python buffer,
sharing its memory), empty_permuted, Tensor.new_empty_strided."""
import numpy as np

from .. import _dtype
from ._common import tensor_method

__all__ = ["frombuffer", "empty_permuted"]


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D CPU tensor over the memory of an object with the buffer protocol (no copy:
    writes to one show in the other).

    Example:
        >>> nbtorch.frombuffer(bytearray(b"\\x01\\x02"), dtype=nbtorch.uint8)
        tensor([1, 2], dtype=torch.uint8)
    """
    d = _dtype.to_dtype(dtype)
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    length = view.nbytes
    size = d.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % size:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({size})")
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    arr = np.frombuffer(view.cast("B"), dtype=np.uint8, count=count * size, offset=offset)
    if not arr.flags.writeable:
        import warnings
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors. This means you can write to the underlying "
                      "(supposedly non-writable) buffer using the tensor. You may want to copy "
                      "the buffer to protect its data or make it writable before converting "
                      "it to a tensor. This type of warning will be suppressed for the rest "
                      "of this program.", UserWarning, stacklevel=2)
        arr = arr.copy()
    from .creation import from_numpy
    t = from_numpy(arr.view(d.np))
    if requires_grad:
        t.requires_grad_()
    return t


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialised tensor of `size` whose dims lie in memory in the order
    `physical_layout` (slowest first): empty_permuted((2, 3), (1, 0)) has strides (1, 2)."""
    size, perm = tuple(size), tuple(physical_layout)
    if sorted(perm) != list(range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(perm)}" if len(perm) != len(size)
                           else "physical_layout must be a permutation of the dims")
    from .creation import empty
    base = empty(tuple(size[p] for p in perm), dtype=dtype, device=device)
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    out = base.permute(inverse)
    out._base = None
    if requires_grad:
        out.requires_grad_()
    return out


@tensor_method()
def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                      layout=None, pin_memory=False):
    from .creation import empty_strided
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)
