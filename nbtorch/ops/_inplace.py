"""In-place ops under autograd: the version counter, leaf checks, and CopySlices.

An in-place op without autograd just runs its kernel into `self`. With
autograd it computes the result out of place from a snapshot of `self`'s old
value, writes it into `self`, and rebases the history: `self` (or, for a
view, its base through a CopySlices node) now ends in the op's node.
"""
from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.function import Function
from ..autograd.graph import NO_EDGE, gradient_edge

__all__ = ["inplace_guard", "check_inplace", "check_no_internal_overlap"]

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


def check_no_internal_overlap(self):
    """PyTorch's refusal to write into a tensor whose elements share memory (expand)."""
    for n, s in zip(self._shape, self._strides):
        if s == 0 and n > 1:
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor "
                "refers to a single memory location. Please clone() the tensor before "
                "performing the operation.")


def inplace_guard(self, fn_cls, args, raw, kwargs=None):
    """Run `raw()` (writes into self, bumps the version) or the autograd path."""
    check_no_internal_overlap(self)
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
    from .copy import raw_copy_
    raw_copy_(self, out)
    if base is not None:
        _rebase_view(self, base, out)
    else:
        self.grad_fn, self._output_nr, self._requires_grad = out.grad_fn, out._output_nr, \
            out._requires_grad
    return self


def _current_value(t):
    """A copy of t's values that carries t's current autograd history."""
    b = t._base
    if b is not None and b._requires_grad:
        from .views import as_strided
        return as_strided(b, t._shape, t._strides, t._offset).clone()
    if t._requires_grad:
        return t.clone()
    return t.detach().clone()


class CopySlices(Function):
    """base[region] = src: grad to old base with the region zeroed, grad to src = region."""

    @staticmethod
    def backward(ctx, g):
        from .views import as_strided
        g = g.contiguous()
        g_base = g.clone()
        geom = ctx.geometry
        as_strided(g_base, *geom).zero_()
        g_src = as_strided(g, *geom).clone()
        return g_base, g_src


def _relative_geometry(view, base):
    if not base.is_contiguous():
        raise NotImplementedError("in-place autograd on a view of a non-contiguous base "
                                  "tensor is not supported; call .contiguous() first")
    return (view._shape, view._strides, view._offset - base._offset)


def _rebase_view(view, base, out):
    geom = _relative_geometry(view, base)
    node = CopySlices._backward_cls()
    node.next_functions = (gradient_edge(base) or NO_EDGE, gradient_edge(out) or NO_EDGE)
    node._input_meta = (
        (base._shape, base.dtype, base.device) if base._requires_grad else None,
        (out._shape, out.dtype, out.device) if out._requires_grad else None)
    node.needs_input_grad = (base._requires_grad, out._requires_grad)
    node._output_meta = ((base._shape, base.dtype, base.device),)
    node.geometry = geom
    base.grad_fn, base._output_nr, base._requires_grad = node, 0, True
    from .views import AsStrided
    vnode = AsStrided._backward_cls()
    vnode.next_functions = ((node, 0),)
    vnode._input_meta = ((base._shape, base.dtype, base.device),)
    vnode.needs_input_grad = (True, False, False, False)
    vnode._output_meta = ((view._shape, view.dtype, view.device),)
    vnode.in_shape, vnode.geometry = base._shape, geom
    vnode.next_functions = vnode.next_functions + (NO_EDGE,) * 3
    vnode._input_meta = vnode._input_meta + (None, None, None)
    view.grad_fn, view._output_nr, view._requires_grad = vnode, 0, True
