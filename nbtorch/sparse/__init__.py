"""Sparse tensors (``torch.sparse``): COO and CSR layouts, SpMM, autograd.

Design: a sparse tensor is a `Tensor` subclass (`SparseCooTensor`, `SparseCsrTensor`,
in ``_tensor.py``) that holds ordinary tensors for its indices and values. Being a
Tensor keeps ``isinstance(x, torch.Tensor)``, ``requires_grad``, ``.grad``, hooks and
the autograd engine working unchanged; holding plain index/value tensors lets NumPy
and the registered kernels (``kernels/cpu/sparse.py``: row pointers, CSR x dense,
sampled dot, scatter-add) do the work. It has no strided buffer: every attribute a
dense kernel reads (``_array``, storage data, strides) raises NotImplementedError
naming the dense op and the layout, so dense code cannot mistake index or value
memory for the tensor's elements. Dense ops that accept a sparse operand
(``torch.mm``, ``torch.matmul``, ``@``, ``dense + sparse``) route here.

Modules: ``_tensor.py`` (the classes, the refusals), ``_build.py`` (constructors,
checks, coalescing, conversions), ``_autograd.py`` (the Functions; PyTorch's sparse
gradients), ``_ops.py`` (products, arithmetic, sums, softmax), ``_shape.py``
(transposes, index_select, casts, copies, in-place updates), ``_format.py`` (repr),
``_embedding.py`` (``embedding(sparse=True)``'s sparse weight gradient).

Not there yet: CUDA (a sparse tensor on CUDA is refused with NotImplementedError), the
CSC/BSR/BSC layouts, sparse @ sparse, batched CSR, indexing/slicing of sparse tensors
(``s[0]``, ``narrow``), and namespace forms such as ``torch.add(dense, sparse)`` (the
operators and methods work).

Example:
    >>> i = nbtorch.tensor([[0, 1], [1, 0]])
    >>> adj = nbtorch.sparse_coo_tensor(i, nbtorch.tensor([1., 2.]), (2, 2))
    >>> nbtorch.sparse.mm(adj, nbtorch.ones(2, 3)).shape
    torch.Size([2, 3])
"""
from .._tensor import Tensor
from . import _ops, _shape
from ._build import (sparse_coo_tensor, sparse_csr_tensor, to_sparse, to_sparse_coo,
                     to_sparse_csr)
from ._ops import addmm, log_softmax, mm, softmax, sum  # noqa: A004
from ._tensor import SparseCooTensor, SparseCsrTensor, SparseTensor

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax", "sparse_coo_tensor",
           "sparse_csr_tensor", "spmm", "check_sparse_tensor_invariants",
           "SparseTensor", "SparseCooTensor", "SparseCsrTensor"]


def spmm(input, mat2):
    """``torch.spmm``: ``torch.mm`` for a sparse (or dense) first operand."""
    return input.mm(mat2)


class check_sparse_tensor_invariants:
    """PyTorch's switch for index checks; nbtorch always checks (its kernels trust the
    indices), so enabling or disabling it changes nothing."""

    _enabled = True

    def __init__(self, enable=True):
        self.enable = enable

    @staticmethod
    def is_enabled():
        return True

    @staticmethod
    def enable():
        pass

    @staticmethod
    def disable():
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        return fn


# ---- Tensor methods ---------------------------------------------------------------------

def _layout_error(op, wants):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"{op} expected {wants} layout but got {_ops._word(self)}")
    method.__name__ = op
    return method


def _dense_nnz(self):
    raise NotImplementedError("Could not run 'aten::_nnz' with arguments from the 'CPU' "
                              "backend: _nnz() needs a sparse tensor")


def _sparse_mask(self, mask):
    """``dense.sparse_mask(mask)``: a sparse tensor with `mask`'s pattern (its entries as
    they are) and this tensor's values there (differentiable in this tensor)."""
    from ._autograd import gather_at, from_values
    if not mask.is_sparse:
        raise RuntimeError(f"sparse_mask expected sparse coordinate tensor layout but got "
                           f"{_ops._word(mask)}")
    if tuple(self._shape) != tuple(mask._shape):
        raise RuntimeError("sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(self._shape)} but mask has size {list(mask._shape)}")
    return from_values(mask._idx, gather_at(self, mask._idx, mask._shape), mask._shape,
                       mask._is_coalesced)


def _install():
    """Strided tensors get the conversions and PyTorch's refusals; sparse ones their ops."""
    T = Tensor
    T.is_sparse_csr = False
    T._sparse_layout = False            # (a class attribute: ops/linalg.py reads it cheaply)
    T.to_sparse, T.to_sparse_coo, T.to_sparse_csr = to_sparse, to_sparse_coo, to_sparse_csr
    T.to_dense = _ops.to_dense
    T.sparse_dim = lambda self: 0
    T.dense_dim = lambda self: self.dim()
    T._nnz = _dense_nnz
    T.sparse_mask = _sparse_mask
    for op, wants in (("indices", "sparse coordinate tensor"),
                      ("_indices", "sparse coordinate tensor"),
                      ("values", "sparse tensor"), ("_values", "sparse tensor"),
                      ("coalesce", "sparse coordinate tensor"),
                      ("is_coalesced", "sparse coordinate tensor"),
                      ("crow_indices", "sparse row compressed tensor"),
                      ("col_indices", "sparse row compressed tensor")):
        if not hasattr(T, op):
            setattr(T, op, _layout_error(op, wants))
    S = SparseTensor
    S.coalesce = _ops.coalesce
    SparseCsrTensor.coalesce = _layout_error("coalesce", "sparse coordinate tensor")
    SparseCsrTensor.is_coalesced = _layout_error("is_coalesced", "sparse coordinate tensor")
    SparseCsrTensor.indices = _layout_error("indices", "sparse coordinate tensor")
    SparseCsrTensor._indices = SparseCsrTensor.indices
    SparseCooTensor.crow_indices = _layout_error("crow_indices", "sparse row compressed tensor")
    SparseCooTensor.col_indices = _layout_error("col_indices", "sparse row compressed tensor")
    S.mm = S.matmul = S.__matmul__ = lambda self, other: _ops.route_mm(self, other, None,
                                                                      "matmul")
    S.__rmatmul__ = lambda self, other: _ops.route_mm(other, self)
    S.mul = S.__mul__ = S.__rmul__ = _ops.mul
    S.div = S.__truediv__ = _ops.div
    S.add, S.__add__, S.__radd__ = _ops.add, _ops.add, _ops.radd
    S.sub, S.__sub__, S.__rsub__ = _ops.sub, _ops.sub, _ops.rsub
    S.__neg__ = S.neg = lambda self: _ops.Scale.apply(self, -1, False)
    S.add_, S.mul_, S.zero_ = _shape.add_, _shape.mul_, _shape.zero_
    S.sum = _sum_method
    S.t, S.transpose = _shape.t, _shape.transpose
    S.index_select = _shape.index_select
    S.to, S.clone, S.detach = _shape.to, _shape.clone, _shape.detach
    S.cpu = lambda self, memory_format=None: self
    S.cuda = lambda self, device=None, non_blocking=False, memory_format=None: \
        _ops.check_cpu(device or "cuda", "cuda")
    for name, dt in (("double", "float64"), ("float", "float32"), ("half", "float16"),
                     ("bfloat16", "bfloat16"), ("int", "int32"), ("long", "int64"),
                     ("bool", "bool")):
        setattr(S, name, _caster(dt))
    for name in _ops.UNARY:
        if name != "neg":
            setattr(S, name, _ops._values_op(name))
    S.softmax = lambda self, dim, dtype=None: _ops.softmax(self, dim, dtype)
    S.log_softmax = lambda self, dim, dtype=None: _ops.log_softmax(self, dim, dtype)


def _sum_method(self, dim=None, keepdim=False, *, dtype=None):
    """``s.sum()`` / ``s.sum(dim)``: `torch.sparse.sum`'s results."""
    if keepdim:
        raise NotImplementedError("sum(keepdim=True) of a sparse tensor is not supported by "
                                  "nbtorch (torch.sparse.sum has no keepdim either)")
    return _ops.sum(self, dim, dtype)


def _caster(name):
    from .. import _dtype

    def cast(self, memory_format=None):
        return _shape.to(self, getattr(_dtype, name))
    cast.__name__ = name
    return cast


_install()
