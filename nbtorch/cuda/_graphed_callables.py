"""``make_graphed_callables``: PyTorch's recipe on nbtorch's emulated CUDA graphs.

For each callable: warm up on a side stream, capture its forward into one graph
and the gradient of its outputs (w.r.t. the inputs that require grad and the
module's parameters) into another, then return an autograd Function that copies
new inputs into the static ones, replays the forward graph, and in backward
copies the incoming gradients into the static grad outputs and replays the
backward graph. Modules keep their original forward for the other training mode.
"""
from .. import autograd
from .._tensor import Tensor
from ..utils import _pytree
from . import _runtime
from .graphs import CUDAGraph, graph, graph_pool_handle

__all__ = ["make"]


def _check(callables, sample_args):
    from ..nn import Module
    flat = []
    for c, args in zip(callables, sample_args):
        if isinstance(c, Module):
            if c._backward_hooks or c._forward_hooks or c._forward_pre_hooks:
                raise AssertionError(
                    "Modules must not have hooks registered at the time they are passed. "
                    "However, registering hooks on modules after passing them through "
                    "make_graphed_callables is allowed.")
            if not all(b.requires_grad is False for b in c.buffers()):
                raise AssertionError(
                    "In any :class:`~torch.nn.Module` passed to :func:`~make_graphed_callables`, "
                    "only parameters may be trainable. All buffers must have "
                    "``requires_grad=False``.")
        leaves = tuple(_pytree.tree_leaves(tuple(args)))
        if not all(isinstance(a, Tensor) for a in leaves):
            raise AssertionError("In the beta API, sample_args for each callable must contain "
                                 "only Tensors. Other types are not allowed.")
        flat.append(leaves)
    return flat


def _grads(outputs, inputs, grad_outputs, allow_unused):
    return autograd.grad(outputs=outputs, inputs=inputs, grad_outputs=grad_outputs,
                         only_inputs=True, allow_unused=allow_unused)


def make(callables, sample_args, num_warmup_iters, allow_unused_input, pool):
    from .. import empty_like, is_autocast_cache_enabled, is_autocast_enabled
    from ..nn import Module
    from .streams import Stream, stream, synchronize
    if is_autocast_enabled() and is_autocast_cache_enabled():
        raise RuntimeError("make_graphed_callables does not support the autocast caching. "
                           "Please set `cache_enabled=False`.")
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    flat_args = _check(callables, sample_args)
    params = [tuple(c.parameters()) if isinstance(c, Module) else () for c in callables]
    surfaces = [flat_args[i] + params[i] for i in range(len(callables))]
    fwd_graphs = [CUDAGraph() for _ in callables]
    bwd_graphs = [CUDAGraph() for _ in callables]
    mempool = graph_pool_handle() if pool is None else pool

    _runtime.lazy_init()
    synchronize()
    with stream(Stream()):                      # warm-up, as PyTorch's (lazy state, caches)
        for func, args, surface in zip(callables, sample_args, surfaces):
            for _ in range(num_warmup_iters):
                outs = _pytree.tree_leaves(func(*args))
                need = tuple(o for o in outs if o.requires_grad)
                if need:
                    _grads(need, tuple(i for i in surface if i.requires_grad),
                           tuple(empty_like(o) for o in need), allow_unused_input)
    synchronize()

    static_outputs, specs = [], []
    for func, args, g in zip(callables, sample_args, fwd_graphs):
        with graph(g, pool=mempool):
            outs = func(*args)
        leaves, spec = _pytree.tree_flatten(outs)
        static_outputs.append(tuple(leaves))
        specs.append(spec)

    static_grad_outputs, static_grad_inputs = [None] * len(callables), [None] * len(callables)
    for i in reversed(range(len(callables))):
        outs, surface = static_outputs[i], surfaces[i]
        grad_outs = tuple(empty_like(o) if o.requires_grad else None for o in outs)
        need = tuple(o for o in outs if o.requires_grad)
        grads = None
        if need:
            with graph(bwd_graphs[i], pool=mempool):
                grads = _grads(need, tuple(a for a in surface if a.requires_grad),
                               tuple(g for g in grad_outs if g is not None), allow_unused_input)
        it = iter(grads or ())
        static_grad_inputs[i] = tuple(next(it) if a.requires_grad and grads is not None
                                      else None for a in surface)
        static_grad_outputs[i] = grad_outs

    graphed = []
    for i, func in enumerate(callables):
        fn = _graphed_function(fwd_graphs[i], bwd_graphs[i], params[i], len(flat_args[i]),
                               specs[i], surfaces[i], static_outputs[i],
                               static_grad_outputs[i], static_grad_inputs[i])
        if isinstance(func, Module):
            func.forward = _graphed_forward(func, func.training, fn, func.forward)
            graphed.append(func)
        else:
            graphed.append(fn)
    return graphed[0] if just_one else tuple(graphed)


def _graphed_function(fwd_graph, bwd_graph, module_params, n_user_args, spec, surface,
                      static_outputs, static_grad_outputs, static_grad_inputs):
    class Graphed(autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            for i in range(n_user_args):
                if not _same_memory(surface[i], inputs[i]):
                    surface[i].copy_(inputs[i])
            fwd_graph.replay()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        @autograd.once_differentiable
        def backward(ctx, *grads):
            for static, grad in zip(static_grad_outputs, grads):
                if static is not None and grad is not None and \
                        not _same_memory(static, grad):
                    static.copy_(grad)
            if len(bwd_graph):
                bwd_graph.replay()
            return tuple(g.detach() if g is not None else None for g in static_grad_inputs)

    def functionalized(*user_args):
        flat = tuple(_pytree.tree_leaves(tuple(user_args)))
        out = Graphed.apply(*(flat + module_params))
        if not isinstance(out, tuple):
            out = (out,)
        return _pytree.tree_unflatten(list(out), spec)

    return functionalized


def _same_memory(a, b):
    """True if tensors a and b start at the same address (no copy needed)."""
    if a is b:
        return True
    try:
        return a.data_ptr() == b.data_ptr()
    except AttributeError:                     # the simulator's arrays have no address
        return a._storage is b._storage and a._offset == b._offset


def _graphed_forward(module, training, graphed, original):
    def forward(*args, **kwargs):
        if module.training == training:
            return graphed(*args, **kwargs)
        return original(*args, **kwargs)
    return forward
