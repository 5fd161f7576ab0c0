"""A fused op's first-order backward, for backwards that must stay differentiable.

A fused op (layer norm, attention, dropout fused with its neighbour) computes its
gradients with one kernel. With ``create_graph=True`` its backward must be differentiable
again, so it is built from ordinary ops (`formula`, written as explicit expressions of the
inputs, differentiable to any order). A graph capture (``nbtorch.compile``) also records
backwards with ``create_graph=True`` (``grad_mode.STATE.first_order`` set), and the op
formulas it recorded made compiled backward graphs slower than eager (a Transformer
block's compiled step 16 ms where eager took 11): there `fused_grad` records the kernel as
one node instead (`FusedGrad`), as LSTMLayerGrad does.

    grads = fused_grad(kernel, formula, inputs, extras)

`kernel(*inputs, *extras)` returns the gradient tensors (a tuple); `formula(*inputs)`
computes the same tensors with ordinary ops. `inputs` are what the gradients depend on
(the op's inputs and the output gradient); `extras` are tensors the kernel reads that are
functions of the inputs (saved statistics, dropout draws). Both callables must depend on
nothing but their arguments and constants (bound with functools.partial): a captured
graph replays them on other tensors.

`vjp(fn, inputs, cotangents)` is the differentiable vector-Jacobian product both
double backwards need (FusedGrad's, and the fused LSTM's recompute-by-ops): partial
derivatives, taken at detached copies of the inputs, because an output gradient usually
depends on the op's inputs (a loss like out ** 2) and differentiating the inputs
themselves counted that path twice.
"""
from .._tensor import Tensor
from ..autograd import Function, grad_mode

__all__ = ["fused_grad", "vjp"]


class FusedGrad(Function):
    """`kernel`'s gradients as one node; its backward differentiates `formula`."""

    @staticmethod
    def forward(ctx, kernel, formula, n_inputs, *tensors):
        ctx.formula, ctx.n_extras = formula, len(tensors) - n_inputs
        ctx.save_for_backward(*tensors[:n_inputs])
        return kernel(*tensors)

    @staticmethod
    def backward(ctx, *grads):
        return (None, None, None) + vjp(ctx.formula, ctx.saved_tensors, grads) \
            + (None,) * ctx.n_extras     # the formula's partial derivatives (any order)


# ---- vector-Jacobian products as ops differentiable to any order ------------------------

def _float_tensor(t):
    return isinstance(t, Tensor) and (t.dtype.is_floating_point or t.dtype.is_complex)


def _vjp_at(fn, inputs, cots, need, create_graph):
    """The vjp of `fn` at `inputs` (leaves: no path from one to another) with cotangents
    `cots`: one gradient per float tensor input (zeros where `fn` does not use it or
    `need` says it is not wanted)."""
    from ..autograd.engine import grad
    floats = [t for t in inputs if _float_tensor(t)]
    want = [t for t, w in zip(floats, need) if w]
    outs = fn(*inputs)
    pairs = [(o, c) for o, c in zip(outs, cots)
             if c is not None and o is not None and o.requires_grad]
    got = iter(grad([o for o, _ in pairs], want, [c for _, c in pairs],
                    create_graph=create_graph, allow_unused=True) if pairs and want
               else [None] * len(want))
    result = []
    for t, w in zip(floats, need):
        g = next(got) if w else None
        result.append(g if g is not None else t.detach().new_zeros(t.shape))
    return tuple(result)


class _Vjp(Function):
    """vjp(fn)(inputs, cotangents) as one op: computed at detached copies of the inputs,
    so its gradients are partial derivatives (differentiating the inputs themselves would
    count a path from one input through another twice), and differentiable again by
    recursion (its backward is this op for the vjp function itself). `need`: which float
    inputs get a gradient (the others get zeros)."""

    @staticmethod
    def forward(ctx, fn, n, need, *args):
        ctx.fn, ctx.n, ctx.need = fn, n, need
        ctx.save_for_backward(*args)
        with grad_mode.enable_grad():
            leaves = [t.detach().requires_grad_() if _float_tensor(t) else t for t in args]
            got = _vjp_at(fn, leaves[:n], leaves[n:], need, create_graph=False)
        return tuple(g.detach() for g in got)

    @staticmethod
    def backward(ctx, *ggs):
        args = ctx.saved_tensors
        n, need = ctx.n, ctx.need

        def vjp_fn(*leaves):                # the forward's map, with a graph for its vjp
            return _vjp_at(ctx.fn, leaves[:n], leaves[n:], need, create_graph=True)
        wanted = tuple(w for t, w in zip(args, ctx.needs_input_grad[3:]) if _float_tensor(t))
        got = iter(_Vjp.apply(vjp_fn, len(args), wanted, *args, *ggs))
        return (None, None, None) + tuple(next(got) if _float_tensor(t) else None
                                          for t in args)


def vjp(fn, inputs, cotangents):
    """(d fn(*inputs) / d inputs) . cotangents for the inputs that require grad (None for
    the others), as partial derivatives, differentiable to any order (see `_Vjp`)."""
    need = tuple(t.requires_grad for t in inputs if _float_tensor(t))
    got = iter(_Vjp.apply(fn, len(inputs), need, *inputs, *cotangents))
    result = []
    for t in inputs:
        g = next(got) if _float_tensor(t) else None
        result.append(g if g is not None and t.requires_grad else None)
    return tuple(result)


def fused_grad(kernel, formula, inputs, extras=()):
    """The gradients of a backward that must stay differentiable (see the module
    docstring): `formula(*inputs)`, or in a graph capture `kernel(*inputs, *extras)` as
    one recorded op; a tuple of tensors."""
    if not grad_mode.STATE.first_order:
        return tuple(formula(*inputs))
    return FusedGrad.apply(kernel, formula, len(inputs), *inputs, *extras)
