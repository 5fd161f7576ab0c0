"""Fused kernels: a chain of elementwise bodies (optionally ending in row reductions)
generated as the source of ONE kernel, written to a cache directory and imported.

A fused group is described by a `Program` (plain tuples, so it hashes and
prints): array operands with their layout kind along a row, scalar operands,
steps and outputs. Steps are

    ("call", body, operands, compute dtypes, result dtype)   body of kernels/elementwise.py
    ("reduce", "sum"|"mean"|"amax"|"amin", operand, dtype)   over the row (last dim)

and operands are references ``("a", i)`` (array operand i), ``("s", i)`` (scalar
operand i) or ``("v", i)`` (the value of step i). Each output is ``(ref, where,
dtype)`` with where = "elem" (one value per element), "row" (one per row) or
"all" (a reduction over every row: one value).

The loop (see `cpu_source` and `cuda/fusion.py`) follows DESIGN.md's rules:
the iteration space is (rows, C) after the caller merged dims; each array
operand is its flat storage plus an offset, a row offset computed once per
row from the leading-dim strides, and a kind that says how it varies along
the row::

    c  contiguous along the row   row view a[p:p + C], read a[j]
    b  constant along the row     one value a[p] per row
    s  strided along the row      a[p + j * stride]
    z  constant everywhere        one value for the whole call

Reductions need one pass over the row each, so the row loop runs as many
passes as the chain of reductions is deep (softmax: max, sum of exp, write);
elementwise values a later pass needs are recomputed (they are cheap; a row
stays in cache). Outputs are allocated by the caller.
"""
import hashlib

import numpy as np

__all__ = ["Program", "levels", "cpu_source", "program_hash", "program_label", "REDUCTIONS",
           "dtype_name", "body_of", "body_jit"]

REDUCTIONS = ("sum", "mean", "amax", "amin")
KINDS = "cbsz"
_SUM_BLOCK = 1024          # float32 sums: float32 partials per block, summed in float64


def dtype_name(d):
    """'float32' for any NumPy dtype spelling."""
    return np.dtype(d).name


def body_of(name):
    """The plain Python scalar body called `name` (the elementwise table's bodies)."""
    from nbtorch.kernels import scalar
    return getattr(scalar, name)


_JITTED = {}


def body_jit(name):
    """Scalar body `name` as one ``njit`` function shared by every generated kernel of
    the process (compiled once per signature, not once per kernel that calls it), with
    the eager ufuncs' options: NumPy's error model, fast-math 'contract' only."""
    fn = _JITTED.get(name)
    if fn is None:
        from numba import njit
        fn = _JITTED[name] = njit(error_model="numpy", fastmath={"contract"})(body_of(name))
    return fn


class Program:
    """A fused group: ``arrays`` ((kind, dtype), ...), ``scalars`` (dtype, ...),
    ``steps`` and ``outputs`` as described in the module docstring."""

    __slots__ = ("arrays", "scalars", "steps", "outputs", "_hash")

    def __init__(self, arrays, scalars, steps, outputs):
        self.arrays = tuple((k, dtype_name(d)) for k, d in arrays)
        self.scalars = tuple(dtype_name(d) for d in scalars)
        self.steps = tuple(steps)
        self.outputs = tuple((ref, where, dtype_name(d)) for ref, where, d in outputs)
        self._hash = None
        for kind, _ in self.arrays:
            if kind not in KINDS:
                raise ValueError(f"fused program: unknown operand kind {kind!r}")

    def key(self):
        return (self.arrays, self.scalars, self.steps, self.outputs)

    def __eq__(self, other):
        return isinstance(other, Program) and self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        return f"Program({program_hash(self)})"

    def has_reduction(self):
        return any(s[0] == "reduce" for s in self.steps)

    def dtype_of(self, ref):
        kind, i = ref
        if kind == "a":
            return self.arrays[i][1]
        if kind == "s":
            return self.scalars[i]
        step = self.steps[i]
        return dtype_name(step[4] if step[0] == "call" else step[3])


def program_hash(program):
    """A short stable hash of a program (names its generated module)."""
    return hashlib.sha256(repr(program.key()).encode()).hexdigest()[:16]


def program_label(program):
    """A short readable name made of the program's first bodies ('mul_add_gelu')."""
    names = []
    for s in program.steps:
        n = s[1].rstrip("_")
        if n not in names:
            names.append(n)
    return "_".join(names[:4]) or "copy"


def levels(program):
    """For each step: (per-element?, level). Level = how many reduction passes must have
    finished before the value exists; per-element values vary along the row."""
    out = []

    def info(ref):
        kind, i = ref
        if kind == "a":
            return program.arrays[i][0] in "cs", 0
        if kind == "s":
            return False, 0
        return out[i]

    for step in program.steps:
        if step[0] == "call":
            infos = [info(r) for r in step[2]]
            out.append((any(e for e, _ in infos), max((lv for _, lv in infos), default=0)))
        else:
            elem, lv = info(step[2])
            if not elem:
                raise ValueError("fused program: a reduction over a value that is constant "
                                 "along the row")
            out.append((False, lv + 1))
    return out


# ---- CPU source -----------------------------------------------------------------------

_CPU_MODULE = '''"""Fused CPU kernel {hash}: generated by nbtorch.kernels.fusion (the file name is the
hash of this text: do not edit).

{doc}
"""
import numpy as np
from numba import njit, prange

from nbtorch.kernels.cpu.simd import _own_function_with_512bit_vectors as _simd512
from nbtorch.kernels.fusion import body_jit
{imports}

{bodies}

_LOOP = dict(cache=True, nogil=True, error_model="numpy", fastmath={fastmath})


{kernels}'''


def _cast(dtype, expr):
    return f"np.{dtype}({expr})"


class _Emitter:
    """Writes the per-row code of a program for one target (CPU here; CUDA reuses it)."""

    def __init__(self, program, body_name, index="j"):
        self.p = program
        self.levels = levels(program)
        self.body_name = body_name          # body name -> callable's name in the source
        self.index = index
        self.view = "r"                     # row views r0...; block views b0... in blocks

    def load(self, i):
        kind, _ = self.p.arrays[i]
        j = self.index
        if kind == "c":
            return f"{self.view}{i}[{j}]"
        if kind == "s":
            return f"d{i}[p{i} + {j} * cs{i}]"
        if kind == "b":
            return f"rb{i}"
        return f"z{i}"

    def ref(self, ref, local):
        kind, i = ref
        if kind == "a":
            return self.load(i)
        if kind == "s":
            return f"s{i}"
        return local.get(i, f"v{i}")

    def elem_steps(self, needed):
        """Lines computing the per-element steps in `needed` (in order)."""
        lines = []
        for i in sorted(needed):
            step = self.p.steps[i]
            _, body, operands, compute, out = step
            args = []
            for r, cd in zip(operands, compute):
                expr = self.ref(r, {})
                if self.p.dtype_of(r) != dtype_name(cd):
                    expr = _cast(dtype_name(cd), expr)
                args.append(expr)
            lines.append(f"v{i} = {_cast(dtype_name(out), self.body_name[body] + '(' + ', '.join(args) + ')')}")
        return lines

    def closure(self, refs):
        """The per-element steps the values `refs` need, transitively."""
        need = set()
        todo = [r for r in refs if r[0] == "v"]
        while todo:
            _, i = todo.pop()
            if i in need or not self.levels[i][0]:
                continue
            need.add(i)
            step = self.p.steps[i]
            todo.extend(r for r in step[2] if r[0] == "v")
        return need


def _reduce_init(op, dtype):
    if op in ("sum", "mean"):
        return "0" if dtype.startswith(("int", "uint", "bool")) else "0.0"
    if dtype.startswith("float"):
        return "-np.inf" if op == "amax" else "np.inf"
    info = np.iinfo(np.dtype(dtype))
    return str(info.min if op == "amax" else info.max)


def _acc_dtype(op, dtype):
    if op in ("sum", "mean"):
        if dtype.startswith("float"):
            return "float64"
        return "int64"
    return dtype


def _update(op, acc, v, dtype):
    if op in ("sum", "mean"):
        return [f"{acc} += {v}"]
    cmp = ">" if op == "amax" else "<"
    if dtype.startswith("float"):
        return [f"if {v} {cmp} {acc} or {v} != {v}:", f"    {acc} = {v}"]
    return [f"if {v} {cmp} {acc}:", f"    {acc} = {v}"]


def cpu_source(program, name="fused"):
    """(source of a module holding ``<name>_serial`` and ``<name>_parallel``, doc line)."""
    p = program
    used = sorted({s[1] for s in p.steps if s[0] == "call"})
    imports, bodies, body_name = [], [], {}
    for b in used:
        fn = body_of(b)
        # imported by name too: the kernel's cache stamp covers the body's own file
        imports.append(f"from {fn.__module__} import {fn.__name__} as _py_{b}  # noqa: F401")
        body_name[b] = f"_{b}"
        bodies.append(f"_{b} = body_jit({b!r})")
    em = _Emitter(p, body_name)
    serial = _cpu_kernel(em, f"{name}_serial", "range")
    parallel = _cpu_kernel(em, f"{name}_parallel", "prange")
    fastmath = '{"contract", "reassoc"}' if p.has_reduction() else '{"contract"}'
    doc = describe(p)
    src = _CPU_MODULE.format(hash=program_hash(p), doc=doc, imports="\n".join(imports),
                             bodies="\n".join(bodies), fastmath=fastmath,
                             kernels=serial + "\n\n" + parallel.replace(
                                 "@njit(**_LOOP)", "@njit(parallel=True, **_LOOP)"))
    return src


def _signature(p):
    args = ["R", "C", "n_last", "lead", "st"]
    for i in range(len(p.arrays)):
        args += [f"d{i}", f"o{i}"]
    args += [f"s{i}" for i in range(len(p.scalars))]
    args += [f"out{i}" for i in range(len(p.outputs))]
    return ", ".join(args)


def _cpu_kernel(em, name, loop, target="cpu"):
    """One kernel function: rows in `loop` (range, prange, or the CUDA grid-stride loop
    over rows), passes inside each row. On the CPU, contiguous operands are read through
    row views (and float32 sums through block views: a computed start index would make
    LLVM gather), on CUDA straight from the flat storages."""
    p = em.p
    lv = em.levels
    cpu = target == "cpu"
    body = []
    add = body.append
    add("k = lead.shape[0]")
    for i, (kind, _) in enumerate(p.arrays):
        if kind == "z":
            add(f"z{i} = d{i}[o{i}]")
        if kind == "s" and cpu:
            add(f"cs{i} = st[{i}, k]")
    all_outs = [(o, ref) for o, (ref, where, _) in enumerate(p.outputs) if where == "all"]
    for o, ref in all_outs:
        step = p.steps[ref[1]]
        add(f"tot{o} = {_reduce_init(step[1], _acc_dtype(step[1], step[3]))}")
    add(f"for i in {loop}:" if not cpu else f"for i in {loop}(R):")
    row = []
    radd = row.append
    radd("r = i + 0")
    if cpu and not p.has_reduction():
        radd("_simd512()")      # 512-bit vectors for elementwise groups (see cpu/simd.py)
    for i in range(len(p.arrays)):
        radd(f"p{i} = o{i}")
    if p.arrays:
        radd("for t in range(k - 1, -1, -1):")
        radd("    q = r % lead[t]")
        radd("    r = r // lead[t]")
        for i in range(len(p.arrays)):
            radd(f"    p{i} += q * st[{i}, t]")
    radd("cl = C")
    radd("if i == R - 1:")
    radd("    cl = n_last")
    for i, (kind, _) in enumerate(p.arrays):
        if kind == "c" and cpu:
            radd(f"r{i} = d{i}[p{i}:p{i} + cl]")
        elif kind == "b":
            radd(f"rb{i} = d{i}[p{i}]")
    n_pass = 1 + max([lv[r[1]][1] for r, w, _ in p.outputs if r[0] == "v" and w == "elem"]
                     + [lv[s[2][1]][1] for s in p.steps if s[0] == "reduce"
                        and s[2][0] == "v"] + [0])
    done_row = set()
    for ps in range(n_pass):
        # row values available before this pass: row-level calls of level <= ps
        for i, step in enumerate(p.steps):
            if i in done_row or lv[i][0] or lv[i][1] > ps:
                continue
            if step[0] == "call":
                row.extend(em.elem_steps({i}))
                done_row.add(i)
        reds = [i for i, s in enumerate(p.steps) if s[0] == "reduce" and lv[i][1] == ps + 1]
        outs = [(o, ref) for o, (ref, where, _) in enumerate(p.outputs)
                if where == "elem" and _level(ref, lv) == ps]
        if not reds and not outs:
            continue
        blocked = cpu and any(p.steps[i][1] in ("sum", "mean") and p.steps[i][3] == "float32"
                              for i in reds)
        if cpu:
            for o, _ in outs:
                radd(f"w{o} = out{o}[i * C:i * C + cl]")
        if cpu and outs and reds:
            # the stores in a loop of their own, the reductions in one that only reads: a
            # reassoc loop that does both runs a vector or a scalar version by where the
            # output lies after an input (LLVM's pointer-difference check), and the two sum
            # in different orders (cpu/softmax.py's _softmax_row has the measurements)
            em.view, em.index = "r", "j"
            radd("for j in range(cl):")
            row.extend("    " + ln for ln in em.elem_steps(em.closure([r for _, r in outs]))
                       + [f"w{o}[j] = {em.ref(r, {})}" for o, r in outs])
            outs = []
        need = em.closure([p.steps[i][2] for i in reds] + [ref for _, ref in outs])
        if blocked:
            em.view, em.index = "b", "jj"
        inner = em.elem_steps(need)
        for o, ref in outs:
            dst = (f"wb{o}[jj]" if blocked else f"w{o}[j]") if cpu else f"out{o}[i * C + j]"
            inner.append(f"{dst} = {em.ref(ref, {})}")
        sums = [i for i in reds if blocked and p.steps[i][1] in ("sum", "mean")
                and p.steps[i][3] == "float32"]
        for i in reds:
            op, dt = p.steps[i][1], p.steps[i][3]
            radd(f"acc{i} = {_cast(_acc_dtype(op, dt), _reduce_init(op, _acc_dtype(op, dt)))}")
        upd = []
        for i in reds:
            op, dt = p.steps[i][1], p.steps[i][3]
            src = em.ref(p.steps[i][2], {})
            upd += _update(op, f"blk{i}" if i in sums else f"acc{i}", src, dt)
        em.view, em.index = "r", "j"
        if blocked:
            radd(f"for jb in range(0, cl, {_SUM_BLOCK}):")
            radd(f"    nb = min({_SUM_BLOCK}, cl - jb)")
            for i, (kind, _) in enumerate(p.arrays):
                if kind == "c":
                    radd(f"    b{i} = r{i}[jb:jb + nb]")
            for o, _ in outs:
                radd(f"    wb{o} = w{o}[jb:jb + nb]")
            for i in sums:
                radd(f"    blk{i} = np.float32(0.0)")
            radd("    for jj in range(nb):")
            if any(kind == "s" for kind, _ in p.arrays):
                radd("        j = jb + jj")
            row.extend("        " + ln for ln in inner + upd)
            for i in sums:
                radd(f"    acc{i} += blk{i}")
        else:
            radd("for j in range(cl):")
            row.extend("    " + ln for ln in inner + upd)
        for i in reds:
            op, dt = p.steps[i][1], p.steps[i][3]
            val = f"acc{i} / cl" if op == "mean" else f"acc{i}"
            radd(f"v{i} = {_cast(dt, val)}")
            done_row.add(i)
    for i, step in enumerate(p.steps):          # row values only outputs need
        if i not in done_row and not lv[i][0]:
            row.extend(em.elem_steps({i}) if step[0] == "call" else [])
    for o, (ref, where, dt) in enumerate(p.outputs):
        if where == "row":
            radd(f"out{o}[i] = {em.ref(ref, {})}")
        elif where == "all":
            op = p.steps[ref[1]][1]
            row.extend(_update(op, f"tot{o}", f"acc{ref[1]}", p.steps[ref[1]][3]))
    body.extend("    " + ln for ln in row)
    for o, (ref, where, dt) in enumerate(p.outputs):
        if where == "all":
            step = p.steps[ref[1]]
            val = f"tot{o} / (C * (R - 1) + n_last)" if step[1] == "mean" else f"tot{o}"
            body.append(f"out{o}[0] = {_cast(dt, val)}")
    text = "\n".join("    " + ln for ln in body)
    decorator = "@njit(**_LOOP)" if cpu else "@cuda.jit(cache=True)"
    return f"{decorator}\ndef {name}({_signature(p)}):\n{text}\n"


def _level(ref, lv):
    if ref[0] != "v":
        return 0
    return lv[ref[1]][1]


def describe(program):
    """A readable summary of a program: one line per step."""
    p = program
    lines = ["operands: " + ", ".join(f"a{i}:{d}[{k}]" for i, (k, d) in enumerate(p.arrays))
             + "".join(f", s{i}:{d}" for i, d in enumerate(p.scalars))]

    def r(ref):
        return f"{'v' if ref[0] == 'v' else ref[0]}{ref[1]}"
    for i, s in enumerate(p.steps):
        if s[0] == "call":
            lines.append(f"v{i} = {s[1]}({', '.join(r(x) for x in s[2])}) -> {dtype_name(s[4])}")
        else:
            lines.append(f"v{i} = {s[1]}(v{s[2][1]} over the row) -> {dtype_name(s[3])}")
    lines.append("outputs: " + ", ".join(f"{r(ref)} per {w}" for ref, w, _ in p.outputs))
    return "\n".join(lines)
