"""``torch.export.Dim`` and the ``dynamic_shapes=`` argument: which input dims may vary.

A spec mirrors the inputs: a dict by forward's argument names or a tuple by position;
per tensor a dict ``{dim: Dim}`` or a sequence with one entry per dim (a `Dim`, a hint
`Dim.AUTO` / `Dim.DYNAMIC` / `Dim.STATIC`, or None: static); containers of tensors nest.
`resolve` turns it into one `DimSpec` per (input path, dim) that varies. Derived dims
(``2 * Dim("n")``) are not supported: a clear error says so.
"""
import math

__all__ = ["Dim", "DimHint", "dims", "DimSpec", "resolve", "UserError"]


class UserError(RuntimeError):
    """An export the inputs or the code do not allow (torch._dynamo.exc.UserError's role)."""


class DimHint:
    """``Dim.AUTO`` (dynamic unless the code specialises it), ``Dim.DYNAMIC`` (dynamic; an
    error if the code specialises it), ``Dim.STATIC`` (fixed at the example's size)."""

    def __init__(self, kind):
        self.kind = kind

    def __repr__(self):
        return f"DimHint({self.kind})"


class Dim:
    """A named dynamic dim with an inclusive range [min, max]; the same Dim on two inputs
    says their sizes are equal. ``Dim("batch", min=2, max=1024)``."""

    AUTO = DimHint("AUTO")
    DYNAMIC = DimHint("DYNAMIC")
    STATIC = DimHint("STATIC")

    def __init__(self, name, *, min=None, max=None):
        if not isinstance(name, str) or not name.isidentifier():
            raise UserError(f"Dim name must be a valid identifier, got {name!r}")
        lo = 0 if min is None else int(min)
        hi = math.inf if max is None else int(max)
        if lo < 0 or hi < lo:
            raise UserError(f"Bounds of Dim {name!r} must be 0 <= min <= max, got "
                            f"min={min}, max={max}")
        self.__name__, self.min, self.max = name, lo, hi

    def __repr__(self):
        bounds = "".join([f", min={self.min}" if self.min else "",
                          f", max={self.max}" if self.max != math.inf else ""])
        return f"Dim({self.__name__!r}{bounds})"

    def _derived(self, *_):
        raise UserError(f"nbtorch.export does not support derived dims (arithmetic on "
                        f"Dim {self.__name__!r}); give each varying dim a Dim of its own")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __floordiv__ = _derived


def dims(*names, min=None, max=None):
    """One `Dim` per name, all with the same bounds: ``batch, seq = dims("batch", "seq")``."""
    return tuple(Dim(n, min=min, max=max) for n in names)


class DimSpec:
    """One varying dim of one input: `path` (e.g. ``x`` or ``xs[1]``; `keys` the same as
    (name, index...)), `dim`, its example
    `size`, its group `name` (inputs sharing a Dim share the name), bounds, and whether a
    specialising program makes it an error (Dim, DYNAMIC) or static (AUTO)."""

    def __init__(self, path, keys, dim, size, name, lo, hi, strict):
        self.path, self.keys, self.dim, self.size, self.name = path, keys, dim, size, name
        self.min, self.max, self.strict = lo, hi, strict

    def where(self):
        return f"{self.path}.size()[{self.dim}]"


def _per_dim(spec, ndim, path):
    """{dim: Dim or DimHint} of one tensor's spec."""
    if spec is None:
        return {}
    if isinstance(spec, dict):
        items = spec.items()
    elif isinstance(spec, (tuple, list)):
        if len(spec) != ndim:
            raise UserError(f"dynamic_shapes for {path}: expected {ndim} entries (one per "
                            f"dim), got {len(spec)}")
        items = enumerate(spec)
    else:
        raise UserError(f"dynamic_shapes for {path} must be a dict {{dim: Dim}}, a sequence "
                        f"with one entry per dim, or None; got {type(spec).__name__}")
    out = {}
    for d, v in items:
        if not isinstance(d, int) or not -ndim <= d < ndim:
            raise UserError(f"dynamic_shapes for {path}: dim {d!r} is out of range for a "
                            f"{ndim}-d tensor")
        if v is None or isinstance(v, int):
            continue                             # static (an int: that size)
        if not isinstance(v, (Dim, DimHint)):
            raise UserError(f"dynamic_shapes for {path}, dim {d}: expected a Dim, "
                            f"Dim.AUTO/DYNAMIC/STATIC or None, got {type(v).__name__}")
        out[d % ndim] = v
    return out


def _walk(value, spec, path, keys, out, counter):
    from .._tensor import Tensor
    if isinstance(value, Tensor):
        for d, v in sorted(_per_dim(spec, value.dim(), path).items()):
            if v is Dim.STATIC:
                continue
            size = value.shape[d]
            if isinstance(v, Dim):
                name, lo, hi, strict = v.__name__, v.min, v.max, True
            else:
                counter[0] += 1
                name, lo, hi, strict = f"s{counter[0]}", 0, math.inf, v is Dim.DYNAMIC
            if not lo <= size <= hi:
                raise UserError(f"Constraints violated ({name})! The example's "
                                f"{path}.size()[{d}] = {size} is outside the range "
                                f"[{lo}, {hi}] of {name}")
            out.append(DimSpec(path, keys, d, size, name, lo, hi, strict))
        return
    if spec is None:
        return
    if isinstance(value, (tuple, list)):
        if not isinstance(spec, (tuple, list)) or len(spec) != len(value):
            raise UserError(f"dynamic_shapes for {path}: expected a sequence of "
                            f"{len(value)} specs matching the input")
        for i, (v, s) in enumerate(zip(value, spec)):
            _walk(v, s, f"{path}[{i}]", keys + (i,), out, counter)
    elif isinstance(value, dict):
        if not isinstance(spec, dict):
            raise UserError(f"dynamic_shapes for {path}: expected a dict matching the input")
        for k, v in value.items():
            _walk(v, spec.get(k), f"{path}[{k!r}]", keys + (k,), out, counter)
    else:
        raise UserError(f"dynamic_shapes for {path}: the input is a {type(value).__name__}, "
                        "not a tensor (give None)")


def resolve(dynamic_shapes, inputs):
    """The `DimSpec`s of `dynamic_shapes` over `inputs` (forward's arguments, name ->
    value, in order); checks that dims sharing a Dim have equal example sizes."""
    if dynamic_shapes is None:
        return []
    names = list(inputs)
    if isinstance(dynamic_shapes, dict):
        unknown = [k for k in dynamic_shapes if k not in inputs]
        if unknown:
            raise UserError(f"dynamic_shapes names {unknown}, which are not among the inputs "
                            f"{names}")
        per_input = dynamic_shapes
    elif isinstance(dynamic_shapes, (tuple, list)):
        if len(dynamic_shapes) != len(names):
            raise UserError(f"dynamic_shapes has {len(dynamic_shapes)} entries, expected one "
                            f"per input ({len(names)}: {names})")
        per_input = dict(zip(names, dynamic_shapes))
    else:
        raise UserError(f"dynamic_shapes must be a dict by argument name or a tuple by "
                        f"position, got {type(dynamic_shapes).__name__}")
    out, counter = [], [0]
    for name in names:
        _walk(inputs[name], per_input.get(name), name, (name,), out, counter)
    sizes = {}
    for s in out:
        first = sizes.setdefault(s.name, s)
        if first.size != s.size:
            raise UserError(f"Constraints violated ({s.name})! {first.where()} = {first.size} "
                            f"and {s.where()} = {s.size} share Dim {s.name!r} but differ")
    return out
