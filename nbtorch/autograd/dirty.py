"""`ctx.mark_dirty`: inputs a Function's forward modified in place.

As in PyTorch, a dirty input must be returned; it comes back as the same
object with its version bumped once, and its history now ends in the
Function's node. A view passes that history on to its base: the base ends in
a CopySlices node and the view in an AsStrided of it, exactly what an in-place
op on a view records (both go through `rebase_view`).
"""
import warnings

__all__ = ["check_dirty", "check_dirty_returned", "finish_dirty", "rebase_view"]

_DIRTY_LEAF = "a leaf Variable that requires grad has been used in an in-place operation."
_DIRTY_VIEW_LEAF = ("a view of a leaf Variable that requires grad is being used in an "
                    "in-place operation.")
_DIRTY_NOT_RETURNED = ("Some elements marked as dirty during the forward method were not "
                       "returned as output. The inputs that are modified inplace must all "
                       "be outputs of the Function.")

rebase_view = None
"""rebase_view(view, src): `view` was written in place with `src`'s values (same
storage, or copied in); its base ends in a CopySlices node, one version bump, and
the view in an AsStrided of it. Installed by nbtorch.ops._inplace (its nodes'
backward formulas are ops, above this module); in-place ops use it too."""


def among(t, tensors):
    for d in tensors:
        if d is t:
            return True
    return False


def check_dirty_returned(dirty, out):
    """`out`: what forward returned (a tensor, a tuple, or the list `_record` made)."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for d in dirty:
        if not among(d, outs):
            raise RuntimeError(_DIRTY_NOT_RETURNED)


def check_dirty(ctx, args, outs):
    """PyTorch's refusals, after forward: dirty tensors are outputs and not leaves
    that require grad (nor views of such leaves)."""
    check_dirty_returned(ctx._dirty, outs)
    for d in ctx._dirty:
        if not among(d, args):
            warnings.warn("ctx.mark_dirty() received a tensor that was not an input. Only "
                          "input Tensors that have been mutated should be passed to "
                          "ctx.mark_dirty().")
        b = d._base
        if b is None:
            if d.grad_fn is None and d._requires_grad:
                raise RuntimeError(_DIRTY_LEAF)
        elif b.grad_fn is None and b._requires_grad:
            raise RuntimeError(_DIRTY_VIEW_LEAF)


def finish_dirty(ctx, views):
    """Bump each dirty tensor's version once and rebase the dirty views on `ctx`; then
    saved tensors sharing their memory count as saved at the end of forward, as
    PyTorch saves them (so saving a dirty input is no version error)."""
    for d in ctx._dirty:
        if not any(d is v for v, _ in views):
            d._bump()                   # a view's bump is its base's CopySlices
    for v, i in views:
        src = v.detach()                # the view's values, as output i of ctx
        src.grad_fn, src._output_nr, src._requires_grad = ctx, i, True
        if ctx._saved:
            ctx._saved = tuple([(src,) + s[1:] if s is not None and s[0] is v else s
                                for s in ctx._saved])
        rebase_view(v, src)
    if ctx._saved:
        storages = [d._storage for d in ctx._dirty]
        ctx._saved = tuple([
            (s[0], s[0]._storage.version) + s[2:]
            if s is not None and any(s[0]._storage is st for st in storages) else s
            for s in ctx._saved])
    ctx._dirty = ()                     # the node keeps no reference to its outputs
