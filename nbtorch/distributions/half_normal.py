"""HalfNormal(scale) and HalfCauchy(scale): |X| for a centred Normal or Cauchy X."""
import math

import nbtorch

from . import constraints
from .cauchy import Cauchy
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfNormal", "HalfCauchy"]


class _Half(TransformedDistribution):
    """|X| for X symmetric about 0: twice the density on [0, inf)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _base = None
    _cast_value = False

    def __init__(self, scale, validate_args=None):
        base_dist = self._base(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(type(self), _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return nbtorch.zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        if self._cast_value:          # HalfCauchy's value takes the scale's dtype, as PyTorch's
            value = nbtorch.as_tensor(value, dtype=self.base_dist.scale.dtype,
                                      device=self.base_dist.scale.device)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return nbtorch.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Half):
    """|X|, X ~ Normal(0, scale). Reparameterised.

    Example:
        >>> HalfNormal(nbtorch.tensor([1.0])).sample()        # e.g. tensor([0.1046])
    """

    _base = Normal

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Half):
    """|X|, X ~ Cauchy(0, scale). Reparameterised.

    Example:
        >>> HalfCauchy(nbtorch.tensor([1.0])).sample()        # e.g. tensor([2.3214])
    """

    _base = Cauchy
    _cast_value = True

    @property
    def mean(self):
        return nbtorch.full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype,
                            device=self.scale.device)

    @property
    def variance(self):
        return self.mean
