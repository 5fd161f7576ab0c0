"""The autograd side of a `CustomOpDef`: the bodies of its generated `autograd.Function`.

`forward` runs the op's implementation (grad mode off, tensors detached, as below
PyTorch's autograd key) and calls the user's ``setup_context`` when a node is recorded;
`backward` calls the user's backward and checks its gradients with PyTorch's messages
(count, None for non-tensor inputs, tensors only, a list per tensor-list input). Tensor
lists are flattened into separate Function arguments, so each element gets its edge.
"""
import contextlib
import sys

from ._tensor import Tensor
from .autograd.graph import Node

__all__ = ["Lists", "forward", "backward"]


class Lists:
    """Marks the trailing argument of a Function call whose tensor lists were flattened:
    `lens[i]` is the length of argument i's list, or None for an argument kept as is."""

    __slots__ = ("lens",)

    def __init__(self, lens):
        self.lens = lens

    def __repr__(self):
        return f"Lists{self.lens}"


def _unflatten(op, flat):
    if not op._has_lists:
        return list(flat)
    lens, it, values = flat[-1].lens, iter(flat[:-1]), []
    for n in lens:
        values.append(next(it) if n is None else [next(it) for _ in range(n)])
    return values


@contextlib.contextmanager
def _per_argument(ctx, op, lens):
    """`ctx.needs_input_grad` per schema argument (a list for a tensor-list argument) while
    the user's setup_context / backward run, as PyTorch shows it."""
    if not op._has_lists:
        yield
        return
    flat = ctx.needs_input_grad
    it, view = iter(flat), []
    for n in lens:
        view.append(next(it) if n is None else [next(it) for _ in range(n)])
    ctx.needs_input_grad = tuple(view)
    try:
        yield
    finally:
        ctx.needs_input_grad = flat


def forward(ctx, *flat):
    op = ctx._forward_cls._op
    values = _unflatten(op, flat)
    out = op.run(values)
    if isinstance(ctx, Node):               # a node is recorded: autograd will need ctx
        lens = flat[-1].lens if op._has_lists else None
        ctx._lib_lens = lens
        if op._setup_context_fn is not None:
            with _per_argument(ctx, op, lens):
                op._setup_context_fn(ctx, tuple(values), out)
    _recorded_as_call(op)
    return tuple(out) if isinstance(out, list) else out


def _recorded_as_call(op):
    """While a graph capture (compile's lowering) records: this call becomes one node
    calling the op, never the last elementwise kernel its implementation ran (that would
    lose a custom backward), and a mutating op's node survives dead-code elimination."""
    rec_mod = sys.modules.get("nbtorch.fx.passes.recording")
    rec = getattr(getattr(rec_mod, "_LOCAL", None), "recorder", None)
    if rec is not None:
        rec.elementwise_calls = []
        if op._fx_impure:
            from .fx.passes.lowered_ops import function_call
            function_call(op._function)._fx_impure = True


def backward(ctx, *grads):
    op = ctx._forward_cls._op
    if op._backward_fn is None:
        raise RuntimeError(
            f"Trying to backward through {op._namespace}.{op._name}."
            f"{op._overload or 'default'} but no autograd formula was registered. Please use "
            "register_autograd to add one.")
    with _per_argument(ctx, op, ctx._lib_lens):
        result = op._backward_fn(ctx, *grads)
    if not isinstance(result, tuple):
        result = (result,)
    n = len(op._kinds)
    if len(result) > n and all(g is None for g in result[n:]):
        result = result[:n]             # trailing Nones are accepted, as PyTorch does
    if len(result) != n:
        raise RuntimeError(f"function {ctx.name()} returned an incorrect number of "
                           f"gradients (expected {n}, got {len(result)})")
    flat = []
    for i, (kind, g) in enumerate(zip(op._kinds, result)):
        if kind == "L":
            size = ctx._lib_lens[i]
            if g is None:
                flat.extend([None] * size)
                continue
            if not isinstance(g, (list, tuple)) or len(g) != size:
                raise RuntimeError(
                    "Expected the return from backward to be of the same structure as the "
                    f"inputs. Got: {type(g).__name__} (return from backward at position "
                    f"{i + 1}), a list of {size} tensor(s) (inputs)")
            flat.extend(_checked(e) for e in g)
        elif kind is None and g is not None:
            raise RuntimeError(
                f"function {ctx.name()} returned a gradient different than None at position "
                f"{i + 1}, but the corresponding forward input was not a Variable")
        else:
            flat.append(_checked(g))
    if op._has_lists:
        flat.append(None)
    return tuple(flat)


def _checked(g):
    if g is not None and not isinstance(g, Tensor):
        raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
    return g
