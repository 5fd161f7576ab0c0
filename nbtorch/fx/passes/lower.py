"""Lowering: a graph of public calls -> a graph of the ops that actually ran.

``lower(gm, *example_inputs)`` runs `gm` once and records, into a new fx
Graph, every autograd `Function` that ran at the top level (``Mul.apply``,
``Addmm.apply``, ``Sum.apply`` ...: the level at which nbtorch's autograd
records, so each node has a backward formula beside its forward), with
Python values (sizes, dims, dtypes) frozen as constants. An op whose whole
work is one elementwise kernel (a `Function` of `nbtorch.ops._elementwise`,
or a bare `run_elementwise` call) is recorded as an `ElementwiseCall` node: its
target names the scalar body of `kernels/elementwise.py` and the compute and
result dtypes, its arguments are exactly the kernel's operands, which is what
fusion reads. Everything else is a `FunctionCall` node of its Function class.

The same recorder captures a backward: `capture_joint` runs the forward with
gradients and then `autograd.grad(..., create_graph=True)`, so the backward
formulas of the eager ops (one source of truth) run and are recorded as ops
too; an elementwise op with a fused gradient kernel records that kernel, as a
first-order eager backward runs it (``grad_mode.STATE.first_order``), and so do
fused ops (``ops/_fused_grad.py``). Values are identified by their storage, version
and geometry, so a tensor computed outside the recorded ops (a raw view, an in-place
write) is noticed: `CaptureError` names the op that read it, and callers fall back to
eager mode.

The recording patches `Function.apply` (and the `run_elementwise` helper) for the
duration of a capture only, and only the capturing thread records.
"""
import dataclasses

import operator

from ..graph_module import GraphModule
from ...amp import _hooks as _autocast_hooks
from ...amp._hooks import STATE as _AUTOCAST
from ..interpreter import Interpreter
from .lowered_ops import (CaptureError, ElementwiseCall, FunctionCall,  # noqa: F401
                          FunctionForward, InplaceCall, elementwise_call, function_call,
                          view_of)
from .recording import FACTORY_WRAPPERS, Recorder, _is_tensor, recording
from .shape_prop import metadata_of

__all__ = ["lower", "capture_joint", "CaptureError", "FunctionCall", "ElementwiseCall",
           "InplaceCall", "FunctionForward", "function_call", "elementwise_call",
           "Recorder", "view_of"]


# ---- running a high-level graph under the recorder ---------------------------------------

class _Runner(Interpreter):
    """Runs the high-level graph for real; placeholders and get_attr become nodes."""

    def __init__(self, gm, rec):
        super().__init__(gm)
        self.rec = rec

    def run_node(self, n):
        try:
            return super().run_node(n)
        except CaptureError as e:           # where in the user's code (the trace's note)
            where = n.meta.get("stack_trace")
            if where and e.args and isinstance(e.args[0], str) and where not in e.args[0]:
                e.args = (f"{e.args[0]} (at {where})",) + tuple(e.args[1:])
            raise

    def placeholder(self, target, args, kwargs):
        value = super().placeholder(target, args, kwargs)
        node = self.rec.graph.placeholder(target)
        self._bind(node, value)
        return value

    def get_attr(self, target, args, kwargs):
        value = super().get_attr(target, args, kwargs)
        if _is_tensor(value) or isinstance(value, (tuple, list)):
            self._bind(self.rec.graph.get_attr(target), value)
        return value

    def call_function(self, target, args, kwargs):
        if getattr(target, "_nbtorch_ignored", False):       # jit.ignore: one opaque call
            rec = self.rec
            what = getattr(target, "__name__", "function")
            node = rec.graph.call_function(target, rec.to_arg(args, what),
                                           rec.to_arg(kwargs, what))
            rec.depth += 1
            try:
                out = target(*args, **kwargs)
            finally:
                rec.depth -= 1
            rec.record_outputs(node, out)
            return out
        target = FACTORY_WRAPPERS.get(id(target), target)   # torch.zeros(...) in user code
        if _AUTOCAST.on:
            # a node names the function itself; under autocast eager code reaches it
            # through autocast's wrapper, whose casts must be recorded too (F.linear in
            # compiled code under autocast ran in float32: eager gives bfloat16)
            target = _autocast_hooks.WRAPPERS.get(id(target), target)
        return super().call_function(target, args, kwargs)

    def _bind(self, node, value):
        """Register the tensors inside an input (containers through getitem nodes)."""
        if _is_tensor(value):
            self.rec.register(value, node)
        elif isinstance(value, (tuple, list)):
            for i, v in enumerate(value):
                self._bind(self.rec.graph.call_function(operator.getitem, (node, i)), v)
        elif isinstance(value, dict):
            for k, v in value.items():
                self._bind(self.rec.graph.call_function(operator.getitem, (node, k)), v)


def _attributes(gm):
    """{qualified name: tensor} of gm's parameters and buffers (read via get_attr nodes)."""
    out = {}
    for name, t in gm.named_parameters():
        out.setdefault(name, t)
    for name, t in gm.named_buffers():
        out.setdefault(name, t)
    return out


def _output(rec, value, forward_arg=None):
    """The output node of `value`; a joint graph's (outputs, grads) with the outputs' nodes
    taken before the backward ran (`forward_arg`)."""
    graph = rec.graph
    if forward_arg is None:
        arg = rec.to_arg(_sizes(rec, value), "the graph's output")
    else:
        arg = (forward_arg, rec.to_arg(value[1], "the graph's output"))
    out = graph.output(arg)
    out.meta["tensor_meta"] = metadata_of(value)
    graph.eliminate_dead_code()
    return out


def _sizes(rec, value):
    """`value` with each torch.Size in it (``return x.shape``) as a node that makes it:
    a graph's arguments hold plain tuples, and the caller got a tuple."""
    from ..._tensor import Size
    if value.__class__ is Size:
        return rec.graph.call_function(Size, (tuple(value),))
    if isinstance(value, list) or (isinstance(value, tuple) and not hasattr(value, "_fields")):
        items = [_sizes(rec, v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {k: _sizes(rec, v) for k, v in value.items()}
    return value


def lower(gm, *example_inputs):
    """The op-level GraphModule of `gm` (see the module docstring), specialised to the
    shapes of `example_inputs`; its get_attr nodes read `gm`'s attributes."""
    from ...autograd import grad_mode
    rec = Recorder(attrs=_attributes(gm))
    with grad_mode.no_grad(), recording(rec):
        out = _Runner(gm, rec).run(*example_inputs)
        _output(rec, out)
    return GraphModule(gm, rec.graph, type(gm).__name__ + "Lowered")


def capture_joint(gm, example_inputs, wrt):
    """Record forward and backward of `gm` on `example_inputs` into one graph.

    `wrt(placeholder_and_attr_values)` -> the tensors to differentiate with respect
    to is given as a list of (node target, tensor) by the caller: here, every input or
    attribute tensor that requires grad. Returns (graph, forward node set, output
    spec, which tensor outputs require grad): the graph's output is ``(forward outputs,
    gradients)`` where gradient `i` belongs to ``wrt[i]`` and is None when the output does
    not depend on it. The last, one flag per tensor output in order, is what got a
    ``grad_out_i`` placeholder (a detached output records no node of its own: its node's
    metadata is its source's).
    """
    from ...autograd import engine, grad_mode
    rec = Recorder(attrs=_attributes(gm))
    with grad_mode.enable_grad(), recording(rec):
        out = _Runner(gm, rec).run(*example_inputs)
        # the outputs' nodes now: a backward formula may record a node for the same tensor
        # object (a view of an output that is the output itself), which is no forward node
        out_arg = rec.to_arg(_sizes(rec, out), "the graph's output")
        forward_nodes = set(rec.graph.nodes)
        tensors = [o for o in _flatten(out) if _is_tensor(o)]
        flat = [o for o in tensors if o.requires_grad]
        rec.phase = "backward"
        grads_out = []
        for i, o in enumerate(flat):
            g = o.detach().clone() if False else _ones_like(o)
            rec.register(g, rec.graph.placeholder(f"grad_out_{i}"))
            grads_out.append(g)
        sources = [t for t in wrt if _is_tensor(t)]
        if flat and sources:
            state = grad_mode.STATE
            state.first_order = True    # ops with a fused gradient kernel record it
            try:
                with _without_hooks(sources):
                    grads = engine.grad(flat, sources, grads_out, retain_graph=False,
                                        create_graph=True, allow_unused=True)
            finally:
                state.first_order = False
        else:
            grads = [None] * len(sources)
        out_node = _output(rec, (out, tuple(grads)), out_arg)
    return rec.graph, forward_nodes, out_node, [o.requires_grad for o in tensors]


class _without_hooks:
    """The gradient hooks of `tensors` (a weight's ``register_hook``) left out of the
    captured backward: the engine runs them on the compiled graph's gradients at every
    backward (recorded too, a hook ran twice - g * 0.5 gave g * 0.25 - and a hook removed
    later still ran)."""

    def __init__(self, tensors):
        self.tensors = tensors
        self.taken = []

    def __enter__(self):
        for t in self.tensors:
            node, slot = (t.grad_fn, t._output_nr) if t.grad_fn is not None else (
                getattr(t, "_hooks", None), 0)
            hooks = getattr(node, "_tensor_hooks", None)
            if hooks and slot in hooks:
                self.taken.append((hooks, slot, hooks.pop(slot)))
        return self

    def __exit__(self, *exc):
        for hooks, slot, h in self.taken:
            hooks[slot] = h


def _ones_like(t):
    from ... import ones
    return ones(t.shape, dtype=t.dtype, device=t.device)


def _flatten(v):
    if isinstance(v, (tuple, list)):
        for e in v:
            yield from _flatten(e)
    elif isinstance(v, dict):
        for e in v.values():
            yield from _flatten(e)
    elif dataclasses.is_dataclass(v) and not isinstance(v, type):     # an output record
        for f in dataclasses.fields(v):
            if f.init:
                yield from _flatten(getattr(v, f.name))
    else:
        yield v

