"""Building a fused group: its `kernels.fusion` program, its FusedKernel call in the graph.

`_Builder` turns the group's members into program steps (softmax, log_softmax and
layer_norm decomposed into reductions and elementwise steps), its external tensors
into operands (offset-keeping views absorbed: the kernel reads the base with the
view's geometry) and its numbers into scalar operands; `replace` inserts the call
(and getitem nodes for several outputs) and records which node now gives each
value read outside the group; `_fallback` keeps the original nodes for operands the
kernel was not made for (an empty tensor).
"""
import operator

from .fused_kernel import FusedKernel
from .fusion_ops import _classify, _dt, _meta
from .lowered_ops import ElementwiseCall, FunctionCall

__all__ = ["replace"]

class _Builder:
    def __init__(self, group):
        self.g = group
        self.inputs = []            # (node, role, view geometry or None)
        self.input_index = {}
        self.view_of = {}           # input key -> the node the group reads (a view of it)
        self.scalars = []           # (value, dtype)
        self.steps = []
        self.value = {}             # member node -> ref

    def tensor(self, node, role):
        base, geom = _absorb_views(node)
        key = (base, role, geom)
        i = self.input_index.get(key)
        if i is None:
            i = self.input_index[key] = len(self.inputs)
            self.inputs.append(key)
            self.view_of[key] = node
        return ("a", i)

    def operand(self, a, cls, dtype):
        if hasattr(a, "op"):
            ref = self.value.get(a)
            if ref is not None:
                return ref
            return self.tensor(a, "rown" if cls == "rown" else "g")
        self.scalars.append((a, dtype))
        return ("s", len(self.scalars) - 1)

    def step(self, *s):
        self.steps.append(s)
        return ("v", len(self.steps) - 1)

    def add(self, node):
        cls = self.g.cls[node]
        t = node.target
        if isinstance(t, ElementwiseCall):
            n = len(node.args)
            cds = t.compute if isinstance(t.compute, tuple) else (t.compute,) * n
            cds = tuple(_dt(d) for d in cds)
            ops = tuple(self.operand(a, cls, cd) for a, cd in zip(node.args, cds))
            self.value[node] = self.step("call", t.op, ops, cds, _dt(t.out))
            return
        kind = _classify(node)
        x = self.operand(node.args[0], "elem", None)
        d = _dt(_meta(node.args[0]).dtype)
        if kind[0] == "reduce":
            out_d = _dt(_meta(node).dtype)
            self.value[node] = self.step("reduce", kind[1], x, out_d)
        elif kind[0] in ("softmax", "log_softmax"):
            m = self.step("reduce", "amax", x, d)
            sh = self.step("call", "sub", (x, m), (d, d), d)
            e = self.step("call", "exp", (sh,), (d,), d)
            s = self.step("reduce", "sum", e, d)
            if kind[0] == "softmax":
                self.value[node] = self.step("call", "div", (e, s), (d, d), d)
            else:
                ls = self.step("call", "log", (s,), (d,), d)
                self.value[node] = self.step("call", "sub", (sh, ls), (d, d), d)
        else:                                            # layer_norm
            _, w, b, _, eps = node.args
            mean = self.step("reduce", "mean", x, d)
            xc = self.step("call", "sub", (x, mean), (d, d), d)
            sq = self.step("call", "mul", (xc, xc), (d, d), d)
            var = self.step("reduce", "mean", sq, d)
            self.scalars.append((eps, d))
            ve = self.step("call", "add", (var, ("s", len(self.scalars) - 1)), (d, d), d)
            rs = self.step("call", "rsqrt", (ve,), (d,), d)
            y = self.step("call", "mul", (xc, rs), (d, d), d)
            if w is not None:
                y = self.step("call", "mul", (y, self.tensor(w, "g")), (d, d), d)
            if b is not None:
                y = self.step("call", "add", (y, self.tensor(b, "g")), (d, d), d)
            self.value[node] = y


def _replace(graph, group, name, mapping):
    """Put one FusedKernel call (and getitem nodes) after `group`'s members; `mapping`
    gets each member read outside the group -> the node that now gives its value."""
    members = set(group.members)
    b = _Builder(group)
    for node in group.members:
        b.add(node)
    outs = [n for n in group.members if any(u not in members for u in n.users)]
    where = {"elem": "elem", "rowk": "row", "rown": "row", "all": "all"}
    outputs = [(b.value[n], where[group.cls[n]], _dt(_meta(n).dtype), tuple(_meta(n).shape))
               for n in outs]
    fallback = _fallback(graph, group.members, b, outs)
    label = "_".join(dict.fromkeys(_label(n) for n in group.members))[:48]
    fk = FusedKernel(f"{name}_{label}", b.steps,
                     [(role, _dt(_meta(n).dtype), geom) for n, role, geom in b.inputs],
                     b.scalars, outputs, group.shape, group.device, fallback)
    last = group.members[-1]
    with graph.inserting_after(last):
        call = graph.call_function(fk, tuple(n for n, _, _ in b.inputs))
    call.meta["fused"] = [n.name for n in group.members]
    if len(outs) == 1:
        call.meta["tensor_meta"] = outs[0].meta["tensor_meta"]
        mapping[outs[0]] = call
    else:
        call.meta["tensor_meta"] = tuple(n.meta["tensor_meta"] for n in outs)
        prev = call
        for i, n in enumerate(outs):
            with graph.inserting_after(prev):
                item = graph.call_function(operator.getitem, (call, i))
            item.meta["tensor_meta"] = n.meta["tensor_meta"]
            mapping[n] = item
            prev = item


def _label(node):
    t = node.target
    if isinstance(t, ElementwiseCall):
        return t.op.rstrip("_")
    if isinstance(t, FunctionCall):
        return t.__name__
    return "op"


_VIEWS = ("View", "Permute", "Expand")       # views that keep the storage offset


def _absorb_views(node):
    """(base, geometry) when `node` is a chain of offset-keeping views of `base` (the
    kernel then reads base with the view's shape and strides), else (node, None)."""
    base = node
    while (base.op == "call_function" and isinstance(base.target, FunctionCall)
           and base.target.cls.__name__ in _VIEWS
           and base.target.cls.__module__.startswith("nbtorch.")
           and hasattr(base.args[0], "op") and _meta(base.args[0]) is not None):
        base = base.args[0]
    if base is node:
        return node, None
    m, mb = _meta(node), _meta(base)
    return base, (tuple(m.shape), tuple(m.stride), tuple(mb.shape), tuple(mb.stride))


def _fallback(graph, members, builder, outs):
    """A function running the group's original nodes (for empty or unexpected operands)."""
    from ..graph import Graph
    from ..graph_module import GraphModule
    from ...nn import Module
    g = Graph()
    env = {}
    for i, key in enumerate(builder.inputs):
        ph = g.placeholder(f"in_{i}")
        base, _, geom = key
        if geom is None:
            env[base] = ph
            continue
        chain, n = [], builder.view_of[key]
        while n is not base:
            chain.append(n)
            n = n.args[0]
        local = {base: ph}
        for v in reversed(chain):
            local[v] = g.node_copy(v, lambda a: local.get(a, a))
        env[builder.view_of[key]] = local[builder.view_of[key]]
    for n in members:
        env[n] = g.node_copy(n, lambda a: env[a])
    g.output(env[outs[0]] if len(outs) == 1 else tuple(env[o] for o in outs))
    made = []

    def fallback(*tensors):             # generated on first use: most groups never need it
        if not made:
            made.append(GraphModule(Module(), g, "FusedFallback").forward)
        return made[0](*tensors)
    fallback.graph = g
    return fallback



replace = _replace
