"""Autograd of sparse tensors: Functions whose inputs or outputs are sparse.

Two bridges connect a sparse tensor with its values: `FromValues` (``sparse_coo_tensor(i,
v)`` with ``v`` requiring grad: the gradient of each entry is the incoming gradient at
its index, dense or sparse) and `Values` (``s.values()`` of a coalesced ``s``). Ops that
change values entry by entry (``sin``, ``s * dense``, ``sum``, ``softmax``) are built as
``from_values(indices, f(values_of(s)))``, so their backward is the dense ops' own. Linear
ops (scaling, adding, transposing, casting, coalescing) are Functions whose backward
applies the same op to the gradient, sparse or dense. As in PyTorch, `to_dense` and
`torch.sparse.mm` give a sparse input a sparse gradient with its (coalesced) pattern;
``torch.mm(sparse, dense)`` gives it a dense one.
"""
import numpy as np

from .._tensor import empty, wrap
from ..autograd.function import Function
from ._build import coalesced, csr_of, dense_of, keys, _dense_to_coo
from ._tensor import make_coo

__all__ = ["FromValues", "Values", "ToDense", "ToSparse", "Coalesce", "Scale", "Add",
           "Transpose", "ToDtype", "Clone", "SparseMM", "IndexSelect", "values_of", "from_values",
           "gather_at", "spmm"]


def gather_at(g, idx, shape):
    """The entries of gradient `g` (dense or sparse, of `shape`) at the columns of index
    tensor `idx`: a (nnz, *dense dims) tensor (zeros where sparse `g` has no entry)."""
    sd = idx._shape[0]
    sizes = tuple(shape[:sd])
    k = keys(idx._host(), sizes)
    if g.is_sparse_csr:
        g = g.to_sparse_coo()
    if not g.is_sparse:
        flat = g.reshape((int(np.prod(sizes, dtype=np.int64)),) + tuple(shape[sd:]))
        return flat.index_select(0, wrap(k))
    gc = coalesced(g)
    gk = keys(gc._idx._host(), sizes)
    pos = np.searchsorted(gk, k)
    found = pos < gk.shape[0]
    pos[~found] = 0
    found[found] = gk[pos[found]] == k[found]
    if not gk.shape[0]:
        from ..ops.creation import zeros
        return zeros((k.shape[0],) + tuple(shape[sd:]), dtype=g.dtype)
    picked = gc._vals.index_select(0, wrap(pos))
    if found.all():
        return picked
    mask = wrap(found.reshape((-1,) + (1,) * (picked.dim() - 1)).astype(picked.dtype.np))
    return picked * mask


class FromValues(Function):
    """``sparse_coo_tensor(indices, values)`` with `values` requiring grad."""

    _backward_name = "SparseCooTensorWithDimsAndTensorsBackward0"

    @staticmethod
    def forward(ctx, vals, idx, size, flag):
        ctx.idx, ctx.size = idx, size
        return make_coo(idx, vals.detach(), size, flag)

    @staticmethod
    def backward(ctx, g):
        return gather_at(g, ctx.idx, ctx.size), None, None, None


def from_values(idx, vals, size, flag=True):
    """A COO tensor over `vals`, recording `FromValues` when they require grad."""
    if vals.requires_grad:
        return FromValues.apply(vals, idx, tuple(size), flag)
    return make_coo(idx, vals, tuple(size), flag)


class Values(Function):
    """``s.values()`` of a coalesced COO tensor (its gradient: a sparse tensor with s's
    pattern)."""

    _backward_name = "ValuesBackward0"

    @staticmethod
    def forward(ctx, s):
        ctx.idx, ctx.size = s._idx, s._shape
        return s._vals.detach()

    @staticmethod
    def backward(ctx, g):
        return make_coo(ctx.idx, g, ctx.size, True)


def values_of(s):
    """The values of coalesced `s`, differentiable when `s` requires grad."""
    from ..autograd import grad_mode
    if s.requires_grad and grad_mode.STATE.enabled:
        return Values.apply(s)
    return s._vals


class Coalesce(Function):
    """``s.coalesce()``: the same tensor, so its gradient passes unchanged."""

    _backward_name = "CoalesceBackward0"

    @staticmethod
    def forward(ctx, s):
        c = coalesced(s)
        return make_coo(c._idx, c._vals, c._shape, True) if c is s else c

    @staticmethod
    def backward(ctx, g):
        return g


class ToDense(Function):
    @staticmethod
    def forward(ctx, s):
        if s.requires_grad:
            c = coalesced(s) if s.is_sparse else s.to_sparse_coo()
            ctx.s, ctx.c = s.detach(), c
        return dense_of(s)

    @staticmethod
    def backward(ctx, g):
        c = ctx.c
        return _like_input(ctx.s, c, gather_at(g, c._idx, c._shape))


class ToSparse(Function):
    """``dense.to_sparse()``: the gradient comes back dense."""

    @staticmethod
    def forward(ctx, x, sparse_dim):
        return _dense_to_coo(x, sparse_dim)

    @staticmethod
    def backward(ctx, g):
        return (g.to_dense() if g.is_sparse else g), None


class Scale(Function):
    """``s * c`` / ``s / c`` for a number c (entries scaled, the pattern kept)."""

    _backward_name = "MulBackward0"

    @staticmethod
    def forward(ctx, s, c, divide):
        ctx.c, ctx.divide = c, divide
        vals = s._vals / c if divide else s._vals * c
        return _like(s, vals)

    @staticmethod
    def backward(ctx, g):
        return (g / ctx.c if ctx.divide else g * ctx.c), None, None


def _like(s, vals):
    """A tensor with the pattern of `s` (COO or CSR) and new `vals`."""
    if s.is_sparse:
        return make_coo(s._idx, vals, s._shape, s._is_coalesced)
    from ._tensor import make_csr
    return make_csr(s._crow, s._col, vals, s._shape)


class Add(Function):
    """``a + alpha * b`` for COO tensors of one shape: their entries side by side."""

    _backward_name = "AddBackward0"

    @staticmethod
    def forward(ctx, a, b, alpha):
        ctx.alpha = alpha
        bv = b._vals if alpha == 1 else b._vals * alpha
        if a._is_coalesced and b._is_coalesced:       # merged: the result stays coalesced
            both = make_coo(_cat_idx(a, b), _cat_vals(a._vals, bv), a._shape, False)
            c = coalesced(both)
            return make_coo(c._idx, c._vals, c._shape, True)
        return make_coo(_cat_idx(a, b), _cat_vals(a._vals, bv), a._shape, False)

    @staticmethod
    def backward(ctx, g):
        return g, (g if ctx.alpha == 1 else g * ctx.alpha), None


def _cat_idx(a, b):
    return wrap(np.concatenate([a._idx._host(), b._idx._host()], axis=1))


def _cat_vals(x, y):
    from .._dtype import promote_types
    dt = promote_types(x.dtype, y.dtype)
    return wrap(np.concatenate([x.to(dt)._host(), y.to(dt)._host()], axis=0))


class Transpose(Function):
    """Swap two sparse dims of a COO tensor (the indices' rows)."""

    _backward_name = "TransposeBackward0"

    @staticmethod
    def forward(ctx, s, d0, d1):
        ctx.dims = (d0, d1)
        idx = s._idx._host().copy()
        idx[[d0, d1]] = idx[[d1, d0]]
        shape = list(s._shape)
        shape[d0], shape[d1] = shape[d1], shape[d0]
        return make_coo(wrap(idx), s._vals, shape, d0 == d1 and s._is_coalesced)

    @staticmethod
    def backward(ctx, g):
        return g.transpose(*ctx.dims), None, None


class ToDtype(Function):
    _backward_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, s, dtype):
        ctx.dtype = s.dtype
        return _like(s, s._vals.to(dtype))

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dtype), None


class Clone(Function):
    _backward_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, s):
        if s.is_sparse:
            return make_coo(s._idx.clone(), s._vals.clone(), s._shape, s._is_coalesced)
        from ._tensor import make_csr
        return make_csr(s._crow.clone(), s._col.clone(), s._vals.clone(), s._shape)

    @staticmethod
    def backward(ctx, g):
        return g


class IndexSelect(Function):
    """Entries of coalesced COO `s` whose index along sparse dim `dim` is in `idx`,
    renumbered to their positions in `idx` (once per occurrence of their index)."""

    _backward_name = "IndexSelectBackward0"

    @staticmethod
    def forward(ctx, s, dim, idx):
        rows = s._idx._host()[dim]
        order = np.argsort(idx, kind="stable")
        ranked = idx[order]
        lo = np.searchsorted(ranked, rows, "left")
        counts = np.searchsorted(ranked, rows, "right") - lo
        entry = np.repeat(np.arange(rows.size), counts)
        first = np.repeat(np.cumsum(counts) - counts, counts)
        where = order[np.repeat(lo, counts) + np.arange(entry.size) - first]
        out_idx = s._idx._host()[:, entry]
        out_idx[dim] = where
        shape = list(s._shape)
        shape[dim] = idx.size
        ctx.entry_idx = wrap(np.ascontiguousarray(s._idx._host()[:, entry]))
        ctx.out_idx, ctx.in_shape, ctx.out_shape = wrap(out_idx), s._shape, tuple(shape)
        return make_coo(ctx.out_idx, s._vals.index_select(0, wrap(entry)), shape, False)

    @staticmethod
    def backward(ctx, g):
        vals = gather_at(g, ctx.out_idx, ctx.out_shape)
        return make_coo(ctx.entry_idx, vals, ctx.in_shape, False), None, None


# ---- sparse @ dense --------------------------------------------------------------------

def spmm(s, d):
    """Host product of 2-D sparse `s` (COO or CSR) and strided matrix `d` (no autograd)."""
    from .._registry import get_kernel
    if s.is_sparse:
        crow, col, vals = csr_of(s)
    else:
        crow, col, vals = s._crow._host(), s._col._host(), s._vals._host()
    dense = np.ascontiguousarray(d.detach()._host())
    out = empty((s._shape[0], dense.shape[1]), d.dtype)     # the caching allocator's pages
    get_kernel("sparse_csr_mm", "cpu")(crow, col, np.ascontiguousarray(vals), dense,
                                       out._array)
    return out


class SparseMM(Function):
    """``sparse @ dense``. `sparse_grad`: torch.sparse.mm's rule (the sparse operand's
    gradient is sparse, with its coalesced pattern: ``(G @ D.T)`` at its nonzeros), else
    torch.mm's (a dense gradient ``G @ D.T``)."""

    _backward_name = "SparseAddmmBackward0"

    @staticmethod
    def forward(ctx, s, d, sparse_grad):
        ctx.s, ctx.sparse_grad = s, sparse_grad
        if ctx.needs_input_grad[0]:
            ctx.save_for_backward(d)
        return spmm(s, d)

    @staticmethod
    def backward(ctx, g):
        s = ctx.s
        gs = gd = None
        if ctx.needs_input_grad[1]:
            gd = SparseMM.apply(transposed(s), g, ctx.sparse_grad)
        if ctx.needs_input_grad[0]:
            d, = ctx.saved_tensors
            if ctx.sparse_grad:
                gs = _sampled(s, g, d)
            else:
                gs = g.mm(d.t())
        return gs, gd, None


def transposed(s):
    """The COO transpose of 2-D sparse `s` (detached), coalesced (its CSR is SpMM's)."""
    if not s.is_sparse:
        from ._build import coo_of_csr
        s = coo_of_csr(s)
    c = coalesced(s)
    t = c.__dict__.get("_transposed")
    if t is None:
        idx = c._idx._host()[::-1]
        t = c.__dict__["_transposed"] = coalesced(make_coo(wrap(np.ascontiguousarray(idx)),
                                                           c._vals.detach(), c._shape[::-1]))
    return t


def _sampled(s, g, d):
    """(g @ d.T) at the nonzeros of `s`: a coalesced COO tensor, or a CSR one for CSR `s`."""
    from .._registry import get_kernel
    c = coalesced(s) if s.is_sparse else s.to_sparse_coo()
    idx = c._idx._host()
    a = np.ascontiguousarray(g.detach()._host())
    b = np.ascontiguousarray(d.detach()._host())
    out = np.empty(idx.shape[1], a.dtype)
    get_kernel("sparse_sampled_dot", "cpu")(np.ascontiguousarray(idx[0]),
                                            np.ascontiguousarray(idx[1]), a, b, out)
    return _like_input(s, c, wrap(out))


def _like_input(s, c, vals):
    """Values `vals` at the entries of coalesced COO `c`, in `s`'s layout (a CSR input's
    entries are in the same order)."""
    if s.is_sparse_csr:
        from ._tensor import make_csr
        return make_csr(s._crow, s._col, vals, s._shape)
    return make_coo(c._idx, vals, c._shape, True)

