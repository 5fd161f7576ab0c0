"""The sparse tensor classes: `Tensor` subclasses that hold index and value tensors.

`SparseCooTensor` (layout ``sparse_coo``) holds ``_idx`` (int64, sparse_dim x nnz) and
``_vals`` (nnz x dense dims); `SparseCsrTensor` (layout ``sparse_csr``) holds
``_crow``, ``_col`` and ``_vals``. Shape, dtype, device and the autograd slots are the
ordinary Tensor ones, so `isinstance(x, Tensor)`, ``requires_grad``, ``.grad``, hooks and
the engine work unchanged. What a sparse tensor lacks is a strided buffer: its storage is
a stand-in whose data, like the tensor's ``_array``, ``_strides`` and ``_offset``, raises
NotImplementedError naming the dense op that asked and the layout (PyTorch's "Could not
run 'aten::exp' with arguments from the 'SparseCPU' backend"), so a dense kernel can never
read index or value memory as if it were the tensor's elements.
"""
import os

from .._calling_op import NO_OP, calling_op
from .._tensor import Tensor, Size
from .._torch_extras import sparse_coo, sparse_csr

__all__ = ["SparseTensor", "SparseCooTensor", "SparseCsrTensor", "make_coo", "make_csr"]

_HERE = os.path.dirname(os.path.abspath(__file__))                       # nbtorch/sparse/
_NO_OP = NO_OP


def _calling_op():
    return calling_op(_HERE)


def dense_only_error(t, op=None):
    """NotImplementedError for a dense-only op `op` (found on the stack if None) on `t`."""
    op = op or _calling_op()
    backend = ("SparseCsr" if t.is_sparse_csr else "Sparse") + \
        ("CUDA" if t.device.type == "cuda" else "CPU")
    return NotImplementedError(
        f"Could not run 'aten::{op}' with arguments from the '{backend}' backend: '{op}' "
        f"works on strided (dense) tensors, and this tensor has layout {t.layout}. Use "
        f"nbtorch.sparse's operations, or convert with .to_dense() first.")


class _SparseStorage:
    """The storage slot of a sparse tensor: a version counter (autograd's saved-tensor
    check) and a device; its data is refused."""

    __slots__ = ("device", "version", "__weakref__")

    def __init__(self, device):
        self.device, self.version = device, 0

    @property
    def data(self):
        op = _calling_op()
        raise NotImplementedError(
            f"Could not run 'aten::{op}' with arguments from a sparse tensor: '{op}' reads "
            "a strided tensor's storage, and a sparse tensor has none (use its "
            "indices()/values(), or .to_dense() first)")

    def nbytes(self):
        return self.data.nbytes           # raises: a sparse tensor has no such buffer


def _refuse(name):
    def get(self):
        raise dense_only_error(self)
    get.__name__ = name
    return property(get)


class SparseTensor(Tensor):
    """Common ground of the sparse layouts (see the module docstring)."""

    __slots__ = ()

    # a strided tensor's raw memory: refused with the dense op's name (module docstring)
    _array = _refuse("_array")
    _strides = _refuse("_strides")
    _offset = _refuse("_offset")
    _arr = _refuse("_arr")
    is_quantized = False
    _sparse_layout = True       # what dense ops (ops/linalg.py) test to route a product here

    def _setup(self, shape, dtype, device, storage=None):
        self._storage = storage if storage is not None else _SparseStorage(device)
        self._shape, self.dtype, self.device = tuple(shape), dtype, device
        self._requires_grad, self._grad, self.grad_fn = False, None, None
        self._output_nr, self._base, self._hooks = 0, None, None
        self._retains_grad, self._accumulator = False, None
        return self

    def _view(self, shape, strides, offset=None):
        raise dense_only_error(self)

    # ---- metadata that differs from a strided tensor's ---------------------------------
    @property
    def is_sparse_csr(self):
        return self.layout is sparse_csr

    def values(self):
        return self._vals

    def _values(self):
        return self._vals

    def _nnz(self):
        return self._vals._shape[0]

    def dense_dim(self):
        return len(self._vals._shape) - 1

    def sparse_dim(self):
        return len(self._shape) - self.dense_dim()

    def stride(self, dim=None):
        """PyTorch 2.13 answers zeros (a sparse tensor has no strides)."""
        return 0 if dim is not None else (0,) * len(self._shape)

    def is_contiguous(self, memory_format=None):
        return False

    def contiguous(self, memory_format=None):
        op = _calling_op()
        if op == _NO_OP:                # called by the user: PyTorch's answer
            raise RuntimeError("unsupported memory format option Contiguous")
        raise dense_only_error(self, op)  # a dense op making its input contiguous

    def storage_offset(self):
        raise dense_only_error(self, "storage_offset")

    def untyped_storage(self):
        raise NotImplementedError("Cannot access storage of SparseTensorImpl")

    storage = untyped_storage

    def data_ptr(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def numpy(self, *, force=False):
        raise TypeError(f"can't convert {_layout_word(self)} layout tensor to numpy. Use "
                        "Tensor.to_dense() first.")

    def __array__(self, dtype=None, copy=None):
        return self.numpy()

    def is_complex(self):
        return self.dtype.is_complex

    @property
    def data(self):
        return self.detach()

    @data.setter
    def data(self, other):
        if type(other) is not type(self):
            raise RuntimeError("data set to a tensor of another layout")
        self.__dict__.update(other.__dict__)
        self._shape, self.dtype, self.device = other._shape, other.dtype, other.device

    def __repr__(self, *, tensor_contents=None):
        from ._format import sparse_repr
        return sparse_repr(self)

    def __reduce_ex__(self, proto):
        from ._build import rebuild
        return (rebuild, self._parts())

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        t = self.detach().clone()
        t.requires_grad = self.requires_grad
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = t
        return t

    def _bump(self):
        self._storage.version += 1
        self.__dict__.pop("_csr", None)


class SparseCooTensor(SparseTensor):
    """A sparse tensor in coordinate format: entry k is ``values[k]`` at
    ``indices[:, k]``; duplicates add up until `coalesce` sums them."""

    __slots__ = ()
    layout = sparse_coo
    is_sparse = True

    def _parts(self):
        return ("coo", self._idx, self._vals, tuple(self._shape), self._is_coalesced)

    def _torch_parts(self):
        """What PyTorch pickles (torch._utils._rebuild_sparse_tensor's second argument)."""
        return (self._idx, self._vals, Size(self._shape), self._is_coalesced)

    def sparse_dim(self):
        return self._idx._shape[0]

    def dense_dim(self):
        return len(self._shape) - self._idx._shape[0]

    def is_coalesced(self):
        return self._is_coalesced

    def _indices(self):
        return self._idx

    def indices(self):
        if not self._is_coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._idx

    def values(self):
        if not self._is_coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        from ._autograd import values_of
        return values_of(self)

    def _coalesced_(self, coalesced):
        self._is_coalesced = bool(coalesced)
        return self


class SparseCsrTensor(SparseTensor):
    """A 2-D sparse tensor in compressed sparse row format: the entries of row i are
    ``values[crow[i]:crow[i+1]]`` at columns ``col[crow[i]:crow[i+1]]``."""

    __slots__ = ()
    layout = sparse_csr
    is_sparse = False

    def _parts(self):
        return ("csr", self._crow, self._col, self._vals, tuple(self._shape), True)

    def _torch_parts(self):
        return (self._crow, self._col, self._vals, Size(self._shape))

    def crow_indices(self):
        return self._crow

    def col_indices(self):
        return self._col

    def sparse_dim(self):
        return 2

    def dense_dim(self):
        return len(self._vals._shape) - 1


def _layout_word(t):
    return "SparseCsr" if t.layout is sparse_csr else "Sparse"


def make_coo(idx, vals, shape, coalesced=False, storage=None):
    """A COO tensor around int64 `idx` and `vals` (no checks, no copies, no autograd)."""
    t = SparseCooTensor.__new__(SparseCooTensor)._setup(Size(shape), vals.dtype, vals.device,
                                                        storage)
    t._idx, t._vals, t._is_coalesced = idx, vals, bool(coalesced)
    return t


def make_csr(crow, col, vals, shape, storage=None):
    """A CSR tensor around int64 `crow`, `col` and `vals` (no checks, copies or autograd)."""
    t = SparseCsrTensor.__new__(SparseCsrTensor)._setup(Size(shape), vals.dtype, vals.device,
                                                        storage)
    t._crow, t._col, t._vals = crow, col, vals
    return t
