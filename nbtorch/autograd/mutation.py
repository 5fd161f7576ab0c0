"""``torch.autograd.graph.allow_mutation_on_saved_tensors()``.

Inside the context, writing in place into a tensor saved for backward is
allowed: backward uses the value it had when it was saved. PyTorch clones a
saved tensor lazily, just before the first in-place write; nbtorch's in-place
ops bump the version after writing, so here every tensor saved inside the
context is snapshotted when its node is recorded (more memory, same results),
and backward reads the original while its version is unchanged, else the
snapshot. Backward must run inside the same context, as PyTorch requires.
"""
import contextlib
import weakref

from .saved_hooks import saved_tensors_hooks

__all__ = ["allow_mutation_on_saved_tensors"]

_ENABLED = [False]
_OUTSIDE = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
            "in which the graph was originally recorded.")       # (PyTorch's spacing)


class _Handle:
    """What a node keeps for one saved tensor (weakly keyed in the context's maps)."""


class _AllowMutationOnSavedContext:
    """The context's state: each saved tensor with its version, and its snapshot."""

    def __init__(self):
        self.original = weakref.WeakKeyDictionary()     # handle -> (tensor, version)
        self.cloned = weakref.WeakKeyDictionary()       # handle -> snapshot

    def clear(self):
        self.original.clear()
        self.cloned.clear()


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Allow in-place writes into tensors saved for backward (backward sees the values
    they had when saved). Yields the context's state object."""
    ctx = _AllowMutationOnSavedContext()

    def pack(t):
        h = _Handle()
        ctx.original[h] = (t, t._version)
        ctx.cloned[h] = t.detach().clone()
        return h

    def unpack(h):
        if not _ENABLED[0] or h not in ctx.original:
            raise AssertionError(_OUTSIDE)
        t, version = ctx.original[h]
        return t if t._version == version else ctx.cloned[h]

    with saved_tensors_hooks(pack, unpack):
        try:
            if _ENABLED[0]:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be "
                                   "nested")
            _ENABLED[0] = True
            yield ctx
        finally:
            ctx.clear()
            _ENABLED[0] = False
