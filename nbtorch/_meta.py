"""The ``meta`` device: tensors with a shape, dtype and strides but no data.

Every op already computes its output's shape and dtype and allocates the output
before it calls a kernel (raw arrays in, raw arrays out). So the meta device needs
no shape rules of its own: its storage's buffer is a stride-0 array of the right
length over one scratch element (nbytes as the real one's, no memory); a meta
tensor's raw array is a stride-0 view of one scratch element too (kernels and
NumPy paths see the right shape and dtype, and no memory); and every op's meta
kernel is a no-op (`_meta_kernel`, given by a registry fallback rule), so an op
run on meta tensors does its argument checks, shape, dtype and stride logic and
its allocation, and nothing else. A model's forward on meta inputs therefore gives PyTorch's
output shapes, and `nn.init` on meta parameters does nothing, as in PyTorch.

Ops whose output shape depends on values (nonzero, unique, masked_select) have no
data-independent answer: their meta kernel raises NotImplementedError, as
PyTorch's does.
"""
import numpy as np

from . import _registry, _tensor

__all__ = ["index_values"]


def _alloc_meta(n, np_dtype, device):
    """A meta storage's buffer: `n` elements long (its nbytes are the tensor's), all of
    them one scratch element (stride 0), so no memory of that size is taken."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, np_dtype), shape=(n,), strides=(0,))


def _meta_view(data, offset, shape, strides, np_dtype):
    """A writable stride-0 array of `shape` over one fresh scratch element: what kernels
    and NumPy paths read and write for a meta tensor, using no memory of its size."""
    scratch = np.zeros(1, np_dtype)
    return np.lib.stride_tricks.as_strided(scratch, shape=tuple(shape),
                                           strides=(0,) * len(shape))


# ops whose result's shape depends on the values: no meta answer (PyTorch raises too)
_DATA_DEPENDENT = frozenset({"nonzero", "unique_runs", "masked_select", "unique",
                             "unique_consecutive", "bincount", "repeat_interleave"})


def _meta_kernel(*args, **kwargs):
    """Every op's meta kernel: the op has already made its (meta) outputs; no data."""
    return None


def _data_dependent(op):
    def kernel(*args, **kwargs):
        raise NotImplementedError(
            f"aten::{op}: the output's shape depends on the input's values, which a meta "
            "tensor does not have")
    return kernel


def _meta_fallback(op):
    """The meta kernel of `op`: a no-op for any op with a kernel on some real device (read
    from the tables: no kernel family is imported for a meta call)."""
    if op in _DATA_DEPENDENT:
        return _data_dependent(op)
    if (any(op in table for table in _registry._TABLES.values())
            or any(o == op for o, _ in _registry._KERNELS)):
        return _meta_kernel
    return None


_tensor._ALLOCATORS["meta"] = _alloc_meta
_tensor.VIEW_MAKERS["meta"] = _meta_view
_registry.register_fallback("meta", _meta_fallback)


def index_values(t):
    """`t`'s values on the host for an op's index/target checks; a meta tensor's read as
    zeros (a stride-0 array: no memory), so checks pass and shapes still propagate."""
    t = t.detach()
    return t._array if t.device.type == "meta" else t._host()


_NOTHING = np.dtype([])                 # a zero-byte element


def meta_offsets(shape, np_index):
    """The storage offsets of ``meta_tensor[np_index]``: a stride-0 int64 array of the
    result's shape (NumPy's indexing rules, worked out on zero-byte elements: no memory
    of the result's size)."""
    scratch = np.lib.stride_tricks.as_strided(np.zeros(1, _NOTHING), shape=tuple(shape),
                                              strides=(0,) * len(shape))
    out = scratch[np_index].shape
    return np.lib.stride_tricks.as_strided(np.zeros(1, np.int64), shape=out,
                                           strides=(0,) * len(out))
