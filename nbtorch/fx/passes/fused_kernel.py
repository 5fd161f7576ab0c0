"""FusedKernel: the call_function target that runs one fused group as one generated kernel.

A fused group (see `fusion.py`) iterates over its shape ``G`` as rows of the
last dim. Its operands are the group's external tensors, each broadcast to
``G`` ("g") or, for values that are one per row without a kept dim, to
``G[:-1]`` plus a stride-0 last dim ("rown"); its Python numbers are scalar
arguments of their compute dtype (one compiled kernel serves every value).

Per call the launcher reads each operand's strides, merges the dims that all
operands (and the contiguous outputs) allow, classifies each operand along the
row (`kernels/fusion.py`: c, b, s, z), fetches the kernel generated for those
kinds (generated, written and imported once; Numba compiles it lazily and
caches it on disk), allocates the outputs and calls it. Layouts are memoised
per operand geometry, so a call on the shapes it has seen costs a dict lookup.
A contiguous elementwise group is cut into rows of `ROW_BLOCK` elements so
that large calls run in parallel (`PARALLEL_THRESHOLD`; serial in a process forked
after OpenMP's threads started, kernels/cpu/openmp.py, checked per call since plans are
memoised). Empty tensors run the group's original nodes (``fallback``).
"""
import numpy as np

from nbtorch.kernels import fusion as _fusion
from nbtorch.kernels.cpu import openmp as _openmp

__all__ = ["FusedKernel", "PARALLEL_THRESHOLD", "ROW_BLOCK"]

PARALLEL_THRESHOLD = 1 << 16     # elements: below it a parallel launch costs more than it saves
# A group without a row reduction needs 4x that: a parallel region costs ~60 us with
# Numba's workers sleeping between regions (nbtorch/_threads.py), and compiled
# gelu(x * w + b) * y ran serial vs parallel 69 vs 124 us at 2^16 elements, 296 vs 273 at
# 2^18 (a softmax over rows of 256: 153 vs 139 at 2^16, 623 vs 315 at 2^18).
ELEMENTWISE_COST = 4
ROW_BLOCK = 1 << 14              # row length of a contiguous elementwise group cut for prange


class FusedKernel:
    """Runs a fused group; ``fk(*tensors)`` -> output tensor (or a tuple of them).

    Attributes: `steps` (the program's steps, operands referring to `inputs` and
    `scalars`), `inputs` ((role, dtype, view) per tensor argument: view is None, or
    (shape, strides, base shape, base strides) when the group reads the argument
    through a view the fuser absorbed), `scalars` ((value,
    dtype) per number), `outputs` ((ref, where, dtype, shape) per result),
    `shape` (the group's G), `device`, `fallback` (a callable running the original
    nodes), `name`.
    """

    def __init__(self, name, steps, inputs, scalars, outputs, shape, device, fallback=None):
        self.name = self.__name__ = self.__qualname__ = name
        self.__module__ = "nbtorch.fx.passes.fused_kernel"
        self.steps = tuple(steps)
        self.inputs = tuple((i[0], i[1], i[2] if len(i) > 2 else None) for i in inputs)
        self.scalars = tuple(scalars)
        self.outputs = tuple(outputs)
        self.shape = tuple(shape)
        self.device = device
        self.fallback = fallback
        totals = {ref for ref, where, _, _ in self.outputs if where == "all"}
        # reductions over the row keep the last dim apart; totals alone do not
        self.row_reduction = any(s[0] == "reduce" and ("v", i) not in totals
                                 for i, s in enumerate(self.steps))
        self._plans = {}
        self._kernels = {}           # kinds -> (serial, parallel) or the CUDA launcher
        self._scalar_args = tuple(np.dtype(_fusion.dtype_name(d)).type(v)
                                  for v, d in self.scalars)
        self.single = len(self.outputs) == 1
        self._out = [(tuple(shape), _dtype_of(d)) for _, _, d, shape in self.outputs]
        from ..._tensor import Size, contiguous_strides
        self._cpu_out = [(Size(shape), contiguous_strides(shape), int(np.prod(shape, dtype=np.int64)),
                          d.np, d) for shape, d in self._out]
        self.calls = 0

    def __repr__(self):
        return f"<FusedKernel {self.name}: {len(self.steps)} steps, shape {list(self.shape)}>"

    def __reduce__(self):
        raise TypeError("a FusedKernel is part of a compiled graph and is not pickled: save "
                        "the traced module (nbtorch.jit.save) instead")

    # ---- programs ------------------------------------------------------------------
    def program(self, kinds):
        """The `kernels.fusion.Program` of this group for operand `kinds`."""
        arrays = [(k, d) for k, (_, d, _) in zip(kinds, self.inputs)]
        return _fusion.Program(arrays, [d for _, d in self.scalars], self.steps,
                               [(ref, where, d) for ref, where, d, _ in self.outputs])

    def kernel(self, kinds):
        """(serial, parallel) CPU kernels (or the CUDA launcher) for operand `kinds`."""
        k = self._kernels.get(kinds)
        if k is None:
            program = self.program(kinds)
            if self.device.type == "cuda":
                from nbtorch.kernels.cuda import fusion as cuda_fusion
                k = cuda_fusion.kernel(program)
            else:
                from nbtorch.kernels import _generated
                module = _generated.load(f"fused_{_fusion.program_label(program)}",
                                         _fusion.cpu_source(program, "fused"))
                k = (module.fused_serial, module.fused_parallel)
            self._kernels[kinds] = k
        return k

    def sources(self):
        """{kinds: generated source} of the kernels made so far."""
        out = {}
        for kinds in self._kernels:
            program = self.program(kinds)
            if self.device.type == "cuda":
                from nbtorch.kernels.cuda import fusion as cuda_fusion
                out[kinds] = cuda_fusion.source(program)
            else:
                out[kinds] = _fusion.cpu_source(program, "fused")
        return out

    # ---- layout ----------------------------------------------------------------------
    def _operand_strides(self, t, role, view=None):
        """t's strides broadcast to the group's iteration shape (role 'g' or 'rown'); with
        `view`, t read as that view (shape, strides) of it."""
        G = self.shape
        if role == "rown":
            target = G[:-1]
        else:
            target = G
        if view is None:
            shape, strides = t._shape, t._strides
        else:
            shape, strides = view[0], view[1]
        pad = len(target) - len(shape)
        out = [0] * pad
        for s, st, g in zip(shape, strides, target[pad:]):
            out.append(st if s == g and s != 1 else 0)
        if role == "rown":
            out.append(0)
        return out

    def plan(self, tensors):
        """(R, C, n_last, lead, st, kinds, parallel) for these operand geometries."""
        G = self.shape
        strides = [self._operand_strides(t, role, view)
                   for t, (role, _, view) in zip(tensors, self.inputs)]
        if G:
            dims, per = list(G), strides
        else:
            dims, per = [1], [[0] for _ in strides]
        merged = _merge(dims, per, self.row_reduction and len(G) > 0)
        merged_dims = [m[0] for m in merged]
        merged = [[m[1][i] for m in merged] for i in range(len(per))]
        C = merged_dims[-1]
        lead_dims = merged_dims[:-1]
        lead_st = [m[:-1] for m in merged]
        col = [m[-1] for m in merged]
        R = 1
        for s in lead_dims:
            R *= s
        n_last = C
        if not lead_dims and not self.row_reduction and C > ROW_BLOCK and all(
                c in (0, 1) for c in col):
            # one long contiguous row: cut it into rows of ROW_BLOCK (the last one shorter)
            R = -(-C // ROW_BLOCK)
            n_last = C - (R - 1) * ROW_BLOCK
            lead_dims = [R]
            lead_st = [[ROW_BLOCK if c == 1 else 0] for c in col]
            C = ROW_BLOCK
        if C == 1:
            # a row of one element (softmax over a length-1 dim: the first step of a
            # growing sequence) broadcasts nothing along it: every operand is read at its
            # row's base, as a contiguous one (a size-1 dim gave stride 0, "constant along
            # the row", and the code generator refused the reduction)
            col = [1] * len(col)
        kinds = []
        for c, ls in zip(col, lead_st):
            if c == 1:
                kinds.append("c")
            elif c == 0:
                kinds.append("b" if any(ls) else "z")
            else:
                kinds.append("s")
        lead = np.array(lead_dims, dtype=np.int64)
        st = np.array([ls + [c] for ls, c in zip(lead_st, col)], dtype=np.int64).reshape(
            len(col), len(lead_dims) + 1)
        n = (R - 1) * C + n_last if R else 0
        size = n if self.row_reduction else n // ELEMENTWISE_COST
        parallel = R > 1 and size >= PARALLEL_THRESHOLD and not any(
            where == "all" and self.steps[ref[1]][1] in ("amax", "amin")
            for ref, where, _, _ in self.outputs)
        return R, C, n_last, lead, st, "".join(kinds), parallel

    # ---- running ---------------------------------------------------------------------
    def __call__(self, *tensors):
        key = tuple([(t._shape, t._strides, t.dtype) for t in tensors])
        plan = self._plans.get(key)
        if plan is None:
            plan = self._check_and_plan(tensors, key)
        if plan is False:
            return self.fallback(*tensors)
        return self._launch(plan, tensors, self._allocate())

    def run_into(self, tensors, outs):
        """Like calling it, writing into the given contiguous `outs` (memory planning)."""
        key = tuple([(t._shape, t._strides, t.dtype) for t in tensors])
        plan = self._plans.get(key)
        if plan is None:
            plan = self._check_and_plan(tensors, key)
        if plan is False:
            res = self.fallback(*tensors)
            res = (res,) if self.single else res
            for o, r in zip(outs, res):
                o._array[...] = r._array
            return outs[0] if self.single else tuple(outs)
        return self._launch(plan, tensors, outs)

    def _launch(self, plan, tensors, outs):
        head, fn, serial = plan
        if not _openmp.USABLE:
            fn = serial
        self.calls += 1
        args = list(head)
        for t in tensors:
            args.append(t._storage.data)
            args.append(t._offset)
        args.extend(self._scalar_args)
        for o in outs:
            args.append(o._storage.data)
        fn(*args)
        return outs[0] if self.single else tuple(outs)

    def _allocate(self):
        """The outputs: new contiguous tensors (on the CPU without `empty`'s generality)."""
        from ..._tensor import Storage, Tensor, empty, _alloc_cpu
        device = self.device
        if device.type != "cpu":
            return [empty(shape, d, device) for shape, d in self._out]
        new = Tensor.__new__            # large outputs from the caching allocator, as empty()'s
        return [new(Tensor)._init(Storage(_alloc_cpu(n, npd, device), device), 0, size, st, d)
                for size, st, n, npd, d in self._cpu_out]

    def _check_and_plan(self, tensors, key):
        if len(tensors) != len(self.inputs):
            raise TypeError(f"{self.name}: expected {len(self.inputs)} tensor operands, got "
                            f"{len(tensors)}")
        G = self.shape
        for i, (t, (role, _, view)) in enumerate(zip(tensors, self.inputs)):
            if view is not None:
                if (tuple(t._shape), tuple(t._strides)) != (view[2], view[3]):
                    self._plans[key] = False      # not the layout the view was made for
                    return False
                continue
            target = G[:-1] if role == "rown" else G
            shape = tuple(t._shape)
            if len(shape) > len(target) or any(
                    a != b and a != 1 for a, b in zip(shape[::-1], target[::-1])):
                raise RuntimeError(f"{self.name}: operand {i} has shape {list(shape)}, which "
                                   f"does not broadcast to the fused group's shape "
                                   f"{list(target)} (the kernel was made for that shape)")
        for i, (t, (_, d, _)) in enumerate(zip(tensors, self.inputs)):
            if t.dtype.np.name != _fusion.dtype_name(d) or t.device != self.device:
                plan = False                # not what the kernel was generated for
                break
        else:
            n = 1
            for s in self.shape:
                n *= s
            plan = self.plan(tensors) if n else False
        if plan is False and self.fallback is None:
            raise RuntimeError(f"{self.name}: operands do not match the fused kernel "
                               "(dtype, device or an empty shape) and no fallback is set")
        if plan is not False:
            R, C, n_last, lead, st, kinds, parallel = plan
            k = self.kernel(kinds)
            if self.device.type == "cuda":
                fn = serial = k
            else:
                fn, serial = (k[1] if parallel else k[0]), k[0]
            plan = ((R, C, n_last, lead, st), fn, serial)
        if len(self._plans) > 64:
            self._plans.clear()
        self._plans[key] = plan
        return plan


def _merge(dims, per, keep_last):
    """Adjacent dims merged where every operand's strides allow (outputs are contiguous):
    [[size, [stride per operand]], ...] outer to inner; size-1 dims dropped; with
    `keep_last` the last dim stays a dim of its own (the reduced row)."""
    res = []                         # inner first
    for d in range(len(dims) - 1, -1, -1):
        size, sts = dims[d], [p[d] for p in per]
        if not res:
            res.append([size, sts])
            continue
        if size == 1:
            continue
        inner = res[-1]
        if keep_last and len(res) == 1:
            res.append([size, sts])
        elif inner[0] == 1 and not (keep_last and len(res) == 1):
            inner[0], inner[1] = size, sts
        elif all(s == i * inner[0] for s, i in zip(sts, inner[1])):
            inner[0] *= size
        else:
            res.append([size, sts])
    res.reverse()
    return res


def _dtype_of(name):
    from ... import _dtype
    return _dtype.to_dtype(np.dtype(name))
