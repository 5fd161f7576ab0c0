"""StudentT(df, loc, scale): heavy-tailed location-scale family."""
import math

import nbtorch
from nbtorch import Size

from . import constraints
from .distribution import Distribution
from .gamma import Chi2
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t with `df` degrees of freedom; reparameterised as
    loc + scale * X / sqrt(Z / df), X ~ N(0, 1), Z ~ Chi2(df).

    Example:
        >>> StudentT(nbtorch.tensor([2.0])).sample()          # e.g. tensor([0.1046])
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return nbtorch.where(self.df <= 1, float("nan"), self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        m = nbtorch.where(df > 2, finite, float("inf"))
        return nbtorch.where(df <= 1, float("nan"), m)

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(Size(batch_shape))
        return new

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        y = x * nbtorch.rsqrt(z / self.df)
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + nbtorch.lgamma(0.5 * self.df) - nbtorch.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * nbtorch.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        lbeta = (nbtorch.lgamma(0.5 * self.df) + math.lgamma(0.5)
                 - nbtorch.lgamma(0.5 * (self.df + 1)))
        return (self.scale.log() + 0.5 * (self.df + 1)
                * (nbtorch.digamma(0.5 * (self.df + 1)) - nbtorch.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
