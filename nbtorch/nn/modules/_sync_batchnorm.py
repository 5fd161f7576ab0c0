"""SyncBatchNorm's distributed path: batch statistics over every rank's batch.

Used in training once a process group of more than one rank exists. The per-channel sum
and the sum of squared deviations are all-reduced (two passes: as stable as one-process
batch norm), through a Function whose backward all-reduces the gradient, so each rank's
input gradient includes what its values did to the other ranks' losses, as in PyTorch.
nbtorch.distributed is looked up in sys.modules, never imported from here: without it no
group can exist.
"""
import sys

from ...autograd.function import Function
from ...autograd.grad_mode import no_grad

__all__ = ["sync_group", "sync_batch_norm"]


def sync_group(process_group):
    """The group to synchronise over, or None (one process, or no group initialised)."""
    dist = sys.modules.get("nbtorch.distributed")
    if dist is None or not dist.is_initialized():
        return None
    group = process_group if process_group is not None else dist.group.WORLD
    return group if dist.get_world_size(group) > 1 else None


class _AllReduceSum(Function):
    """Sum over the ranks; the gradient of a sum over ranks is the sum of the gradients."""

    @staticmethod
    def forward(ctx, t, group):
        ctx.group = group
        out = t.clone()
        sys.modules["nbtorch.distributed"].all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        g = grad.clone()
        sys.modules["nbtorch.distributed"].all_reduce(g, group=ctx.group)
        return g, None


def sync_batch_norm(bn, x, group):
    """Training-mode batch norm of `x` (N, C, *) with statistics over all ranks of
    `group`; updates `bn`'s running statistics as BatchNorm does."""
    bn._check_input_dim(x)
    dist = sys.modules["nbtorch.distributed"]
    factor = 0.0 if bn.momentum is None else bn.momentum
    if bn.track_running_stats and bn.num_batches_tracked is not None:
        bn.num_batches_tracked.add_(1)
        if bn.momentum is None:
            factor = 1.0 / float(bn.num_batches_tracked.item())
    c = x.shape[1]
    dims = [0] + list(range(2, x.dim()))
    shape = [1, c] + [1] * (x.dim() - 2)
    count = x.new_tensor([float(x.numel() // c)]).double()
    dist.all_reduce(count, group=group)
    n = float(count.item())
    if n <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {list(x.shape)} over all ranks")
    mean = _AllReduceSum.apply(x.sum(dims), group) / n
    xc = x - mean.view(shape)
    var = _AllReduceSum.apply((xc * xc).sum(dims), group) / n
    y = xc * (var + bn.eps).rsqrt().view(shape)
    if bn.weight is not None:
        y = y * bn.weight.view(shape)
    if bn.bias is not None:
        y = y + bn.bias.view(shape)
    if bn.track_running_stats and bn.running_mean is not None:
        with no_grad():
            bn.running_mean.mul_(1 - factor).add_(mean.detach().to(bn.running_mean.dtype),
                                                   alpha=factor)
            unbiased = var.detach() * (n / (n - 1))
            bn.running_var.mul_(1 - factor).add_(unbiased.to(bn.running_var.dtype),
                                                  alpha=factor)
    return y
