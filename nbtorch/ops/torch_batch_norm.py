"""ATen's normalization primitives at torch level: ``native_batch_norm``/
``native_layer_norm``/``native_group_norm`` (output and saved statistics), the
SyncBatchNorm building blocks (``batch_norm_stats``, ``batch_norm_elemt``,
``batch_norm_gather_stats(_with_counts)``, ``batch_norm_update_stats``,
``batch_norm_backward_reduce``/``_elemt``: PyTorch runs these on CUDA only, nbtorch on
every device), and the legacy norms ``norm_except_dim``, ``frobenius_norm``,
``nuclear_norm``. Written with differentiable ops; channels are dim 1.
"""
from ..autograd import grad_mode

__all__ = ["native_batch_norm", "native_layer_norm", "native_group_norm", "batch_norm_stats",
           "batch_norm_elemt", "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts",
           "batch_norm_update_stats", "batch_norm_backward_reduce",
           "batch_norm_backward_elemt", "norm_except_dim", "frobenius_norm", "nuclear_norm"]


def _channel_dims(x):
    return [0] + list(range(2, x.dim()))


def _per_channel(t, x):
    """A (C,) tensor shaped to broadcast over x's channel dim."""
    return t.reshape((1, -1) + (1,) * (x.dim() - 2))


def _biased_stats(x):
    dims = _channel_dims(x)
    mean = x.mean(dims)
    var = ((x - _per_channel(mean, x)) ** 2).mean(dims)
    return mean, var


def _update_running(running_mean, running_var, mean, var, momentum, n):
    with grad_mode.no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
        if running_var is not None:
            unbiased = var.detach() * (n / (n - 1)) if n > 1 else var.detach()
            running_var.mul_(1 - momentum).add_(unbiased * momentum)


def batch_norm_stats(input, eps):
    """(mean, invstd) per channel: invstd = 1 / sqrt(biased var + eps)."""
    mean, var = _biased_stats(input)
    return mean, (var + eps).rsqrt()


def batch_norm_elemt(input, weight, bias, mean, invstd, eps, *, out=None):
    """(input - mean) * invstd * weight + bias, per channel."""
    y = (input - _per_channel(mean, input)) * _per_channel(invstd, input)
    if weight is not None:
        y = y * _per_channel(weight, input)
    if bias is not None:
        y = y + _per_channel(bias, input)
    return y if out is None else out.copy_(y)


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
                                        momentum, eps, counts):
    """Global (mean, invstd) from per-worker (mean, invstd) rows of `counts` elements
    each; updates the running statistics (unbiased variance) in place."""
    c = counts.to(mean.dtype).unsqueeze(1)
    n = c.sum(0)
    g_mean = (c * mean).sum(0) / n
    var_w = 1.0 / (invstd * invstd) - eps
    g_var = (c * (var_w + (mean - g_mean) ** 2)).sum(0) / n
    total = float(counts.sum())
    _update_running(running_mean, running_var, g_mean, g_var, momentum, total)
    return g_mean, (g_var + eps).rsqrt()


def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps,
                            count):
    """`batch_norm_gather_stats_with_counts` with `count` elements on every worker."""
    from .creation import full
    counts = full((mean.shape[0],), count, dtype=mean.dtype, device=mean.device)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean,
                                               running_var, momentum, eps, counts)


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """(mean, biased var) per channel; the running statistics move by `momentum`."""
    mean, var = _biased_stats(input)
    _update_running(running_mean, running_var, mean, var, momentum,
                    input.numel() // input.shape[1])
    return mean, var


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g,
                               bias_g):
    """(sum_dy, sum_dy_xmu, grad_weight, grad_bias) per channel (None where not asked)."""
    dims = _channel_dims(input)
    sum_dy = grad_out.sum(dims)
    sum_dy_xmu = (grad_out * (input - _per_channel(mean, input))).sum(dims)
    return (sum_dy if input_g else None, sum_dy_xmu if input_g else None,
            sum_dy_xmu * invstd if weight_g else None, sum_dy if bias_g else None)


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu,
                              count):
    """The input gradient from the all-reduced sums over `count.sum()` elements."""
    n = float(count.sum())
    xmu = input - _per_channel(mean, input)
    k = _per_channel(invstd * invstd * sum_dy_xmu / n, input)
    g = (grad_out - _per_channel(sum_dy / n, input) - xmu * k) * _per_channel(invstd, input)
    return g * _per_channel(weight, input) if weight is not None else g


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                      eps):
    """(output, save_mean, save_invstd); the saved statistics are empty in evaluation."""
    from ..nn.functional import batch_norm
    out = batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        from .creation import empty
        e = empty(0, dtype=input.dtype, device=input.device)
        return out, e, e.clone()
    mean, var = _biased_stats(input.detach())
    return out, mean, (var + eps).rsqrt()


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(output, mean, rstd), the statistics kept with size-1 normalized dims."""
    from ..nn.functional import layer_norm
    out = layer_norm(input, normalized_shape, weight, bias, eps)
    dims = list(range(input.dim() - len(normalized_shape), input.dim()))
    x = input.detach()
    mean = x.mean(dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dims, keepdim=True)
    return out, mean, (var + eps).rsqrt()


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(output, mean (N, group), rstd (N, group))."""
    from ..nn.functional import group_norm
    out = group_norm(input, group, weight, bias, eps)
    x = input.detach().reshape(N, group, -1)
    mean = x.mean(2)
    var = ((x - mean.unsqueeze(2)) ** 2).mean(2)
    return out, mean, (var + eps).rsqrt()


def norm_except_dim(v, pow=2, dim=0):
    """The `pow`-norm over every dim but `dim`, shaped (1, .., size(dim), .., 1); dim -1:
    the norm of everything (weight normalization's helper)."""
    from .reduction_stats import vector_norm
    if dim == -1:
        return vector_norm(v, pow)
    dims = [d for d in range(v.dim()) if d != dim]
    return vector_norm(v, pow, dims, keepdim=True)


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """sqrt(sum(input^2)) over `dim` (legacy; `linalg.vector_norm(input, 2, dim)`)."""
    from .reduction_stats import vector_norm
    r = vector_norm(input, 2, dim, keepdim)
    return r if out is None else out.copy_(r)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The sum of singular values (over the last two dims, or `dim`); legacy form of
    `linalg.matrix_norm(input, 'nuc')`."""
    from ..linalg import matrix_norm
    if isinstance(dim, bool):                     # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    r = matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)
    return r if out is None else out.copy_(r)

