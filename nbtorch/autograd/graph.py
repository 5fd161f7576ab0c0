"""The tape's nodes: a `Node` per recorded op, `AccumulateGrad` per leaf.

A Node's `next_functions` are (node, output index) edges to the nodes that
produced its inputs (None for inputs that need no gradient). Tensor hooks on
non-leaf tensors live on their grad_fn, keyed by output index.
"""
import weakref

from .._cpu_allocator import owns
from .._kernel_args import copy_values
from .._tensor import Tensor, empty
from .saved_hooks import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks  # noqa: F401
from .mutation import allow_mutation_on_saved_tensors  # noqa: F401

__all__ = ["Node", "AccumulateGrad", "gradient_edge", "register_tensor_hook",
           "RemovableHandle", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks", "increment_version", "register_multi_grad_hook",
           "allow_mutation_on_saved_tensors"]


class RemovableHandle:
    """Returned by hook registration; `remove()` unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks_dict):
        self._hooks_ref = weakref.ref(hooks_dict) if hooks_dict is not None else None
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self):
        d = self._hooks_ref() if self._hooks_ref is not None else None
        if d is not None:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _HookDict(dict):
    """A dict that can be weakly referenced by handles."""


class Node:
    """One recorded op on the tape.

    The per-node fields start as class-level defaults (a node is created per
    recorded op, so its constructor does nothing); instances set what they use.
    """

    _is_accumulate = False
    # False once anything but `apply` must run for this node (a hook of any kind, a
    # retained gradient: set where those are registered); the engine's short path
    # runs only nodes where it holds
    _plain = True
    next_functions = ()
    _input_meta = ()             # (shape, dtype, device) per input, None if no grad
    _tensor_hooks = None         # {output_nr: _HookDict}
    _retain = None               # {output_nr: weakref to tensor retaining grad}
    _pre_hooks = None
    _post_hooks = None
    _output_meta = None          # (shape, dtype, device) per output, None if not a tensor
    _materialize = True          # undefined output gradients become zeros before apply
    _arg_pos = None              # argument index of each edge, when some were not tensors
    # True where apply() returns only new tensors or views of the gradients it was
    # given, and keeps none of them (built-in backward formulas, by contract): the
    # engine may then hand a new one to a leaf as its `.grad` without a copy
    _new_grads = False

    def name(self):
        return type(self).__name__

    def __repr__(self):        # the class name, as PyTorch prints (name() may be qualified)
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    def apply(self, *grads):
        raise NotImplementedError

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) after this node runs."""
        if self._post_hooks is None:
            self._post_hooks = _HookDict()
        self._plain = False
        h = RemovableHandle(self._post_hooks)
        self._post_hooks[h.id] = fn
        return h

    def register_prehook(self, fn):
        """fn(grad_outputs) before this node runs; may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = _HookDict()
        self._plain = False
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks[h.id] = fn
        return h

    @property
    def metadata(self):
        if not hasattr(self, "_metadata"):
            self._metadata = {}
        return self._metadata

    def _release(self):
        """Free what the node saved for backward (called unless retain_graph)."""


class AccumulateGrad(Node):
    """The sink for a leaf tensor: adds the incoming gradient into `.grad`."""

    _is_accumulate = True
    _plain = False
    _post_acc_hooks = None       # {id: hook(tensor)}, run after `.grad` was updated

    def __init__(self, tensor):
        self.variable = tensor
        self._input_meta = ((tensor._shape, tensor.dtype, tensor.device),)

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def accumulate(self, grad, create_graph, owned=False):
        """`.grad` = grad on first use, then += in place.

        `owned` is the engine's word that nothing but its buffer holds `grad`'s
        memory (see engine.py): `.grad` then takes it as is, as PyTorch steals
        such a gradient (one copy less per parameter per step); otherwise
        `.grad` gets a private copy, so a leaf's gradient never aliases the
        user's, a hook's or another leaf's.
        """
        t = self.variable
        gd = t.__dict__.get("_grad_dtype")          # Tensor.grad_dtype, when set
        if gd is not None and grad.dtype is not gd:
            grad, owned = grad.to(gd), True
        if t._grad is None:
            if create_graph:
                t._grad = grad
            else:
                t._grad = grad if owned and _dense(grad) else _copy_of(grad)
        elif create_graph:
            t._grad = t._grad + grad
        else:
            t._grad.add_(grad.detach())


def _copy_of(g):
    """A contiguous copy of `g` outside autograd (clone() without its node)."""
    if g.__class__ is not Tensor and (g.is_sparse or g.is_sparse_csr or g.is_nested):
        return g.detach().clone()       # a sparse or nested gradient: its own copy
    out = empty(g._shape, g.dtype, g.device)
    if g.device.type == "cpu" and g.__class__ is Tensor:
        out._array[...] = g._array      # same shape and dtype: NumPy's copy, no dispatch
    else:
        copy_values(out, g)
    return out


def _dense(g):
    """True when `g` is a plain tensor spanning its whole storage contiguously, so it can
    be a `.grad` as is (no larger buffer kept alive, no borrowed memory, no odd strides)."""
    if g.__class__ is not Tensor or g._requires_grad or g._offset or not g.is_contiguous():
        return False
    data = g._storage.data
    if data.size != g.numel():
        return False
    return g.device.type != "cpu" or owns(data)


NO_EDGE = (None, 0)      # an input that needs no gradient, written as PyTorch writes it


def gradient_edge(t):
    """The (node, output index) edge that carries gradient into tensor `t`."""
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    if t._requires_grad:
        acc = t._accumulator() if t._accumulator is not None else None
        if acc is None:
            acc = AccumulateGrad(t)
            t._accumulator = weakref.ref(acc)
        return (acc, 0)
    return None


def register_tensor_hook(t, hook):
    if not t.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t.grad_fn is None:
        node = gradient_edge(t)[0]
        t._hooks = node          # keep the accumulator (and its hooks) alive
        slot = 0
    else:
        node, slot = t.grad_fn, t._output_nr
    if node._tensor_hooks is None:
        node._tensor_hooks = {}
    node._plain = False
    hooks = node._tensor_hooks.setdefault(slot, _HookDict())
    h = RemovableHandle(hooks)
    hooks[h.id] = hook
    return h


def register_post_accumulate_hook(t, hook):
    """`hook(t)` after the engine accumulated into leaf `t`'s `.grad` (the moment
    DistributedDataParallel starts a bucket's all-reduce)."""
    if t.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                           "tensors")
    if not t.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    node = gradient_edge(t)[0]
    t._hooks = node              # keep the accumulator (and its hooks) alive
    if node._post_acc_hooks is None:
        node._post_acc_hooks = _HookDict()
    h = RemovableHandle(node._post_acc_hooks)
    node._post_acc_hooks[h.id] = hook
    return h


def draw(tensors, params=None):
    """Draw the autograd graph of `tensors` as SVG (inline in Jupyter); see `autograd.draw`."""
    from .draw import draw as _draw
    return _draw(tensors, params=params)


def increment_version(tensor):
    """Mark `tensor` (or each tensor of an iterable) as modified in place, as a write
    through ``.data`` or NumPy would have: autograd then refuses its stale saved copies."""
    from .._tensor import Tensor
    for t in ([tensor] if isinstance(tensor, Tensor) else tensor):
        t._bump()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """One hook over the gradients of several tensors: see multi_grad.py."""
    from .multi_grad import register_multi_grad_hook as register
    return register(tensors, fn, mode=mode)
