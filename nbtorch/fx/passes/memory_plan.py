"""Memory planning: intermediate buffers reused when their lifetimes do not overlap.

A fused kernel's outputs are allocated by the caller (DESIGN.md), so the
caller may hand it memory it already holds. This pass finds the fused
outputs of at least `min_bytes` that never leave the graph (not a graph
output, and read only by nodes that make new tensors: fused kernels,
elementwise kernels, and recorded ops that did not return a view of their
input), computes each one's lifetime (from its node to its last reader, in
graph order) and packs them into as few buffers as possible, greedily: a
value takes the smallest free buffer large enough, else a new one. Each
planned call's target becomes a `PlannedCall` that takes its outputs from an
`Arena` (one set of buffers per thread, kept across calls: no page faults
after the first call; DESIGN.md measured 80 ms/GB for fresh memory).

``node.meta['buffer']`` holds the buffer index of each planned output (a tuple
for multi-output kernels, None where an output is not planned).

Example:
    >>> from nbtorch.fx.passes.memory_plan import plan_memory
    >>> plan = plan_memory(compiled_forward)
    >>> plan.buffer_bytes, plan.values           # buffer sizes, values placed
"""
import operator
import threading

import numpy as np

from .epilogue import AddmmRelu, ReluGradSum
from .fused_kernel import FusedKernel
from .lower import ElementwiseCall, FunctionCall
from .products import Product
from .shape_prop import TensorMetadata

__all__ = ["plan_memory", "MemoryPlan", "Arena", "PlannedCall"]


class MemoryPlan:
    """What `plan_memory` decided: `buffer_bytes` (one size per buffer), `values`
    ({node name: buffer}), `unplanned_bytes` (what planned values would take apart)."""

    def __init__(self):
        self.buffer_bytes = []
        self.values = {}
        self.unplanned_bytes = 0

    @property
    def saved_bytes(self):
        return self.unplanned_bytes - sum(self.buffer_bytes)

    def __repr__(self):
        return (f"MemoryPlan({len(self.values)} values in {len(self.buffer_bytes)} buffers, "
                f"{sum(self.buffer_bytes)} bytes instead of {self.unplanned_bytes})")


class Arena:
    """Buffers of a plan, one set per thread, allocated on first use and kept."""

    def __init__(self, sizes, device):
        self.sizes = list(sizes)
        self.device = device
        self._local = threading.local()

    def buffers(self):
        bufs = getattr(self._local, "bufs", None)
        if bufs is None:
            bufs = self._local.bufs = [None] * len(self.sizes)
        return bufs

    def tensor(self, slot, shape, dtype, n):
        """A contiguous tensor of `shape` and `dtype` over buffer `slot`."""
        from ..._tensor import Size, Storage, Tensor, contiguous_strides, empty
        bufs = self.buffers()
        buf = bufs[slot]
        if buf is None:
            if self.device.type != "cpu":
                buf = bufs[slot] = empty((self.sizes[slot],), _uint8(), self.device)._storage.data
            else:
                buf = bufs[slot] = np.empty(self.sizes[slot], np.uint8)
        data = buf[:n * dtype.itemsize].view(dtype.np)
        return Tensor.__new__(Tensor)._init(Storage(data, self.device), 0, Size(shape),
                                            contiguous_strides(shape), dtype)


def _uint8():
    from ... import _dtype
    return _dtype.uint8


class PlannedCall:
    """call_function target: `fk` writing its planned outputs into arena buffers."""

    def __init__(self, fk, arena, slots):
        self.fk = fk
        self.arena = arena
        self.slots = tuple(slots)
        self.__name__ = fk.__name__
        self.__qualname__ = fk.__qualname__
        self.__module__ = fk.__module__
        self._specs = []
        for slot, (shape, d) in zip(self.slots, fk._out):
            n = 1
            for s in shape:
                n *= s
            self._specs.append((slot, shape, d, n))

    def __call__(self, *tensors):
        outs = self.fk._allocate()
        for i, (slot, shape, d, n) in enumerate(self._specs):
            if slot is not None:
                outs[i] = self.arena.tensor(slot, shape, d, n)
        return self.fk.run_into(tensors, outs)

    def __repr__(self):
        return f"<PlannedCall {self.fk.name} buffers={self.slots}>"


def _meta(node):
    m = node.meta.get("tensor_meta")
    return m if isinstance(m, TensorMetadata) else None


def _fresh_reader(user):
    """True when `user` reads its inputs without keeping or aliasing them."""
    if user.op != "call_function":
        return False
    t = user.target
    if isinstance(t, (FusedKernel, PlannedCall, ElementwiseCall, Product, AddmmRelu,
                      ReluGradSum)):
        return True
    if isinstance(t, FunctionCall):
        return user.meta.get("aliases_input") is False
    return False


def plan_memory(gm, min_bytes=1 << 16):
    """Plan the fused outputs of GraphModule `gm` (see the module docstring); returns the
    `MemoryPlan` (also stored as ``gm.meta['memory_plan']``) and recompiles `gm`."""
    graph = gm.graph
    nodes = list(graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    out_node = nodes[-1]
    escaping = set(out_node.all_input_nodes)
    # (value node, call node, output position, nbytes)
    candidates = []
    for node in nodes:
        if node.op != "call_function" or not isinstance(node.target, FusedKernel):
            continue
        fk = node.target
        if fk.device.type != "cpu":
            continue                 # device memory comes from the caching allocator
        if fk.single:
            values = [(node, 0)]
        else:
            values = [(u, u.args[1]) for u in node.users
                      if u.target is operator.getitem and isinstance(u.args[1], int)]
        for value, pos in values:
            m = _meta(value)
            if m is None or value in escaping or not value.users:
                continue
            if not all(_fresh_reader(u) for u in value.users):
                continue
            nbytes = int(np.prod(m.shape, dtype=np.int64)) * m.dtype.itemsize
            if nbytes >= min_bytes:
                candidates.append((value, node, pos, nbytes))
    plan = MemoryPlan()
    if not candidates:
        gm.meta["memory_plan"] = plan
        return plan
    device = candidates[0][1].target.device
    free, sizes, live = [], [], []         # free buffer ids; sizes; (end, buffer)
    assigned = {}
    for value, call, pos, nbytes in sorted(candidates, key=lambda c: index[c[1]]):
        start = index[call]
        end = max(index[u] for u in value.users)
        still = []
        for e, b in live:
            (free.append(b) if e < start else still.append((e, b)))
        live = still
        fits = [b for b in free if sizes[b] >= nbytes]
        if fits:
            b = min(fits, key=lambda i: sizes[i])
            free.remove(b)
        else:
            b = len(sizes)
            sizes.append(nbytes)
        live.append((end, b))
        assigned[(call, pos)] = b
        plan.values[value.name] = b
        plan.unplanned_bytes += nbytes
    plan.buffer_bytes = sizes
    arena = Arena(sizes, device)
    for node in nodes:
        if node.op == "call_function" and isinstance(node.target, FusedKernel):
            fk = node.target
            slots = [assigned.get((node, i)) for i in range(len(fk.outputs))]
            if any(s is not None for s in slots):
                node.target = PlannedCall(fk, arena, slots)
                node.meta["buffer"] = slots[0] if fk.single else tuple(slots)
    gm.meta["memory_plan"] = plan
    gm.recompile()
    return plan
