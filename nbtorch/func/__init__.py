"""`torch.func` (functorch): composable function transforms on nbtorch's tape.

`grad`, `grad_and_value`, `vjp`, `jvp`, `jacrev`, `jacfwd`, `hessian` differentiate
functions of tensors (and pytrees of them: dicts, lists, tuples); `vmap` maps a function
over a batch dimension; `functional_call` runs a module with given parameters, which is
how the transforms differentiate models. See `_transforms.py` and `_vmap.py` for what
runs underneath (reverse passes; a loop over the batch).

Example:
    >>> params = dict(model.named_parameters())
    >>> def loss(p, x, y):
    ...     return nn.functional.mse_loss(functional_call(model, p, (x,)), y)
    >>> per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
"""
from ..nn.utils.stateless import functional_call
from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from ._vmap import vmap
from ._extras import functionalize, linearize, replace_all_batch_norm_modules_

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "functional_call", "stack_module_state", "linearize", "functionalize",
           "replace_all_batch_norm_modules_"]


def stack_module_state(models):
    """(params, buffers): each model's parameters and buffers stacked along a new dim 0
    (for ``vmap`` over an ensemble with `functional_call`); stacked parameters are new
    leaves that require grad when the originals do."""
    from ..ops.joining import stack
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if len({type(m) for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params, buffers = {}, {}
    for name, p in models[0].named_parameters():
        t = stack([dict(m.named_parameters())[name].detach() for m in models])
        params[name] = t.requires_grad_(p.requires_grad)
    for name, _ in models[0].named_buffers():
        buffers[name] = stack([dict(m.named_buffers())[name] for m in models])
    return params, buffers
