"""The gradient reducer behind DistributedDataParallel (PyTorch's C++ `Reducer`, in Python).

Parameters are packed, in reverse registration order (roughly the order backward reaches
them), into flat buckets of one dtype and device, at most `bucket_cap_mb` each (the first
1 MB, so communication starts early). A post-accumulate-grad hook on every parameter
copies its `.grad` into its bucket; a full bucket starts its all-reduce at once
(non-blocking MPI), while backward goes on computing the earlier layers' gradients.
Buckets start strictly in order, so every rank issues the same sequence of collectives.
When the last parameter is in, the reducer waits for the buckets, divides by the world
size and writes the averages back into `.grad` (or makes `.grad` a view of the bucket,
with `gradient_as_bucket_view`).
"""
import time

import numpy as np

__all__ = ["Reducer"]

_FIRST_BUCKET_BYTES = 1024 * 1024


class _Bucket:
    """A flat host buffer for some parameters' gradients, reduced with one all-reduce."""

    def __init__(self, params, np_dtype):
        self.params = params
        self.offsets = []
        pos = 0
        for p in params:
            self.offsets.append(pos)
            pos += p.numel()
        self.flat = np.zeros(pos, np_dtype)
        self.pending = len(params)
        self.work = None


def _np_dtype(p):
    arr = p.detach().cpu()._array if p.device.type != "cpu" else p.detach()._array
    # half gradients are reduced in float32 (MPI has no half types)
    return np.float32 if arr.dtype.itemsize == 2 and arr.dtype.kind != "i" else arr.dtype


def build_buckets(params, cap_bytes):
    """Group `params` (reverse registration order) into buckets by dtype and device."""
    buckets, open_ = [], {}
    first = min(_FIRST_BUCKET_BYTES, cap_bytes)
    for p in reversed(params):
        key = (p.dtype, str(p.device))
        cur = open_.get(key)
        nbytes = p.numel() * p.element_size()
        limit = first if not buckets else cap_bytes
        if cur is None or (cur[1] > 0 and cur[1] + nbytes > limit):
            if cur is not None:
                buckets.append(cur[0])
            cur = open_[key] = [[], 0]
        cur[0].append(p)
        cur[1] += nbytes
    for lst, _ in open_.values():
        buckets.append(lst)
    return [_Bucket(lst, _np_dtype(lst[0])) for lst in buckets]


class Reducer:
    """Average the gradients of `params` over `group` during backward (see the module
    docstring). `prepare(outputs)` arms it for one backward; `finished` says whether the
    last armed backward reduced every bucket."""

    def __init__(self, params, group, bucket_cap_mb, find_unused, as_bucket_view):
        import nbtorch.distributed as dist
        self.dist = dist
        self.group = group
        self.world = dist.get_world_size(group)
        self.find_unused = find_unused
        self.as_bucket_view = as_bucket_view
        self.buckets = build_buckets(params, int(bucket_cap_mb * 1024 * 1024))
        self.slot = {}
        for b in self.buckets:
            for i, p in enumerate(b.params):
                self.slot[id(p)] = (b, i)
        self.handles = [p.register_post_accumulate_grad_hook(self._hook) for p in params]
        self.armed = False
        self.started = False
        self.ready = set()
        self.next_bucket = 0
        self.used = None
        self.wait_s = 0.0          # time the last backward spent waiting for all-reduces
        self.done_fraction = 0.0   # share of the bucket bytes reduced before that wait

    # ---- one iteration -------------------------------------------------------------
    def check_prior_finished(self):
        if self.armed and self.started:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting "
                "a new one. This error indicates that your module has parameters that were "
                "not used in producing loss. You can enable unused parameter detection by "
                "passing the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by making sure all "
                "`forward` function outputs participate in calculating loss. Parameters "
                f"that did not receive grad: {self._missing()}")

    def prepare(self, outputs):
        """Arm the hooks for the backward of `outputs`; mark parameters the graph of
        `outputs` does not reach as ready now (find_unused_parameters)."""
        self.check_prior_finished()
        self.armed, self.started = True, False
        self.ready = set()
        self.next_bucket = 0
        for b in self.buckets:
            b.pending = len(b.params)
            b.work = None
        self.used = None
        if self.find_unused:
            reached = _reached_leaves(outputs)
            self.used = reached
            for b in self.buckets:
                for p in b.params:
                    if id(p) not in reached:
                        self._mark_ready(p)

    def _hook(self, p):
        if self.armed:
            self.started = True
            self._mark_ready(p)

    def _mark_ready(self, p):
        if id(p) in self.ready:
            raise RuntimeError(
                "Expected to mark a variable ready only once. This error is caused by one of "
                "the following reasons: 1) Use of a module parameter outside the `forward` "
                "function. 2) Reused parameters in multiple reentrant backward passes. "
                f"(parameter of shape {tuple(p.shape)})")
        self.ready.add(id(p))
        b, i = self.slot[id(p)]
        piece = b.flat[b.offsets[i]:b.offsets[i] + p.numel()]
        g = p.grad
        if g is None:
            piece[...] = 0
        else:
            src = g._array if g.device.type == "cpu" else g.detach().cpu()._array
            if not np.shares_memory(src, piece):
                piece[...] = src.reshape(-1)
        b.pending -= 1
        self._launch_ready()
        for b2 in self.buckets[:self.next_bucket]:      # let MPI progress
            b2.work.is_completed()

    def _launch_ready(self):
        from ...ops.creation import from_numpy
        while self.next_bucket < len(self.buckets) and \
                self.buckets[self.next_bucket].pending == 0:
            b = self.buckets[self.next_bucket]
            b.work = self.dist.all_reduce(from_numpy(b.flat), group=self.group, async_op=True)
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets):
            self._finalize()

    def _finalize(self):
        total = sum(b.flat.nbytes for b in self.buckets) or 1
        self.done_fraction = sum(b.flat.nbytes for b in self.buckets
                                 if b.work.is_completed()) / total
        t0 = time.perf_counter()
        for b in self.buckets:
            b.work.wait()
        self.wait_s = time.perf_counter() - t0
        globally_used = self._globally_used()
        for b in self.buckets:
            b.flat /= self.world
            for p, off in zip(b.params, b.offsets):
                if globally_used is not None and not globally_used[id(p)]:
                    continue                    # unused on every rank: .grad untouched
                self._write_grad(p, b.flat[off:off + p.numel()])
        self.armed = self.started = False

    def _globally_used(self):
        if self.used is None:
            return None
        from ...ops.creation import from_numpy
        params = [p for b in self.buckets for p in b.params]
        mask = np.array([id(p) in self.used for p in params], np.uint8)
        self.dist.all_reduce(from_numpy(mask), self.dist.ReduceOp.MAX, group=self.group)
        return {id(p): bool(m) for p, m in zip(params, mask)}

    def _write_grad(self, p, piece):
        from ...ops.creation import from_numpy
        g = p.grad
        if p.device.type == "cpu" and p.dtype.itemsize != 2:
            if self.as_bucket_view:
                if g is None or not np.shares_memory(g._array, piece):
                    p.grad = from_numpy(piece).view(p.shape)
                return
            if g is None:
                p.grad = from_numpy(piece.copy()).view(p.shape)
            else:
                g._array[...] = piece.reshape(g.shape)
            return
        value = from_numpy(piece.copy()).view(p.shape).to(p.dtype).to(p.device)
        if g is None:
            p.grad = value
        else:
            from ...autograd.grad_mode import no_grad
            with no_grad():
                g.copy_(value)

    def _missing(self):
        names = [tuple(p.shape) for b in self.buckets for p in b.params
                 if id(p) not in self.ready]
        return names

    def remove_hooks(self):
        for h in self.handles:
            h.remove()


def _reached_leaves(outputs):
    """ids of the leaf tensors whose AccumulateGrad nodes the graph of `outputs` reaches."""
    from ..._tensor import Tensor
    stack, seen, leaves = [], set(), set()
    todo = [outputs]
    while todo:                                  # tensors inside nested outputs
        o = todo.pop()
        if isinstance(o, Tensor):
            if o.grad_fn is not None:
                stack.append(o.grad_fn)
            elif o.requires_grad:
                leaves.add(id(o))
        elif isinstance(o, (list, tuple)):
            todo.extend(o)
        elif isinstance(o, dict):
            todo.extend(o.values())
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if getattr(node, "_is_accumulate", False):
            leaves.add(id(node.variable))
            continue
        for nxt, _ in node.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return leaves
