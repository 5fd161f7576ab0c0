"""In-place ops under autograd: the version counter, leaf checks, and CopySlices.

An in-place op without autograd just runs its kernel into `self`. With
autograd it computes the result out of place from a snapshot of `self`'s old
value, writes it into `self`, and rebases the history: `self` now ends in the
op's node, or, for a view, its base ends in a CopySlices node (recorded like
any Function) and the view in an AsStrided of it. A custom Function that marks
a view dirty is rebased by the same `rebase_view`.
"""
from .._kernel_args import copy_values
from .._overlap import check_no_internal_overlap, check_no_partial_overlap
from .._tensor import Tensor
from ..autograd import dirty, grad_mode
from ..autograd.function import Function
from .views import AsStrided, as_strided

__all__ = ["inplace_guard", "check_inplace", "written_back", "rebase_view"]

_LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
_VIEW_LEAF = ("a view of a leaf Variable that requires grad is being used in an in-place "
              "operation.")


def check_inplace(self):
    """PyTorch's refusals for in-place writes on leaves that require grad."""
    if grad_mode.STATE.enabled:
        if self.grad_fn is None and self._requires_grad and self._base is None:
            raise RuntimeError(_LEAF)
        b = self._base
        if b is not None and b.grad_fn is None and b._requires_grad:
            raise RuntimeError(_VIEW_LEAF)


def written_back(fn):
    """The in-place method of an op computed out of place (comparisons, logical ops):
    self = fn(self, other), cast into self's dtype, after PyTorch's overlap refusals."""
    def method(self, other):
        check_no_internal_overlap(self)
        check_no_partial_overlap(self, (other,))
        from .copy import raw_copy_
        return raw_copy_(self, fn(self, other))
    return method


def inplace_guard(self, fn_cls, args, raw, kwargs=None):
    """Run `raw()` (writes into self, bumps the version) or the autograd path."""
    check_no_internal_overlap(self)
    check_no_partial_overlap(self, args)
    needs = grad_mode.STATE.enabled and any(
        isinstance(a, Tensor) and a._requires_grad for a in args)
    base = self._base
    if base is not None and base._requires_grad and grad_mode.STATE.enabled:
        needs = True
    if not needs:
        raw()
        return self
    check_inplace(self)
    old = _current_value(self)
    new_args = tuple(old if a is self else a for a in args)
    out = fn_cls.apply(*new_args, **(kwargs or {}))
    if base is None:
        _write(self, out)
        self._bump()
        self.grad_fn, self._output_nr, self._requires_grad = out.grad_fn, out._output_nr, \
            out._requires_grad
        _saved_as_self(out, self)
    else:
        rebase_view(self, out)
    return self


def _saved_as_self(out, self):
    """The node saved its output `out` (relu_, sigmoid_...): it saves `self` instead, which
    now holds that value, as PyTorch's in-place ops do - the temporary is freed, a later
    in-place write to `self` is caught by the version check, and a graph capture finds the
    saved value (the temporary was made inside the in-place op, where nothing records)."""
    ctx = out.grad_fn
    saved = getattr(ctx, "_saved", None)
    if not saved or saved.__class__ is not tuple or out.dtype is not self.dtype or \
            out.device != self.device:
        return
    storage = out._storage
    ctx._saved = tuple([
        (self.detach(), self._storage.version, s[2]) if s is not None and len(s) == 3
        and s[0]._storage is storage else s for s in saved])


def _current_value(t):
    """A copy of t's values that carries t's current autograd history."""
    b = t._base
    if b is not None and b._requires_grad:
        return as_strided(b, t._shape, t._strides, t._offset).clone()
    if t._requires_grad:
        return t.clone()
    return t.detach().clone()


def _write(dst, src):
    """dst[...] = src by the copy kernel (casting), without autograd or a version bump."""
    if src.device != dst.device:
        from .transfer import transfer
        src = transfer(src, dst.device)
    copy_values(dst, src)


class CopySlices(Function):
    """base[region] = src, marking base dirty: the gradient of the old base is g with
    the region zeroed, src's is g's region (PyTorch's CopySlices node)."""

    _node_name = "torch::autograd::CopySlices"

    @staticmethod
    def forward(ctx, base, src, geometry):
        ctx.geometry = geometry
        shape, strides, offset = geometry
        offset += base._offset
        if not (src._storage is base._storage and src._offset == offset
                and src._strides == strides):        # else src is the region already
            _write(base._view(shape, strides, offset), src)
        ctx.mark_dirty(base)
        return base

    @staticmethod
    def backward(ctx, g):
        shape, strides, offset = ctx.geometry
        g = g.contiguous()
        g_base = None
        if ctx.needs_input_grad[0]:
            g_base = g.clone()
            as_strided(g_base, shape, strides, g_base._offset + offset).zero_()
        g_src = as_strided(g, shape, strides, g._offset + offset).clone()
        return g_base, g_src, None


def _relative_geometry(view, base):
    if not base.is_contiguous():
        raise NotImplementedError("in-place autograd on a view of a non-contiguous base "
                                  "tensor is not supported; call .contiguous() first")
    return (view._shape, view._strides, view._offset - base._offset)


def rebase_view(view, src):
    """`view` now holds `src` (written into it here unless src is the view's memory):
    its base ends in CopySlices(old base, src), one version bump, and the view in an
    AsStrided of the new base, both recorded by `Function.apply`."""
    base = view._base
    CopySlices.apply(base, src, _relative_geometry(view, base))
    v = AsStrided.apply(base, view._shape, view._strides, view._offset)
    view.grad_fn, view._output_nr, view._requires_grad = v.grad_fn, 0, v._requires_grad


dirty.rebase_view = rebase_view
