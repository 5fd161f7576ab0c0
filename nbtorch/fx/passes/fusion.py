"""Elementwise fusion: groups of elementwise nodes (optionally ending in row reductions)
replaced by one call of a generated kernel.

Works on a lowered graph (`lower.py`: elementwise work is `ElementwiseCall`
nodes, the rest `FunctionCall` nodes, every node with
``meta['tensor_meta']``). A group iterates over one shape ``G``; its members:

- elementwise nodes of shape ``G`` (operands of any broadcastable shape),
- reductions over the last dim (sum, mean, amax, amin) of such a value, and
  softmax / log_softmax / layer_norm over the last dim (decomposed into those
  reductions and elementwise steps), giving one value per row,
- elementwise nodes on row values (``G[:-1] + (1,)`` or ``G[:-1]``), and
- a reduction over every element, as a group result only.

Nodes join the group of one of their inputs in graph order when the result
stays acyclic (none of their other inputs depends on the group). Each group
with at least two steps becomes one `FusedKernel` call; values used outside
the group are its outputs (a tuple, read by ``operator.getitem`` nodes). The
graph is then re-ordered topologically. Half dtypes and user-registered
elementwise bodies are not fused.

Example:
    >>> from nbtorch.fx.passes.lower import lower
    >>> from nbtorch.fx.passes.fusion import fuse
    >>> low = lower(traced, x)
    >>> fuse(low)                      # number of fused groups
    >>> print(low.graph)
"""
import operator

import numpy as np

from ..node import map_arg
from .fused_kernel import FusedKernel
from .lower import ElementwiseCall, FunctionCall
from .shape_prop import TensorMetadata

__all__ = ["fuse", "fused_kernels", "FUSABLE_DTYPES"]

FUSABLE_DTYPES = frozenset(("bool", "int8", "uint8", "int16", "int32", "int64", "float32",
                            "float64"))
_FLOATS = ("float32", "float64")


def _meta(node):
    m = node.meta.get("tensor_meta") if hasattr(node, "meta") else None
    return m if isinstance(m, TensorMetadata) else None


def _dt(d):
    return d.np.name if hasattr(d, "np") else str(d)


def _elementwise_ok(node):
    from nbtorch.kernels.elementwise import OPS
    t = node.target
    if node.kwargs or t.op not in OPS:
        return False
    dts = t.compute if isinstance(t.compute, tuple) else (t.compute,) * len(node.args)
    if len(dts) != len(node.args):
        return False
    if not all(_dt(d) in FUSABLE_DTYPES for d in dts + (t.out,)):
        return False
    for a in node.args:
        if hasattr(a, "op"):
            m = _meta(a)
            if m is None or _dt(m.dtype) not in FUSABLE_DTYPES:
                return False
        elif not isinstance(a, (bool, int, float, np.bool_, np.number)):
            return False
    return _meta(node) is not None


def _classify(node):
    """'ew', ('reduce', op, keepdim, all_dims), ('softmax'|'log_softmax'|'layer_norm', ...)
    or None."""
    if node.op != "call_function":
        return None
    t = node.target
    if isinstance(t, ElementwiseCall):
        return "ew" if _elementwise_ok(node) else None
    if not isinstance(t, FunctionCall) or node.kwargs:
        return None
    name = t.cls.__name__
    mod = t.cls.__module__
    args = node.args
    x = args[0] if args else None
    mx = _meta(x) if hasattr(x, "op") else None
    mo = _meta(node)
    if mx is None or mo is None or mx.device != mo.device:
        return None
    nd = len(mx.shape)
    if not mod.startswith("nbtorch."):          # classes are matched by name: nbtorch's only
        return None
    if name in ("Sum", "Mean") and len(args) >= 4:
        dims, keepdim, dtype = args[1], args[2], args[3]
        mean = len(args) > 4 and bool(args[4])
        if len(args) > 5 and args[5]:
            return None                                  # nansum
        src, dst = _dt(mx.dtype), _dt(dtype)
        if not (src == dst and src in _FLOATS or src in FUSABLE_DTYPES and
                not src.startswith("float") and dst == "int64" and not mean):
            return None
        return _reduction("mean" if mean else "sum", dims, keepdim, nd)
    if name == "Extreme" and len(args) == 4:
        if args[3] not in ("amax", "amin") or _dt(mx.dtype) not in FUSABLE_DTYPES:
            return None
        if _dt(mx.dtype) == "bool":
            return None
        return _reduction(args[3], args[1], args[2], nd)
    if name in ("Softmax", "LogSoftmax") and len(args) == 2:
        if nd and args[1] == nd - 1 and _dt(mx.dtype) in _FLOATS:
            return ("softmax" if name == "Softmax" else "log_softmax",)
        return None
    if (name == "LayerNorm" and len(args) == 5 and nd and args[3] == mx.shape[-1]
            and _dt(mx.dtype) in _FLOATS):
        for p in args[1:3]:
            if p is not None and (_meta(p) is None or _dt(_meta(p).dtype) != _dt(mx.dtype)):
                return None
        return ("layer_norm",)
    return None


def _reduction(op, dims, keepdim, nd):
    dims = tuple(dims)
    if nd == 0:
        return None
    if dims == (nd - 1,):
        return ("reduce", op, bool(keepdim), False)
    if sorted(dims) == list(range(nd)) and not keepdim:
        return ("reduce", op, False, True)
    return None


class _Group:
    def __init__(self, shape, device, index):
        self.shape = tuple(shape)
        self.device = device
        self.members = []           # nodes in order
        self.cls = {}               # node -> 'elem' | 'rowk' | 'rown' | 'all'
        self.first = index
        self.n_steps = 0
        self.has_reduce = False

    def row_shapes(self):
        return self.shape[:-1] + (1,), self.shape[:-1]


def _value_class(group, node):
    """How `node`'s value varies over the group: by its shape."""
    m = _meta(node)
    if m is None:
        return None
    s = tuple(m.shape)
    if s == group.shape:
        return "elem"
    if group.shape:
        rowk, rown = group.row_shapes()
        if s == rowk:
            return "rowk"
        if s == rown:
            return "rown"
    return None


def _broadcastable(shape, to):
    if len(shape) > len(to):
        return False
    return all(a == b or a == 1 for a, b in zip(shape[::-1], to[::-1]))


class _Fuser:
    def __init__(self, gm):
        self.gm = gm
        self.graph = gm.graph
        self.nodes = list(self.graph.nodes)
        self.index = {n: i for i, n in enumerate(self.nodes)}
        self.group_of = {}

    def depends_on(self, node, group):
        """True when `node` reaches a member of `group` through its inputs."""
        stack, seen = [node], set()
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if self.group_of.get(n) is group:
                return True
            if self.index.get(n, -1) < group.first:
                continue
            stack.extend(n.all_input_nodes)
        return False

    def acyclic(self, node, group):
        return not any(self.group_of.get(u) is not group and self.depends_on(u, group)
                       for u in node.all_input_nodes)

    def try_join(self, node, group, kind):
        """Add `node` to `group` if its shape and inputs allow; True when it did."""
        if group.device != _meta(node).device:
            return False
        cls = _value_class(group, node)
        inputs = [a for a in node.all_input_nodes]
        if kind == "ew":
            if cls is None:
                return False
            for a in inputs:
                g = self.group_of.get(a)
                if g is group:
                    acls = group.cls[a]
                    if acls == "all" or (cls == "elem" and acls == "rown") or (
                            cls != "elem" and acls not in (cls,)):
                        return False
                else:
                    m = _meta(a)
                    target = {"elem": group.shape, "rowk": group.row_shapes()[0],
                              "rown": group.row_shapes()[1]}[cls]
                    if m is None or not _broadcastable(tuple(m.shape), target):
                        return False
            steps = 1
        else:
            x = node.args[0]
            if self.group_of.get(x) is group and group.cls[x] != "elem":
                return False
            if tuple(_meta(x).shape) != group.shape:
                return False
            if kind[0] == "reduce":
                if kind[3]:
                    if any(c in ("rowk", "rown") for c in group.cls.values()) or \
                            group.has_reduce:
                        return False
                    cls = "all"
                else:
                    cls = "rowk" if kind[2] else "rown"
                steps = 1
            else:
                if cls != "elem":
                    return False
                for p in inputs[1:]:
                    if self.group_of.get(p) is group or not _broadcastable(
                            tuple(_meta(p).shape), group.shape):
                        return False
                steps = 5
            if any(c == "all" for c in group.cls.values()):
                return False
        if not self.acyclic(node, group):
            return False
        group.members.append(node)
        group.cls[node] = cls
        group.n_steps += steps
        group.has_reduce = group.has_reduce or kind != "ew"
        self.group_of[node] = group
        return True

    def try_merge(self, group, other):
        """Move `other`'s members into `group` when shapes match and the union stays
        acyclic (a group of a node's inputs that is now only a prologue of it)."""
        if other.shape != group.shape or other.device != group.device or any(
                c == "all" for c in other.cls.values()):
            return False
        for m in other.members:
            self.group_of[m] = group
        first = group.first
        group.first = min(group.first, other.first)
        members = set(group.members) | set(other.members)
        ok = all(self.acyclic(m, group) for m in members)
        if not ok:
            for m in other.members:
                self.group_of[m] = other
            group.first = first
            return False
        group.members = sorted(members, key=self.index.__getitem__)
        group.cls.update(other.cls)
        group.n_steps += other.n_steps
        group.has_reduce = group.has_reduce or other.has_reduce
        return True

    def run(self):
        groups = []
        for node in self.nodes:
            kind = _classify(node)
            if kind is None:
                continue
            candidates = []
            for a in node.all_input_nodes:
                g = self.group_of.get(a)
                if g is not None and g not in candidates:
                    candidates.append(g)
            joined = next((g for g in candidates if self.try_join(node, g, kind)), None)
            if joined is not None:
                for g in candidates:
                    if g is not joined and self.try_merge(joined, g):
                        groups.remove(g)
                continue
            if kind == "ew":
                shape = _meta(node).shape
            else:
                shape = _meta(node.args[0]).shape
            g = _Group(shape, _meta(node).device, self.index[node])
            if self.try_join(node, g, kind):
                groups.append(g)
        return [g for g in groups if g.n_steps >= 2]


def fuse(gm, min_steps=2):
    """Replace fusable groups of lowered GraphModule `gm` by `FusedKernel` calls, in place;
    returns the number of groups fused (the module is recompiled)."""
    fuser = _Fuser(gm)
    groups = [g for g in fuser.run() if g.n_steps >= min_steps]
    if not groups:
        return 0
    graph = gm.graph
    mapping = {}
    for i, g in enumerate(groups):
        _replace(graph, g, f"fused_{i}", mapping)
    # one pass over the readers of the replaced values (a graph output reading thousands
    # of values is rewritten once, not once per group)
    users = {u: None for old in mapping for u in old.users}
    for u in users:
        if u in mapping or u._erased:
            continue
        u._update_args_kwargs(map_arg(u.args, lambda n: mapping.get(n, n)),
                              map_arg(u.kwargs, lambda n: mapping.get(n, n)))
    for g in groups:
        for n in reversed(g.members):
            n.users.clear()
            graph.erase_node(n)
    _topological_order(graph)
    graph.lint()
    gm.recompile()
    return len(groups)


def fused_kernels(gm):
    """The FusedKernel targets of `gm`'s graph, in order."""
    return [n.target for n in gm.graph.nodes
            if n.op == "call_function" and isinstance(n.target, FusedKernel)]


# ---- building a group's program ---------------------------------------------------------

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


def _topological_order(graph):
    """Re-order nodes so every node follows its inputs, keeping the original order where
    it already does (fused calls sit at their last member's place)."""
    nodes = list(graph.nodes)
    pos = {n: i for i, n in enumerate(nodes)}
    indeg = {n: len(n.all_input_nodes) for n in nodes}
    import heapq
    ready = [(pos[n], n.name, n) for n in nodes if indeg[n] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, _, n = heapq.heappop(ready)
        order.append(n)
        for u in n.users:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(ready, (pos[u], u.name, u))
    if len(order) != len(nodes):
        raise RuntimeError("fusion produced a cyclic graph (a bug in nbtorch's fuser)")
    # placeholders first, output last, as fx expects
    rank = {n: i for i, n in enumerate(order)}
    order.sort(key=lambda n: (0 if n.op == "placeholder" else 2 if n.op == "output" else 1,
                              rank[n]))
    root = graph._root
    for n in order:
        root.prepend(n)
