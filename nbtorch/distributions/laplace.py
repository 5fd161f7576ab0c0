"""Laplace(loc, scale): the double exponential."""
from numbers import Number

import nbtorch
from nbtorch import Size

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Laplace"]


class Laplace(Distribution):
    """Density exp(-|x - loc| / scale) / (2 scale), reparameterised by inverse CDF.

    Example:
        >>> Laplace(nbtorch.tensor([0.0]), nbtorch.tensor([1.0])).sample()
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        if isinstance(loc, Number) and isinstance(scale, Number):
            batch_shape = Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Laplace, batch_shape, _instance, ("loc", "scale"))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = nbtorch.finfo(self.loc.dtype).eps
        u = nbtorch.empty(tuple(shape), dtype=self.loc.dtype, device=self.loc.device)
        u = u.uniform_(eps - 1, 1)                            # PyTorch's draw
        return self.loc - self.scale * u.sign() * nbtorch.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -nbtorch.log(2 * self.scale) - nbtorch.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * nbtorch.expm1(
            -(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * nbtorch.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + nbtorch.log(2 * self.scale)
