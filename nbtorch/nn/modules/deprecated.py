"""PyTorch's deprecated module names, kept for old programs: Container (a Module built
from keyword children) and NLLLoss2d (NLLLoss); both warn as PyTorch does."""
import warnings

from .loss import NLLLoss
from .module import Module

__all__ = ["Container", "NLLLoss2d"]


class Container(Module):
    """Deprecated: a Module whose children are the keyword arguments."""

    def __init__(self, **kwargs):
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now "
                      "implemented in `nn.Module`. Subclass that instead.", FutureWarning,
                      stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


class NLLLoss2d(NLLLoss):
    """Deprecated: NLLLoss (which takes (N, C, H, W) input itself)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a "
                      "drop-in replacement and see https://pytorch.org/docs/main/nn.html"
                      "#torch.nn.NLLLoss for more details.", FutureWarning, stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)
