"""A compiled graph: forward and backward GraphModules made from one capture.

`build(gm, inputs, wrt_mask)` turns a traced GraphModule (the high-level fx
graph `jit.trace` records) into a `CompiledGraph`:

1. capture: `fx.passes.lower` runs it once, recording the ops (autograd
   Functions and elementwise kernels) into an fx Graph; when gradients are
   needed, the backward formulas of those same ops run under the recorder
   too (`capture_joint`), so the backward graph comes from the eager
   formulas, and the graph splits into a forward that also returns what the
   backward reads (and nothing else), and a backward;
2. parameters and buffers become inputs (placeholders), so the compiled
   function can be an autograd node whose inputs are the weights;
3. passes: dead code, common subexpressions, elementwise fusion into
   generated Numba kernels (`fx.passes.fusion`), a Linear's bias and ReLU (and their
   gradients) folded into one pass each (`fx.passes.epilogue`), 2-D products called
   without their Function layers (`fx.passes.products`), memory planning.

`CompiledGraph.__call__` runs it: without gradients the forward GraphModule
directly, with gradients one `CompiledFunction` node on the tape, whose
backward runs the backward GraphModule. Double backward (create_graph=True)
through it is refused with a clear error.
"""
import dataclasses

from ..autograd import grad_mode
from ..autograd.function import Function
from ..fx.graph import Graph
from ..amp._hooks import STATE as _AUTOCAST, refresh as _autocast_refresh
from ..fx.graph_module import GraphModule
from ..fx.passes.lower import capture_joint, lower

__all__ = ["CompiledGraph", "build", "CompiledFunction", "flatten", "unflatten"]


# ---- output structures -------------------------------------------------------------------

def flatten(value):
    """(leaves, spec): the tensors and constants of a nested output, and how to rebuild."""
    from .._tensor import Tensor
    leaves = []

    def walk(v):
        if isinstance(v, Tensor):
            leaves.append(v)
            return ("t",)
        if isinstance(v, tuple) and hasattr(v, "_fields"):
            return ("nt", type(v), tuple(walk(e) for e in v))
        if isinstance(v, (tuple, list)):
            return (type(v).__name__, tuple(walk(e) for e in v))
        if isinstance(v, dict):
            return ("dict", tuple(v.keys()), tuple(walk(e) for e in v.values()))
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            names = tuple(f.name for f in dataclasses.fields(v) if f.init)
            return ("dc", type(v), names, tuple(walk(getattr(v, n)) for n in names))
        return ("c", v)
    return leaves, walk(value)


def unflatten(leaves, spec):
    if spec == ("t",):
        return leaves[0]
    it = iter(leaves)

    def build_(s):
        kind = s[0]
        if kind == "t":
            return next(it)
        if kind == "c":
            return s[1]
        if kind == "nt":
            return s[1](*(build_(e) for e in s[2]))
        if kind == "dict":
            return dict(zip(s[1], (build_(e) for e in s[2])))
        if kind == "dc":
            return s[1](**dict(zip(s[2], (build_(e) for e in s[3]))))
        items = [build_(e) for e in s[1]]
        return tuple(items) if kind == "tuple" else items
    return build_(spec)


# ---- the autograd node ---------------------------------------------------------------------

_DOUBLE = ("nbtorch.compile: double backward (create_graph=True) through a compiled graph is "
           "not supported: its backward runs fused kernels that record no graph. Run the "
           "model eagerly (without compile) to take higher-order gradients.")


class CompiledFunction(Function):
    """One tape node for a whole compiled graph: ``apply(cg, *inputs)``."""

    _node_name = "CompiledFunctionBackward"        # PyTorch's name for this node

    @staticmethod
    def forward(ctx, cg, *inputs):
        res = cg._fwd(*inputs)
        n = cg.n_outputs
        outs, saved = res[:n], res[n:]
        ctx.cg = cg
        ctx.save_for_backward(*saved)
        if cg.detach_outputs:           # y.detach() returned next to y: one node for both
            outs = list(outs)
            for i in cg.detach_outputs:
                outs[i] = outs[i].detach()
        nondiff = [outs[i] for i in cg.nondiff_outputs]
        if nondiff:
            ctx.mark_non_differentiable(*nondiff)
        return tuple(outs) if n != 1 else outs[0]

    @staticmethod
    def backward(ctx, *grads):
        if grad_mode.STATE.enabled:
            raise RuntimeError(_DOUBLE)
        cg = ctx.cg
        saved = ctx.saved_tensors
        # the backward graph was traced with contiguous output gradients and its view ops
        # keep that trace's strides: an expanded gradient (sum()'s) is laid out as traced
        gs = cg._bwd(*saved, *[_as_traced(grads[i]) for i in cg.diff_outputs])
        if not isinstance(gs, tuple):
            gs = (gs,)
        out = [None] * (len(cg.input_names) + 1)
        for pos, g in zip(cg.wrt_positions, gs):
            out[pos + 1] = g
        return tuple(out)


def _as_traced(g):
    """An output gradient in the contiguous layout the backward graph was traced with
    (as AOTAutograd makes its tangents contiguous)."""
    return g if g is None or g.is_contiguous() else g.contiguous()


# ---- building -------------------------------------------------------------------------------

class CompiledGraph:
    """Forward (and backward) GraphModules of one capture; call with the flat inputs."""

    def __init__(self):
        self.forward_gm = None
        self.backward_gm = None
        self.n_outputs = 0
        self.diff_outputs = ()          # output indices that get a gradient
        self.nondiff_outputs = ()
        self.detach_outputs = ()        # outputs detached from a node that requires grad
        self.wrt_positions = ()         # input positions that get a gradient
        self.input_names = ()
        self.output_spec = None
        self.with_grad = False

    def __call__(self, *inputs):
        amp = _AUTOCAST
        if amp.on:
            # a graph captured under autocast holds the casts it made; its ops run as the
            # eager ops ran inside autocast's wrappers, with autocast suspended (Addmm's
            # float32 product of bfloat16 inputs was cast down again: 1 ulp off eager)
            amp.suspended += 1
            amp.on = False
            try:
                return self._run(inputs)
            finally:
                amp.suspended -= 1
                _autocast_refresh(amp)
        return self._run(inputs)

    def _run(self, inputs):
        if self.with_grad:
            out = CompiledFunction.apply(self, *inputs)
            outs = (out,) if self.n_outputs == 1 else out
        else:
            state = grad_mode.STATE
            prev, state.enabled = state.enabled, False
            try:
                outs = self._fwd(*inputs)
            finally:
                state.enabled = prev
        return outs

    def finish(self):
        """Bind the generated forwards (skipping Module.__call__ on the hot path)."""
        self._fwd = self.forward_gm.forward
        self._bwd = self.backward_gm.forward if self.backward_gm is not None else None
        return self

    def graphs(self):
        """{'forward': GraphModule, 'backward': GraphModule or None}."""
        return {"forward": self.forward_gm, "backward": self.backward_gm}


def _grad_constants(root):
    """{name: tensor} of the tensors requiring grad that the trace met as constants (a
    global or closure weight, ``x * w``): lifted to inputs, as parameters are, so that
    their gradients flow (as constants they silently got none)."""
    from .._tensor import Tensor
    return {k: v for k, v in vars(root).items() if k.startswith("_tensor_constant")
            and isinstance(v, Tensor) and v.requires_grad}


def _lift_attributes(graph, root, lifted_names):
    """get_attr nodes of parameters/buffers (and constants requiring grad) -> placeholders
    (after the existing ones)."""
    params = dict(root.named_parameters())
    params.update(dict(root.named_buffers()))
    params.update(_grad_constants(root))
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    anchor = placeholders[-1] if placeholders else None
    made = {}
    for node in list(graph.nodes):
        if node.op != "get_attr" or node.target not in params:
            continue
        name = node.target
        if name in made:            # read twice (self.weight and model.parameters())
            node.replace_all_uses_with(made[name])
            graph.erase_node(node)
            continue
        if name not in lifted_names:
            lifted_names.append(name)
        if anchor is None:
            with graph.inserting_before(next(iter(graph.nodes))):
                ph = graph.placeholder("attr_" + name.replace(".", "_"))
        else:
            with graph.inserting_after(anchor):
                ph = graph.placeholder("attr_" + name.replace(".", "_"))
        anchor = made[name] = ph
        ph.meta = dict(node.meta)
        ph.meta["attr"] = name
        node.replace_all_uses_with(ph)
        graph.erase_node(node)


def _order_placeholders(graph, names):
    """Placeholders first, in the order `names` (the call's argument order)."""
    phs = {n.target: n for n in graph.nodes if n.op == "placeholder"}
    root = graph._root
    for name in reversed(names):
        ph = phs.get(name)
        if ph is None:
            with graph.inserting_before(None):
                ph = graph.placeholder(name)
        root.append(ph)            # right after the sentinel: the start of the list


def _optimise(gm, fuse=True):
    from ..fx.passes.cse import eliminate_common_subexpressions
    from ..fx.passes.epilogue import fuse_epilogues
    from ..fx.passes.fusion import fuse as fuse_pass
    from ..fx.passes.memory_plan import plan_memory
    from ..fx.passes.products import call_products_directly
    gm.graph.eliminate_dead_code()
    eliminate_common_subexpressions(gm)
    if fuse:
        fuse_pass(gm)
        fuse_epilogues(gm)
        call_products_directly(gm)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    if fuse:
        plan_memory(gm)
    return gm


def build(gm, inputs, wrt_mask, fuse=True):
    """A CompiledGraph of traced GraphModule `gm` for flat tensor `inputs`.

    `wrt_mask[i]` says whether input i needs a gradient; parameters and buffers of `gm`
    become extra inputs after them (their names in ``cg.attr_names``). Gradients are
    captured when any input or parameter requires grad and grad mode is on.
    """
    cg = CompiledGraph()
    user_names = [n.target for n in gm.graph.nodes if n.op == "placeholder"]
    params = dict(gm.named_parameters())
    params.update(_grad_constants(gm))
    with_grad = grad_mode.is_grad_enabled() and (any(wrt_mask) or any(
        p.requires_grad for p in params.values()))
    saved_state = [(b, b.detach().clone()) for _, b in gm.named_buffers()]
    try:
        return _build(cg, gm, inputs, wrt_mask, fuse, user_names, params, with_grad)
    finally:
        # the capture ran the code once: buffers it updated (BatchNorm's running
        # statistics) go back to their values, so the first call updates them once
        for b, v in saved_state:
            b._array[...] = v._array


def _build(cg, gm, inputs, wrt_mask, fuse, user_names, params, with_grad):
    if not with_grad:
        low = lower(gm, *inputs)
        graph = low.graph
        lifted = []
        _lift_attributes(graph, gm, lifted)
        cg.attr_names = tuple(lifted)
        names = user_names + ["attr_" + n.replace(".", "_") for n in lifted]
        _order_placeholders(graph, names)
        out_node = next(n for n in reversed(graph.nodes) if n.op == "output")
        leaves_nodes, spec = _flatten_nodes(out_node.args[0])
        out_node.args = (tuple(leaves_nodes),)
        cg.output_spec = spec
        cg.n_outputs = len(leaves_nodes)
        cg.forward_gm = _optimise(GraphModule(low, graph, "CompiledForward"), fuse)
        cg.input_names = tuple(names)
        return cg.finish()
    # the inputs as leaves: an input computed by an earlier graph (a compiled RNN cell
    # called in a loop, one compiled block after another) must not lead the capture's
    # backward into that graph (it would run it, and count it in the weights' gradients)
    inputs = [t.detach().requires_grad_() if m else t for t, m in zip(inputs, wrt_mask)]
    wrt_tensors = [t for t, m in zip(inputs, wrt_mask) if m]
    attr_grads = [(n, p) for n, p in params.items() if p.requires_grad]
    graph, forward_nodes, out_node, requires = capture_joint(
        gm, inputs, wrt_tensors + [p for _, p in attr_grads])
    lifted = []
    _lift_attributes(graph, gm, lifted)
    forward_nodes = set(forward_nodes) | {n for n in graph.nodes if n.op == "placeholder"
                                          and not n.target.startswith("grad_out_")}
    cg.attr_names = tuple(lifted)
    names = user_names + ["attr_" + n.replace(".", "_") for n in lifted]
    cg.input_names = tuple(names)
    positions = [i for i, m in enumerate(wrt_mask) if m] + [
        len(user_names) + lifted.index(n) if n in lifted else None for n, _ in attr_grads]
    _split(cg, gm, graph, forward_nodes, out_node, names, positions, fuse, requires)
    cg.with_grad = True
    return cg.finish()


def _flatten_nodes(value):
    from .._tensor import Size
    from ..fx.node import Node
    leaves = []

    def walk(v):
        if isinstance(v, Node) and v.op == "call_function" and isinstance(v.target, type) \
                and dataclasses.is_dataclass(v.target):         # an output record's node
            names = tuple(v.kwargs)
            return ("dc", v.target, names, tuple(walk(v.kwargs[n]) for n in names))
        if isinstance(v, Node) and v.op == "call_function" and v.target is Size:
            return ("c", Size(v.args[0]))       # x.shape: sizes are constants of a graph
        if isinstance(v, Node):
            leaves.append(v)
            return ("t",)
        if isinstance(v, tuple) and hasattr(v, "_fields"):
            return ("nt", type(v), tuple(walk(e) for e in v))
        if isinstance(v, (tuple, list)):
            return (type(v).__name__, tuple(walk(e) for e in v))
        if isinstance(v, dict):
            return ("dict", tuple(v.keys()), tuple(walk(e) for e in v.values()))
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            names = tuple(f.name for f in dataclasses.fields(v) if f.init)
            return ("dc", type(v), names, tuple(walk(getattr(v, n)) for n in names))
        return ("c", v)
    return leaves, walk(value)


def _split(cg, gm, joint, forward_nodes, out_node, names, positions, fuse, requires):
    """Split the joint graph into forward (outputs + saved) and backward (grads).
    `requires`: per output, whether it required grad at capture (got a grad placeholder)."""
    outputs, grads = out_node.args[0]
    leaves, spec = _flatten_nodes(outputs)
    cg.output_spec = spec
    cg.n_outputs = len(leaves)
    grad_phs = [n for n in joint.nodes if n.op == "placeholder"
                and n.target.startswith("grad_out_")]
    if len(requires) != len(leaves):        # not one node per tensor output: the metadata
        requires = [_requires_grad(n) for n in leaves]
    diff = [i for i, r in enumerate(requires) if r]
    cg.diff_outputs = tuple(diff)
    cg.nondiff_outputs = tuple(i for i in range(len(leaves)) if i not in diff)
    cg.detach_outputs = tuple(i for i in cg.nondiff_outputs if _requires_grad(leaves[i]))
    keep = [(p, g) for p, g in zip(positions, grads) if g is not None and p is not None]
    cg.wrt_positions = tuple(p for p, _ in keep)
    bwd_nodes = [n for n in joint.nodes if n not in forward_nodes and n.op != "output"]
    bwd_set = set(bwd_nodes)
    saved = []
    for n in joint.nodes:
        if n in forward_nodes and any(u in bwd_set for u in n.users):
            saved.append(n)
    # forward graph
    fg = Graph()
    env = {}
    for name in names:
        ph = next((n for n in joint.nodes if n.op == "placeholder" and n.target == name), None)
        new = fg.placeholder(name)
        if ph is not None:
            new.meta = dict(ph.meta)
            env[ph] = new
    for n in joint.nodes:
        if n in forward_nodes and n.op != "placeholder":
            env[n] = fg.node_copy(n, lambda a: env[a])
    fg.output(tuple(env[n] for n in leaves) + tuple(env[n] for n in saved))
    cg.forward_gm = _optimise(GraphModule(gm, fg, "CompiledForward"), fuse)
    cg.n_saved = len(saved)
    # backward graph
    bg = Graph()
    benv = {}
    for i, n in enumerate(saved):
        benv[n] = bg.placeholder(f"saved_{i}_{n.name}")
        benv[n].meta = dict(n.meta)
    for i, ph in enumerate(grad_phs):
        benv[ph] = bg.placeholder(ph.target)
        benv[ph].meta = dict(ph.meta)
    for n in bwd_nodes:
        if n.op == "placeholder":
            continue
        benv[n] = bg.node_copy(n, lambda a: benv[a])
    bg.output(tuple(benv[g] for _, g in keep))
    cg.backward_gm = _optimise(GraphModule(gm, bg, "CompiledBackward"), fuse)


def _requires_grad(node):
    meta = node.meta.get("tensor_meta")
    return bool(getattr(meta, "requires_grad", False))
