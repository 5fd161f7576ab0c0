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
"""
from .._tensor import Tensor
from ..autograd import Function, grad_mode

__all__ = ["fused_grad"]


class FusedGrad(Function):
    """`kernel`'s gradients as one node; its backward differentiates `formula`."""

    @staticmethod
    def forward(ctx, kernel, formula, n_inputs, *tensors):
        ctx.formula, ctx.n_extras = formula, len(tensors) - n_inputs
        ctx.save_for_backward(*tensors[:n_inputs])
        return kernel(*tensors)

    @staticmethod
    def backward(ctx, *grads):
        """Second derivatives: the formula differentiated at detached copies of the inputs
        (partial derivatives; the engine chains them through the inputs' own graphs, where
        differentiating the inputs themselves would count a path from one input through
        another twice). Not differentiable again: a capture never asks for it."""
        from ..autograd.engine import grad
        if grad_mode.is_grad_enabled():
            raise RuntimeError("a fused backward recorded by a graph capture cannot be "
                               "differentiated twice; differentiate the eager op")
        inputs = [t.detach().requires_grad_() if isinstance(t, Tensor) and t.requires_grad
                  else t for t in ctx.saved_tensors]
        with grad_mode.enable_grad():
            outs = ctx.formula(*inputs)
            pairs = [(o, g) for o, g in zip(outs, grads)
                     if g is not None and o is not None and o.requires_grad]
            want = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
            got = iter(grad([o for o, _ in pairs], want, [g for _, g in pairs],
                            allow_unused=True)
                       if pairs and want else [None] * len(want))
        result = tuple(next(got) if isinstance(t, Tensor) and t.requires_grad else None
                       for t in inputs)
        return (None, None, None) + result + (None,) * ctx.n_extras


def fused_grad(kernel, formula, inputs, extras=()):
    """The gradients of a backward that must stay differentiable (see the module
    docstring): `formula(*inputs)`, or in a graph capture `kernel(*inputs, *extras)` as
    one recorded op; a tuple of tensors."""
    if not grad_mode.STATE.first_order:
        return tuple(formula(*inputs))
    return FusedGrad.apply(kernel, formula, len(inputs), *inputs, *extras)
