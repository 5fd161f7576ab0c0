"""Cauchy(loc, scale): the ratio of two independent normals (no mean, no variance)."""
import math
from numbers import Number

import nbtorch
from nbtorch import Size

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """Density 1 / (pi scale (1 + ((x - loc) / scale)**2)), reparameterised by inverse CDF.

    Example:
        >>> Cauchy(nbtorch.tensor([0.0]), nbtorch.tensor([1.0])).sample()
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        if isinstance(loc, Number) and isinstance(scale, Number):
            batch_shape = Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return nbtorch.full(self._extended_shape(), float("nan"), dtype=self.loc.dtype,
                            device=self.loc.device)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return nbtorch.full(self._extended_shape(), float("inf"), dtype=self.loc.dtype,
                            device=self.loc.device)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = nbtorch.empty(tuple(shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps.cauchy_() * self.scale           # PyTorch's draw (cauchy_)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (-math.log(math.pi) - self.scale.log()
                - (((value - self.loc) / self.scale) ** 2).log1p())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return nbtorch.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return nbtorch.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
