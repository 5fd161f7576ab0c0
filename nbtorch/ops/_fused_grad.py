"""A fused op's first-order backward as one differentiable op.

A fused op (layer norm, attention, dropout fused with its neighbour) computes its
gradients with one kernel. With ``create_graph=True`` its backward must be differentiable
again, and it used to switch to ordinary ops for that; a graph capture
(``nbtorch.compile``) records every backward with ``create_graph=True``, so compiled
backward graphs ran those slower op formulas (a Transformer block's compiled step 16 ms
where eager took 11). `fused_grad` instead runs the kernel inside one Function, whose own
backward (second order) differentiates the op formula: first-order values come from the
kernel in every mode, and a capture records the kernel as one node, as LSTMLayerGrad does.

    grads = fused_grad(kernel, formula, inputs, extras)

`kernel(*inputs, *extras)` returns the gradient tensors (a tuple); `formula(*inputs)`
computes the same tensors with ordinary ops. `inputs` are what the gradients are
differentiable in (the op's inputs and the output gradient); `extras` are tensors the
kernel reads that are functions of the inputs (saved statistics, dropout draws), given
no gradient. Both callables must depend on nothing but their arguments and constants
(bound with functools.partial): a captured graph replays them on other tensors.
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
        from ..autograd.engine import grad
        inputs = ctx.saved_tensors
        with grad_mode.enable_grad():
            outs = ctx.formula(*inputs)
            pairs = [(o, g) for o, g in zip(outs, grads)
                     if g is not None and o is not None and o.requires_grad]
            want = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
            got = iter(grad([o for o, _ in pairs], want, [g for _, g in pairs],
                            retain_graph=True, create_graph=True, allow_unused=True)
                       if pairs and want else [None] * len(want))
        result = tuple(next(got) if isinstance(t, Tensor) and t.requires_grad else None
                       for t in inputs)
        return (None, None, None) + result + (None,) * ctx.n_extras


def fused_grad(kernel, formula, inputs, extras=()):
    """`kernel(*inputs, *extras)` as one op whose backward differentiates
    `formula(*inputs)` (see the module docstring); a tuple of tensors."""
    return FusedGrad.apply(kernel, formula, len(inputs), *inputs, *extras)
