"""`torch.utils.checkpoint`: trade compute for memory by recomputing a segment's forward
during backward instead of keeping its activations.

Both of PyTorch's variants:

- ``use_reentrant=True``: the segment runs under ``no_grad``; its backward recomputes
  it with gradients on and runs a nested ``backward()`` that accumulates into the
  parameters' ``.grad`` (so, as in PyTorch, it cannot serve ``autograd.grad`` or
  ``backward(inputs=...)``, and keyword arguments are refused).
- ``use_reentrant=False``: the segment's forward runs once with recording on, only to
  learn which tensors requiring grad it reads (its arguments, anywhere in nested
  containers, and the leaves it reaches, such as a module's parameters); that graph is
  freed at once, and the segment becomes one tape node whose inputs are those tensors.
  Its backward recomputes the segment and returns their gradients, so
  ``autograd.grad`` and ``backward(inputs=...)`` work. (A non-leaf tensor computed
  outside the segment and captured by a closure is not discovered: pass it as an
  argument.)

The random state is saved before the forward and restored for the recompute
(``preserve_rng_state=True``), so dropout draws the same mask twice.
"""
import contextlib
import warnings

from .._tensor import Tensor
from ..amp.autocast_mode import _autocast_restored, _autocast_state
from ..autograd import grad_mode
from ..autograd.engine import backward as _backward
from ..autograd.engine import grad as _grad
from ..autograd.function import Function
from ._pytree import tree_flatten, tree_unflatten

__all__ = ["checkpoint", "checkpoint_sequential", "noop_context_fn", "detach_variable",
           "CheckpointError"]


class CheckpointError(RuntimeError):
    pass


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """Each tensor of the tuple detached, keeping its requires_grad flag."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            d = x.detach()
            d.requires_grad = x.requires_grad
            out.append(d)
        else:
            out.append(x)
    return tuple(out)


@contextlib.contextmanager
def _rng_restored(state):
    """Run the block with the default generator at `state`; put the current one back."""
    if state is None:
        yield
        return
    from .._generator import get_rng_state, set_rng_state
    now = get_rng_state()
    set_rng_state(state)
    try:
        yield
    finally:
        set_rng_state(now)


def _rng_state(preserve):
    if not preserve:
        return None
    from .._generator import get_rng_state
    return get_rng_state()


# ---- use_reentrant=True -----------------------------------------------------------------

class CheckpointFunction(Function):
    """The reentrant variant's tape node (see the module docstring)."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.rng_state = _rng_state(preserve_rng_state)
        ctx.autocast = _autocast_state()        # the recomputation runs under it again
        ctx.args = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with grad_mode.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not grad_mode.STATE.accumulate:
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() "
                "or passing an `inputs` parameter to .backward(). To resolve this error, you "
                "can either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        tensors = iter(detach_variable(tuple(ctx.saved_tensors)))
        inputs = [next(tensors) if a is None else a for a in ctx.args]
        with _rng_restored(ctx.rng_state), grad_mode.enable_grad(), \
                _autocast_restored(ctx.autocast):
            outputs = ctx.run_function(*inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None
                                    for x in inputs)


# ---- use_reentrant=False ----------------------------------------------------------------

def _leaves_reached(outputs, exclude):
    """The leaf tensors requiring grad that the graph behind `outputs` reaches."""
    seen, found, ids = set(), [], {id(t) for t in exclude}
    stack = [o.grad_fn for o in outputs if o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if node._is_accumulate:
            v = node.variable
            if id(v) not in ids:
                ids.add(id(v))
                found.append(v)
            continue
        stack.extend(n for n, _ in node.next_functions)
    return found


class _NonReentrant(Function):
    """The non-reentrant variant's tape node: inputs are the segment's tensor arguments
    and the leaves it reads; outputs its (already computed) tensor results."""

    @staticmethod
    def forward(ctx, state, outputs, *tensors):
        ctx.state = state
        ctx.save_for_backward(*tensors)
        return tuple(o.detach() for o in outputs)

    @staticmethod
    def backward(ctx, *grads):
        function, rebuild, n_args, rng, recompute_ctx, amp_state = ctx.state
        saved = list(ctx.saved_tensors)
        # under create_graph (grad mode on in backward) the recomputation runs on the
        # inputs themselves, so the gradients it gives have a graph (double backward)
        create = grad_mode.STATE.enabled
        args = saved[:n_args] if create else [
            x.detach().requires_grad_(True) if x.requires_grad else x.detach()
            for x in saved[:n_args]]
        wrt_all = args + saved[n_args:]
        with _rng_restored(rng), grad_mode.enable_grad(), recompute_ctx, \
                _autocast_restored(amp_state):
            a, k = rebuild(args)
            outputs = [o for o in tree_flatten(function(*a, **k))[0] if isinstance(o, Tensor)]
        pairs = [(o, g) for o, g in zip(outputs, grads) if o.requires_grad and g is not None]
        wrt = [x for x in wrt_all if x.requires_grad]
        got = [None] * len(wrt)
        if pairs and wrt:
            got = _grad([o for o, _ in pairs], wrt, [g for _, g in pairs], allow_unused=True,
                        create_graph=create)
        got = iter(got)
        return (None, None) + tuple(next(got) if x.requires_grad else None for x in wrt_all)


def _checkpoint_without_reentrant(function, preserve, context_fn, args, kwargs):
    forward_ctx, recompute_ctx = context_fn()
    if not grad_mode.STATE.enabled:
        with forward_ctx:
            return function(*args, **kwargs)
    leaves, spec = tree_flatten((args, kwargs))
    pos = [i for i, x in enumerate(leaves) if isinstance(x, Tensor)]

    def rebuild(tensors):
        filled = list(leaves)
        for i, t in zip(pos, tensors):
            filled[i] = t
        return tree_unflatten(filled, spec)

    rng = _rng_state(preserve)
    inputs = [leaves[i] for i in pos]
    detached = [x.detach().requires_grad_(True) if x.requires_grad else x.detach()
                for x in inputs]
    with forward_ctx:
        a, k = rebuild(detached)
        out = function(*a, **k)
    out_leaves, out_spec = tree_flatten(out)
    out_tensors = [o for o in out_leaves if isinstance(o, Tensor)]
    if not any(o.requires_grad for o in out_tensors):
        return out
    captured = _leaves_reached(out_tensors, detached)
    state = (function, rebuild, len(inputs), rng, recompute_ctx, _autocast_state())
    new = iter(_NonReentrant.apply(state, out_tensors, *inputs, *captured))
    return tree_unflatten([next(new) if isinstance(o, Tensor) else o for o in out_leaves],
                          out_spec)


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, **kwargs):
    """``function(*args, **kwargs)``, keeping no activations: recomputed in backward.

    Example:
        >>> y = checkpoint(block, x, use_reentrant=False)
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly. use_reentrant=False is recommended, but if you need to "
                      "preserve the current default behavior, you can pass "
                      "use_reentrant=True.", UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        from ..jit._concrete import is_tracing, unwrap
        values = unwrap(args) if is_tracing() else args       # traced values: their tensors
        no_grads = grad_mode.STATE.enabled and not any(
            isinstance(a, Tensor) and a.requires_grad for a in values)
        if no_grads:
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be "
                          "None", UserWarning, stacklevel=2)
        if is_tracing():
            # jit.trace / compile cannot record the nested backward (traced through, the
            # segment got no gradients): the graph runs it as the non-reentrant variant,
            # whose gradients are the same
            if no_grads:
                with grad_mode.no_grad():
                    return function(*args)
            return _checkpoint_without_reentrant(function, preserve, context_fn, args, {})
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a Sequential (or list of modules) in `segments` checkpointed chunks; the last
    chunk runs normally, as PyTorch's."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
                      "parameter should be passed explicitly. use_reentrant=False is "
                      "recommended.", UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())
    functions = list(functions)
    size = len(functions) // segments
    end = -1

    def run_function(start, stop):
        def forward(x):
            for j in range(start, stop + 1):
                x = functions[j](x)
            return x
        return forward

    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run_function(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1)(input)
