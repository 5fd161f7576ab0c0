"""Gradient clipping: `clip_grad_norm_` and `clip_grad_value_`."""
from ..._tensor import Tensor
from ...autograd import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _as_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _vector_norm(t, norm_type):
    """The `norm_type`-norm of all elements of `t` as a 0-d float tensor."""
    a = t.abs()
    if norm_type == float("inf"):
        return a.max()
    if norm_type == float("-inf"):
        return a.min()
    if norm_type == 0:
        return (a != 0).to(t.dtype).sum()
    if norm_type == 1:
        return a.sum()
    if norm_type == 2:
        return (a * a).sum().sqrt()
    return (a ** norm_type).sum() ** (1.0 / norm_type)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of `tensors` (as if they were concatenated)."""
    from ... import stack, tensor
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        norms = [_vector_norm(g.detach(), norm_type) for g in tensors]
        dev = norms[0].device
        total = _vector_norm(stack([n.to(dev) for n in norms]), norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale gradients in place so that their total norm is at most `max_norm`.

    Returns the total norm before clipping (a 0-d tensor).

    Example:
        >>> loss.backward()
        >>> nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    """
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale gradients in place by min(1, max_norm / (total_norm + 1e-6)), for a total norm
    computed beforehand (`get_total_norm`): clip_grad_norm_ in two steps."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.device, g.dtype))


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)


clip_grad_norm = clip_grad_norm_
