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
from ..node import map_arg
from .fused_kernel import FusedKernel
from .fusion_build import replace as _replace
from .fusion_ops import FUSABLE_DTYPES, _classify, _meta  # noqa: F401

__all__ = ["fuse", "fused_kernels", "FUSABLE_DTYPES"]

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

