"""nbtorch.export.export: trace a model once, check what may vary, lift its state.

The trace is jit.trace's concrete tracer: Python control flow follows the example and
sizes stay graph values (``x.view(x.size(0), -1)`` follows the batch). What PyTorch's
export proves with symbolic shapes is checked here by tracing again: every dynamic dim
(a `Dim`, ``Dim.DYNAMIC`` or ``Dim.AUTO``) is retraced at other sizes, and the program
must come out the same - the same generated code, and the same Python values read from
sizes at the same lines. A size the code turns into a Python number, a branch taken on
it, or a failure at another size make the dim static (AUTO) or an error naming the line
(Dim, DYNAMIC). Reading a tensor's data as a Python value (``bool(t)``, ``t.item()``) is
an error: the exported graph cannot carry it. The traces run the model for real; buffers,
parameters, the inputs and the random streams are put back afterwards.
"""
import inspect
import warnings

from .._generator import get_rng_state, set_rng_state
from .._tensor import Tensor
from ..autograd import grad_mode
from ..jit._concrete import ConcreteTracer, TracerWarning, record_conversions
from ..jit._trace import _build, _called_whole, _check_outputs, _layer_call
from .dynamic_shapes import UserError, resolve
from .exported_program import ExportedProgram, InputMeta

__all__ = ["export"]

_PROBES = 2         # other sizes each dynamic dim is traced at


class _Tracer(ConcreteTracer):
    """The concrete tracer, with forward's non-tensor arguments passed as constants (they
    are specialised, as PyTorch's export does: ``None`` must stay ``None`` for the code's
    ``is None`` tests) rather than graph inputs."""

    def __init__(self, fixed):
        super().__init__()
        self.fixed = fixed

    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        call, args, kwargs = super().create_args_for_root(root_fn, is_module, concrete_args)
        fixed = self.fixed
        return (lambda *a, **k: call(*a, **k, **fixed)), args, kwargs


def _has_tensor(v):
    if isinstance(v, Tensor):
        return True
    if isinstance(v, (tuple, list)):
        return any(_has_tensor(e) for e in v)
    if isinstance(v, dict):
        return any(_has_tensor(e) for e in v.values())
    return False


def _bind(mod, args, kwargs):
    """forward's arguments as {name: value} in signature order (*args expanded as name_i)."""
    sig = inspect.signature(mod.forward)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise UserError(f"nbtorch.export: {type(mod).__name__}.forward{sig} cannot take the "
                        f"example inputs: {e}") from None
    inputs = {}
    for name, value in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            raise UserError(f"nbtorch.export: forward(*{name}) is not supported; give "
                            "forward named tensor arguments")
        if kind is inspect.Parameter.VAR_KEYWORD:
            inputs.update(value)
        else:
            inputs[name] = value
    return inputs


def _trace(mod, inputs):
    """(traced module, conversion events) of one trace on `inputs` ({name: value})."""
    tensors = {k: v for k, v in inputs.items() if _has_tensor(v)}
    fixed = {k: v for k, v in inputs.items() if k not in tensors}
    target = _layer_call(mod) if _called_whole(mod) else mod
    tracer = _Tracer(fixed)
    with record_conversions() as events, warnings.catch_warnings():
        warnings.simplefilter("ignore", TracerWarning)
        graph = tracer.trace(target, (), tensors)
    graph.eliminate_dead_code()
    _check_outputs(graph, strict=False)
    return _build(mod, target, type(mod).__name__, tracer, graph), events


def _refuse_data_dependent(events):
    for what, data, _, where, _ in events:
        if data:
            raise UserError(
                f"nbtorch.export: {where}: the code turns a tensor into a {what} (its value "
                "depends on the data, and an exported graph cannot branch on data or carry it "
                "as a Python number). Write it with tensor ops (torch.where, masks) or move "
                "it out of forward")


def _resize(value, keys, dim, size, n):
    """`value` with the tensor at `keys` resized along `dim` to `n` (its example rows
    repeated cyclically: indices and masks stay valid)."""
    if not keys:
        from .. import arange
        idx = arange(n, device=value.device) % size
        with grad_mode.no_grad():
            out = value.index_select(dim, idx)
        if value.requires_grad:
            out.requires_grad_(True)
        return out
    k, rest = keys[0], keys[1:]
    if isinstance(value, dict):
        return {**value, k: _resize(value[k], rest, dim, size, n)}
    items = list(value)
    items[k] = _resize(items[k], rest, dim, size, n)
    return type(value)(items)


def _probe_sizes(size, lo, hi):
    """Up to `_PROBES` other sizes in [max(lo, 2), hi]: a neighbour and a distant one
    (a branch on a threshold is seen when one of them crosses it)."""
    lo = max(lo, 2)
    near = [n for n in (size + 1, size - 1) if lo <= n <= hi]
    far = [n for n in (min(hi, 2 * size + 3), lo) if n != size and n not in near[:1]
           and lo <= n <= hi]
    return (near[:1] + far)[:_PROBES]


def _difference(traced, events, other, other_events, e, n):
    """Why two traces (the example's, and one with a dim at size n instead of e) are not
    the same program, or None."""
    a, b = traced.code.splitlines(), other.code.splitlines()
    for la, lb in zip(a, b):
        if la != lb:
            return (f"the traced code changes with it ({la.strip()!r} at {e} becomes "
                    f"{lb.strip()!r} at {n}: a size read as a Python number?)")
    if len(a) != len(b):
        return "the traced code changes with it (different ops at another size)"
    for ev, ov in zip(events, other_events):
        if ev != ov:
            return (f"{ev[3]}: the code reads a {ev[0]} computed from it ({ev[2]!r} "
                    f"from {ev[4]} at {e}; {ov[2]!r} from {ov[4]} at {n}): a branch or a "
                    "constant that depends on it")
    if len(events) != len(other_events):
        return "the code takes a different path at another size"
    return None


def _check_dynamic(mod, inputs, specs, traced, events):
    """The specs that may vary: each group (inputs sharing a Dim) traced at other sizes."""
    groups = {}
    for s in specs:
        groups.setdefault(s.name, []).append(s)
    kept = []
    for name, group in groups.items():
        first = group[0]
        problem = None
        for n in _probe_sizes(first.size, first.min, first.max):
            probe = dict(inputs)
            for s in group:
                key, *rest = s.keys
                probe[key] = _resize(probe[key], rest, s.dim, s.size, n)
            try:
                other, other_events = _trace(mod, probe)
            except Exception as ex:                 # noqa: BLE001 - reported in the error
                problem = f"the code fails at size {n}: {type(ex).__name__}: {ex}"
                break
            problem = _difference(traced, events, other, other_events, first.size, n)
            if problem:
                break
        if problem is None:
            kept.extend(group)
        elif any(s.strict for s in group):
            raise UserError(
                f"Constraints violated ({name})! {first.where()} (= {first.size} in the "
                f"example) was marked dynamic, but {problem}. Mark it static (None or "
                "Dim.STATIC), use Dim.AUTO to let export decide, or change the code")
    return kept


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict=False,
           preserve_module_call_signature=()):
    """Trace `mod` on example `args` (a tuple) and `kwargs` into an `ExportedProgram`.

    `dynamic_shapes` names the input dims that may vary (see `Dim`); every other dim,
    and every non-tensor input, is fixed at the example's value and checked when the
    program's `module()` is called. `strict` is accepted (nbtorch always traces the ops
    that run). Data-dependent Python control flow is an error naming the line.

    Example:
        >>> batch = nbtorch.export.Dim("batch", min=2, max=1024)
        >>> ep = nbtorch.export.export(model, (x,), dynamic_shapes={"x": {0: batch}})
        >>> ep.module()(nbtorch.randn(16, 784))
    """
    from ..nn import Module
    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got "
                         f"{type(mod)}.")
    if not isinstance(args, tuple):
        raise UserError(f"Expecting `args` to be a tuple of example positional inputs, got "
                        f"{type(args)}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise UserError(f"Expecting `kwargs` to be a dict of example keyword inputs, got "
                        f"{type(kwargs)}")
    if preserve_module_call_signature:
        raise NotImplementedError("nbtorch.export: preserve_module_call_signature is not "
                                  "supported (the exported graph is flat)")
    inputs = _bind(mod, args, dict(kwargs or {}))
    specs = resolve(dynamic_shapes, inputs)
    # the traces run the model: what they update in place (BatchNorm's statistics, the
    # inputs) and the random numbers they draw are put back, so export changes nothing
    state = [t for t in (*mod.parameters(), *mod.buffers()) if t is not None]
    state += [t for t in _leaves(inputs) if isinstance(t, Tensor)]
    saved = [(t, t.detach().clone()) for t in state]
    rng = get_rng_state()
    try:
        traced, events = _trace(mod, inputs)
        _refuse_data_dependent(events)
        dynamic = _check_dynamic(mod, inputs, specs, traced, events)
    finally:
        for t, v in saved:
            t._array[...] = v._array
        set_rng_state(rng)
    meta = InputMeta.of(inputs, dynamic)
    return ExportedProgram.from_traced(mod, traced, meta, (args, dict(kwargs or {})))


def _leaves(v):
    if isinstance(v, dict):
        for e in v.values():
            yield from _leaves(e)
    elif isinstance(v, (tuple, list)):
        for e in v:
            yield from _leaves(e)
    else:
        yield v
