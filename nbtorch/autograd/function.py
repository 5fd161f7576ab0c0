"""`autograd.Function`: forward and backward side by side, for built-in and user ops.

`Fn.apply(*args)` runs `forward` with recording off, and when grad mode is on
and a tensor argument requires grad, records one node (the `ctx`) on the
tape. Every built-in op is such a Function, so a user's op is recorded,
checked and freed exactly like ours.

An input that `forward` modified in place is declared with `ctx.mark_dirty`:
it is returned as is, its version is bumped, and its history now ends in the
Function's node (see dirty.py).
"""
import functools

from .saved_hooks import ACTIVE as SAVED_HOOKS, Packed, pack_saved
from .._dtype import type_name
from .._tensor import Tensor
from . import anomaly_mode, grad_mode
from .dirty import check_dirty, check_dirty_returned, finish_dirty, among
from .graph import NO_EDGE, Node, gradient_edge

__all__ = ["Function", "FunctionCtx", "once_differentiable", "delayed_error"]

_FREED = ("Trying to backward through the graph a second time (or directly access saved "
          "tensors after they have already been freed). Saved intermediate values of the "
          "graph are freed when you call .backward() or autograd.grad(). Specify "
          "retain_graph=True if you need to backward through the graph a second time or "
          "if you need to access saved tensors after calling backward.")

_ANOMALY = anomaly_mode.STATE

# How many wrappers of `Function.apply` are installed (a graph capture, the profiler):
# op classes with a fast path around `apply` (the elementwise ops') take it only at 0.
APPLY_WRAPPERS = [0]
# A tracer's hook (jit/_concrete.py) for a Function applied to traced values, which are no
# Tensors: ``hook(cls, args, kwargs)`` records it as one node, or NotImplemented lets it run.
TRACE_HOOK = [None]


def unrecorded(*tensors):
    """True when an op on `tensors` records no node (grad mode off, or none requires grad)
    and no wrapper of `Function.apply` watches: the condition for an op's fast path that
    skips `Function.apply` (a capture or the profiler must see every call)."""
    if APPLY_WRAPPERS[0]:
        return False
    if grad_mode.STATE.enabled:
        for t in tensors:
            if t._requires_grad:
                return False
    return True


class FunctionCtx:
    """What `forward` may store for `backward` (PyTorch's ctx API)."""

    _saved = None
    _materialize = True
    _dirty = ()
    needs_input_grad = ()

    def save_for_backward(self, *tensors):
        saved = []
        for i, t in enumerate(tensors):
            if t is None:
                saved.append(None)
            elif isinstance(t, Tensor):
                saved.append((t, t._storage.version))
            else:
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{i} is of type {type(t).__name__}")
        self._saved = tuple(saved)

    @property
    def saved_tensors(self):
        saved = self._saved
        if saved is _RELEASED:
            raise RuntimeError(_FREED)
        if saved is None:
            return ()
        out = []
        for s in saved:
            if s is None:
                out.append(None)
            elif len(s) == 2 and s[0]._storage.version == s[1]:
                out.append(s[0])            # the common case: an unchanged saved input
            else:
                out.append(_unpack(s, self))
        return tuple(out)

    def _saved_data(self, i):
        """Saved tensor `i` after the version check, but never re-attached to this node:
        for first-order backward formulas, which record nothing."""
        saved = self._saved
        if saved is _RELEASED:
            raise RuntimeError(_FREED)
        s = saved[i]
        if s is None or s[0]._storage.version == s[1]:
            return s and s[0]
        return _unpack(s, self)

    def save_for_forward(self, *tensors):
        """Keep tensors for a ``jvp`` staticmethod. nbtorch derives forward-mode derivatives
        from `backward` (a double vjp), so they are only checked and kept, and a Function
        written for both modes (``setup_context`` saving for each) runs unchanged."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_forward expects all arguments to be tensors; you "
                                "should save non-tensors as attributes on ctx.")
        self.saved_for_forward = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_diff = {id(t) for t in tensors}

    def mark_dirty(self, *tensors):
        """Declare inputs that forward modified in place (they must be returned)."""
        self._dirty = tensors

    def set_materialize_grads(self, value):
        self._materialize = bool(value)


_RELEASED = object()


def _unpack(saved, ctx):
    if saved is None:
        return None
    t, version = saved[0], saved[1]
    if t.__class__ is Packed:           # saved_tensors_hooks: the unpack hook's tensor
        t = t.unpack(t.value)
        if len(saved) == 3:
            t = t.detach()
            t.grad_fn, t._output_nr, t._requires_grad = ctx, saved[2], True
        return t
    if t._storage.version != version:
        fn = ctx if len(saved) == 3 else t.grad_fn      # a saved output: of this node
        node = fn.name() if fn is not None else "a leaf"
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [{_type_name(t)} {list(t.shape)}], which is output "
            f"{saved[2] if len(saved) == 3 else t._output_nr} of {node}, is at version {t._storage.version}; expected "
            f"version {version} instead. Hint: the backtrace further above can point to "
            "the operation that failed to compute its gradient.")
    if len(saved) == 3:            # a saved output: re-attach it to this node
        t = t.detach()
        t.grad_fn, t._output_nr, t._requires_grad = ctx, saved[2], True
    return t


def _type_name(t):
    """PyTorch's legacy type name of `t` ('torch.FloatTensor', 'torch.cuda.LongTensor')."""
    prefix = "torch.cuda." if t.device.type == "cuda" else "torch."
    return prefix + type_name(t.dtype) + "Tensor"


class BackwardNode(Node, FunctionCtx):
    """The node a Function records; it is also the `ctx` its forward saw."""

    _forward_cls = None

    def apply(self, *grads):
        return self._forward_cls.backward(self, *grads)

    def _release(self):
        if self._saved is not None:
            self._saved = _RELEASED

    def __getattr__(self, name):        # only for names not found: `_saved_<x>` by
        if name.startswith(("_saved_", "_raw_saved_")):     # PyTorch's names
            from .saved_names import saved_attr             # (see saved_names.py)
            return saved_attr(self, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


class _UnrecordedCtx(FunctionCtx):
    """The ctx a forward sees when nothing is recorded (cheaper than a Node)."""

    _forward_cls = None


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        builtin = cls.__module__.startswith("nbtorch.")
        node_attrs = {"_forward_cls": cls, "_new_grads": builtin}
        qualified = attrs.get("_node_name")      # PyTorch's name for a node of its own
        if qualified:
            node_name = qualified.rpartition("::")[2]
            node_attrs["name"] = lambda self: qualified
        else:                                    # `_backward_name`: PyTorch's node name
            node_name = attrs.get("_backward_name") or (   # where the class's differs
                name + ("Backward0" if builtin else "Backward"))
        cls._backward_cls = type(node_name, (BackwardNode,), node_attrs)
        cls._unrecorded_cls = type(name + "Ctx", (_UnrecordedCtx,), {"_forward_cls": cls})
        if "setup_context" in attrs and "forward" in attrs:
            _split_forward(cls, attrs["forward"], attrs["setup_context"])


def _split_forward(cls, forward, setup_context):
    """PyTorch 2's style: ``forward(*args)`` without ctx plus ``setup_context(ctx, inputs,
    output)``; run as one ``forward(ctx, *args)`` so every apply path stays as it is."""
    forward = forward.__func__ if isinstance(forward, staticmethod) else forward
    setup = setup_context.__func__ if isinstance(setup_context, staticmethod) else \
        setup_context

    def joined(ctx, *args, **kwargs):
        out = forward(*args, **kwargs)
        setup(ctx, args, out)
        return out
    joined.__name__, joined.__doc__ = forward.__name__, forward.__doc__
    cls.forward = staticmethod(joined)


_RENAMED = {}


def renamed(cls, node_name):
    """A subclass of Function `cls`, same forward and backward, whose nodes print as
    `node_name`: PyTorch's name where one nbtorch Function stands for several ops."""
    sub = _RENAMED.get((cls, node_name))
    if sub is None:
        sub = _RENAMED[cls, node_name] = type(cls.__name__, (cls,), {
            "_backward_name": node_name, "__module__": cls.__module__,
            "__doc__": cls.__doc__})
    return sub


class Function(metaclass=_FunctionMeta):
    """Subclass with static `forward(ctx, *args)` and `backward(ctx, *grads)`.

    Example:
        >>> class Exp(Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         y = x.exp(); ctx.save_for_backward(y); return y
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         y, = ctx.saved_tensors; return g * y
        >>> Exp.apply(nbtorch.ones(2, requires_grad=True))
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method "
                                  "for your custom autograd.Function to use it with "
                                  "backward mode AD.")

    vjp = backward

    @staticmethod
    def setup_context(ctx, inputs, output):
        """PyTorch 2's style: define it (and ``forward`` without ctx) to save for backward."""
        raise NotImplementedError("setup_context is not overridden")

    # torch.func.vmap runs the function per batch element, so every Function has a
    # rule; a `vmap(info, in_dims, *args)` staticmethod is used where vmap maps
    # `Fn.apply` itself (see func/_vmap.py)
    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either "
                                  "override the vmap staticmethod or set "
                                  "generate_vmap_rule=True.")

    # True for Functions whose `forward` without recording is `compute(*args)` (the
    # elementwise ops): when nothing is recorded, `apply` calls `compute` directly,
    # skipping the ctx, which is every backward formula's and inference's hot path.
    _untracked_compute = False

    @classmethod
    def apply(cls, *args, **kwargs):
        state = grad_mode.STATE
        if state.enabled:
            for a in args:
                if isinstance(a, Tensor) and a._requires_grad:
                    return _apply_recorded(cls, args, kwargs, state)
            if cls._untracked_compute:     # (an empty **kwargs costs a dict per call)
                return cls.compute(*args, **kwargs) if kwargs else cls.compute(*args)
            if TRACE_HOOK[0] is not None:
                out = TRACE_HOOK[0](cls, args, kwargs)
                if out is not NotImplemented:
                    return out
            ctx = cls._unrecorded_cls()        # nothing will run backward: no Node
            ctx.needs_input_grad = (False,) * len(args)
            state.enabled = False
            try:
                out = cls.forward(ctx, *args, **kwargs)
            finally:
                state.enabled = True
        else:
            if cls._untracked_compute:
                return cls.compute(*args, **kwargs) if kwargs else cls.compute(*args)
            if TRACE_HOOK[0] is not None:
                out = TRACE_HOOK[0](cls, args, kwargs)
                if out is not NotImplemented:
                    return out
            ctx = cls._unrecorded_cls()
            ctx.needs_input_grad = (False,) * len(args)
            out = cls.forward(ctx, *args, **kwargs)
        if ctx._dirty:
            check_dirty_returned(ctx._dirty, out)
            for t in ctx._dirty:
                t._bump()
        return out


def _apply_recorded(cls, args, kwargs, state):
    """Run `forward` with recording off, then record its node on the tape."""
    ctx = cls._backward_cls()
    if len(args) == 2:                  # most ops: no comprehension frame, no list
        a, b = args
        ctx.needs_input_grad = (isinstance(a, Tensor) and a._requires_grad,
                                isinstance(b, Tensor) and b._requires_grad)
    else:
        ctx.needs_input_grad = tuple([isinstance(a, Tensor) and a._requires_grad
                                      for a in args])
    state.enabled = False              # needs_input_grad is visible to forward, as in PyTorch
    try:
        out = cls.forward(ctx, *args, **kwargs) if kwargs else cls.forward(ctx, *args)
    finally:
        state.enabled = True
    return _record(ctx, args, out)


def _tensor_positions(args):
    """The argument slots of `args` holding tensors (a tensor and a number: one of two)."""
    if len(args) == 2:
        return (0,) if isinstance(args[0], Tensor) else (1,)
    return tuple([i for i, a in enumerate(args) if isinstance(a, Tensor)])


def _record(ctx, args, out):
    """Link `ctx` into the tape: an edge per tensor argument, as PyTorch's next_functions
    (non-tensor arguments get no edge; `_arg_pos` maps edges back to argument slots)."""
    if _ANOMALY.enabled:
        ctx._forward_stack = anomaly_mode.forward_stack()
    edges, metas = [], []
    only_tensors = True
    for a, need in zip(args, ctx.needs_input_grad):
        if need:
            fn = a.grad_fn
            edges.append((fn, a._output_nr) if fn is not None else gradient_edge(a))
            metas.append((a._shape, a.dtype, a.device))
        elif isinstance(a, Tensor):
            edges.append(NO_EDGE)
            metas.append(None)
        else:
            only_tensors = False
    if not only_tensors:
        ctx._arg_pos = _tensor_positions(args)
    ctx.next_functions = tuple(edges)
    ctx._input_meta = tuple(metas)
    non_diff = ctx.__dict__.get("_non_diff", ())
    dirty = ctx._dirty
    if out.__class__ is Tensor and not non_diff and not dirty:    # the common case
        ctx._output_meta = ((out._shape, out.dtype, out.device),)
        if out.dtype.is_floating_point or out.dtype.is_complex:
            if out.grad_fn is not None or out._requires_grad:
                out = out.detach()     # forward returned an input as is: record an alias
            out.grad_fn = ctx
            out._output_nr = 0
            out._requires_grad = True
            saved = ctx._saved
            if saved:
                for s in saved:
                    if s is not None and s[0] is out:
                        _detach_saved_outputs(ctx)
                        break
                if SAVED_HOOKS[0]:
                    pack_saved(ctx)
        return out
    single = not isinstance(out, tuple)
    outs = [out] if single else list(out)
    if dirty:
        check_dirty(ctx, args, outs)
    views = []                         # dirty views, rebased once this node is complete
    metas_out = []
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            metas_out.append(None)
            continue
        metas_out.append((o._shape, o.dtype, o.device))
        if id(o) in non_diff or not (o.dtype.is_floating_point or o.dtype.is_complex):
            continue
        if dirty and among(o, dirty):
            if o._base is None:        # modified in place: its history ends here
                o.grad_fn, o._output_nr, o._requires_grad = ctx, i, True
            else:
                views.append((o, i))
            continue
        if o.grad_fn is not None or o._requires_grad:
            o = outs[i] = o.detach()   # forward returned an input as is: record an alias
        o.grad_fn = ctx
        o._output_nr = i
        o._requires_grad = True
    ctx._output_meta = tuple(metas_out)
    if dirty:
        finish_dirty(ctx, views)
    if ctx._saved and any(s is not None and s[0].grad_fn is ctx for s in ctx._saved):
        _detach_saved_outputs(ctx)
    if SAVED_HOOKS[0] and ctx._saved:
        pack_saved(ctx)
    return outs[0] if single else tuple(outs)


def _detach_saved_outputs(ctx):
    """Saved outputs are kept as detached aliases, so no out -> node -> out cycle.

    At this point only the outputs of `ctx` have `ctx` as their grad_fn.
    """
    ctx._saved = tuple([
        (s[0].detach(), s[1], s[0]._output_nr) if s is not None and s[0].grad_fn is ctx
        else s for s in ctx._saved])


# ---- once_differentiable -------------------------------------------------------

_TWICE = ("trying to differentiate twice a function that was marked with "
          "@once_differentiable")


class _DelayedError(Function):
    """Aliases of its inputs whose node raises when differentiated (PyTorch's Error)."""

    _node_name = "torch::autograd::Error"

    @staticmethod
    def forward(ctx, message, n, *xs):
        ctx.message = message           # xs[n:]: tensors the node hangs from, so that a
        xs = xs[:n]                     # backward toward them reaches it
        return xs if len(xs) > 1 else xs[0]

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(ctx.message)


def delayed_error(outputs, message=_TWICE, inputs=()):
    """`outputs` (a tensor or a tuple, Nones kept) attached to a node that raises
    RuntimeError(message) if a backward reaches it: what a backward computed by kernels
    that record no graph returns under create_graph=True, so that differentiating it
    again is an error instead of a silently missing term. `inputs`: the tensors the
    missing derivatives are with respect to (the node hangs from them, so a backward
    asked for their gradients reaches it)."""
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    # each result detached and made a leaf that requires grad, so the error node has an
    # edge to record (PyTorch's fake_requires_grad)
    leaves = []
    for o in outs:
        if o is not None:
            o = o.detach()
            o.requires_grad = True
        leaves.append(o)
    tensors = [o for o in leaves if o is not None]
    if not tensors:
        return outputs
    hangs = [t for t in inputs if isinstance(t, Tensor) and t._requires_grad]
    got = _DelayedError.apply(message, len(tensors), *tensors, *hangs)
    got = iter(got if isinstance(got, tuple) else (got,))
    result = tuple(next(got) if o is not None else None for o in leaves)
    return result if isinstance(outputs, tuple) else result[0]


def once_differentiable(fn):
    """Mark a Function's backward as differentiable once, as PyTorch's decorator does.

    The backward runs with grad mode off. When it is itself being recorded
    (create_graph=True with gradients that require grad), its results come back
    attached to a node that raises "trying to differentiate twice ..." if a
    later backward reaches it.
    """
    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        state = grad_mode.STATE
        enabled = state.enabled
        state.enabled = False
        try:
            outputs = fn(ctx, *args, **kwargs)
        finally:
            state.enabled = enabled
        if not enabled or not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        return delayed_error(outputs)
    return wrapper
