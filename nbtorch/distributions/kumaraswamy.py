"""Kumaraswamy(concentration1, concentration0): a Beta-like law with a closed-form CDF."""
import math

import nbtorch

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """E[X**n] = b B(1 + n/a, b)."""
    arg1 = 1 + n / a
    log_value = nbtorch.lgamma(arg1) + nbtorch.lgamma(b) - nbtorch.lgamma(arg1 + b)
    return b * nbtorch.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    """Density a b x**(a-1) (1 - x**a)**(b-1) on [0, 1] (a = concentration1, b =
    concentration0): (1 - U**(1/b))**(1/a), U uniform. Reparameterised.

    Example:
        >>> Kumaraswamy(nbtorch.tensor([1.0]), nbtorch.tensor([1.0])).sample()
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1,
                                                                 concentration0)
        base_dist = Uniform(nbtorch.full_like(self.concentration0, 0),
                            nbtorch.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(tuple(batch_shape))
        new.concentration0 = self.concentration0.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        """((a - 1) / (a b - 1))**(1/a) where a, b >= 1 (not both 1), else NaN. (PyTorch
        2.13's formula takes log1p(-b), NaN for every b > 1.)"""
        a, b = self.concentration1, self.concentration0
        mode = ((a - 1) / (a * b - 1)).pow(a.reciprocal())
        return nbtorch.where((a < 1) | (b < 1) | ((a == 1) & (b == 1)), math.nan, mode)

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        H0 = nbtorch.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * H0 - nbtorch.log(self.concentration1) - nbtorch.log(self.concentration0)
