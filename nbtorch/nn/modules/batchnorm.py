"""Per-channel normalisation layers with running statistics: BatchNorm*d, InstanceNorm*d,
SyncBatchNorm."""
import warnings

from ... import _dtype
from ..._capture import refuse_capture
from .. import functional as F, init
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "SyncBatchNorm"]


def _new(shape, device, dtype, fill=None):
    """A fresh tensor for a parameter or buffer (filled by reset_* or ``fill``)."""
    from ... import empty
    t = empty(*shape, device=device,
              dtype=dtype if dtype is not None else _dtype.get_default_dtype())
    if fill is not None:
        t.fill_(fill)
    return t


class _NormBase(Module):
    """Parameters and running statistics shared by the batch-norm layers."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(_new((num_features,), device, dtype))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(_new((num_features,), device, dtype))
        else:
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _new((num_features,), device, dtype, 0.0))
            self.register_buffer("running_var", _new((num_features,), device, dtype, 1.0))
            self.register_buffer("num_batches_tracked",
                                 _new((), device, _dtype.int64, 0))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        key = prefix + "num_batches_tracked"
        if self.track_running_stats and key not in state_dict:
            # checkpoints from before num_batches_tracked existed: start the count at 0
            state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None \
                else _new((), None, _dtype.int64, 0)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    """Normalise each channel with the batch's statistics (training) or the running ones."""

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:       # cumulative moving average
                # a Python number from a buffer: a captured graph would keep the first one
                refuse_capture("BatchNorm with momentum=None", "reads its batch count on "
                               "the host")
                factor = 1.0 / float(self.num_batches_tracked.item())
        batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight, self.bias,
                            batch_stats, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) inputs.

    Example:
        >>> bn = nn.BatchNorm1d(100)
        >>> bn(torch.randn(20, 100)).shape
        torch.Size([20, 100])
    """

    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) inputs.

    Example:
        >>> bn = nn.BatchNorm2d(16)
        >>> bn(torch.randn(4, 16, 8, 8)).shape
        torch.Size([4, 16, 8, 8])
    """

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W) inputs."""

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _InstanceNorm(_NormBase):
    """Normalise each channel of each sample over its spatial dims (no affine by default)."""

    _spatial = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)

    def _check_input_dim(self, input):
        batched = self._spatial + 2
        if input.dim() not in (batched - 1, batched):
            raise ValueError(f"expected {batched - 1}D or {batched}D input "
                             f"(got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        unbatched = input.dim() == self._spatial + 1
        x = input.unsqueeze(0) if unbatched else input
        if x._static_shape[1] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim=1 to match num_features "
                                 f"({self.num_features}), but got: {x.shape[1]}.")
            warnings.warn("input's size at dim=1 does not match num_features. You can silence "
                          "this warning by not passing in num_features, which is not used "
                          "because affine=False", stacklevel=2)
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              0.0 if self.momentum is None else self.momentum, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over (N, C, L) or unbatched (C, L) inputs."""

    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over (N, C, H, W) or unbatched (C, H, W) inputs.

    Example:
        >>> nn.InstanceNorm2d(3)(torch.randn(2, 3, 8, 8)).shape
        torch.Size([2, 3, 8, 8])
    """

    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over (N, C, D, H, W) or unbatched (C, D, H, W) inputs."""

    _spatial = 3


class SyncBatchNorm(_BatchNorm):
    """Batch norm over (N, C, *) whose statistics would be synchronised across processes.

    In training, once nbtorch.distributed has a group of several ranks (`process_group`,
    default the world), the mean and variance are over every rank's batch
    (`_sync_batchnorm.py`); in one process it is exactly BatchNorm.

    Example:
        >>> nn.SyncBatchNorm(4)(torch.randn(2, 4, 3, 3)).shape
        torch.Size([2, 4, 3, 3])
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        if input.dim() >= 2 and input._static_shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        from ._sync_batchnorm import sync_batch_norm, sync_group
        group = sync_group(self.process_group) if self.training else None
        if group is not None:           # a process group of several ranks exists
            return sync_batch_norm(self, input, group)
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm*d replaced by a SyncBatchNorm holding the same
        parameters and running statistics (recursively; training mode kept)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group,
                      bias=module.bias is not None)
            if module.affine:
                from ... import no_grad
                with no_grad():
                    out.weight = module.weight
                    if module.bias is not None:
                        out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
