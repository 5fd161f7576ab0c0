"""LinearCrossEntropyLoss (PyTorch 2.13): a classifier head (Linear) and cross entropy in
one module, with its options dataclass (PyTorch's chunking settings; nbtorch always
computes the full logits, which gives the same values)."""
import dataclasses
import math

from .. import functional as F
from .linear import Linear
from .loss import _WeightedLoss

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """PyTorch's settings of the chunked `linear_cross_entropy` (accepted and kept)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int = None
    chunking_method: str = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross entropy of ``Linear(in_features, num_classes * prod(out_features))(input)``.

    Example:
        >>> loss = nn.LinearCrossEntropyLoss(8, 10)
        >>> loss(torch.randn(4, 8), torch.tensor([1, 2, 3, 4])).shape
        torch.Size([])
    """

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None,
                 dtype=None, reduction="mean", weight=None, ignore_index=None,
                 label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes),
                             bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input, target):
        w = self.linear.weight.reshape((self.num_classes,) + tuple(self.out_features)
                                       + (self.linear.in_features,))
        b = None if self.linear.bias is None else \
            self.linear.bias.reshape((self.num_classes,) + tuple(self.out_features))
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
