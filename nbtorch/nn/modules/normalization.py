"""Per-sample normalisation layers: LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm and
the legacy CrossMapLRN2d."""
import numbers

from .. import functional as F, init
from ..parameter import Parameter
from .batchnorm import _new
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm", "CrossMapLRN2d"]


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims, then an elementwise affine.

    Example:
        >>> ln = nn.LayerNorm(10)
        >>> ln(torch.randn(4, 5, 10)).shape
        torch.Size([4, 5, 10])
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_new(self.normalized_shape, device, dtype))
            if bias:
                self.bias = Parameter(_new(self.normalized_shape, device, dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Split channels into ``num_groups`` groups normalised per sample; per-channel affine.

    Example:
        >>> gn = nn.GroupNorm(3, 6)
        >>> gn(torch.randn(20, 6, 10, 10)).shape
        torch.Size([20, 6, 10, 10])
    """

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(_new((num_channels,), device, dtype))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(_new((num_channels,), device, dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x**2) + eps) * weight over the trailing ``normalized_shape`` dims.

    Example:
        >>> nn.RMSNorm(8)(torch.randn(2, 8)).shape
        torch.Size([2, 8])
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_new(self.normalized_shape, device, dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return ("{normalized_shape}, eps={eps}, "
                "elementwise_affine={elementwise_affine}".format(**self.__dict__))


class LocalResponseNorm(Module):
    """Divide each channel by the energy of its ``size`` neighbouring channels (AlexNet).

    Example:
        >>> nn.LocalResponseNorm(2)(torch.randn(32, 5, 24, 24)).shape
        torch.Size([32, 5, 24, 24])
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class CrossMapLRN2d(LocalResponseNorm):
    """Lua Torch's cross-channel LRN over (N, C, H, W), computed as PyTorch's legacy module
    does (see `ops.normalization_lrn.cross_map_lrn2d`)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__(size, alpha, beta, k)

    def forward(self, input):
        from ...ops.normalization_lrn import cross_map_lrn2d
        return cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)
