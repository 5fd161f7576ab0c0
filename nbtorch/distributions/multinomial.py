"""Multinomial(total_count, probs | logits): category counts of `total_count` draws."""
import nbtorch
from nbtorch import Size

from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """Counts per category (event_shape (K,)) of `total_count` categorical draws.
    `log_prob` accepts any total; `sample` and `entropy` need the one int total_count.

    Example:
        >>> Multinomial(100, nbtorch.tensor([1.0, 1.0, 1.0, 1.0])).sample()
        tensor([21., 24., 30., 25.])
    """

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = self._binomial.expand(tuple(batch_shape) + tuple(self.event_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=Size()):
        sample_shape = Size(sample_shape)
        with nbtorch.no_grad():
            samples = self._categorical.sample(Size((self.total_count,)) + sample_shape)
            # (total_count, *sample, *batch) -> (*sample, *batch, total_count), then count
            samples = samples.permute(*range(1, samples.dim()), 0)
            counts = nbtorch.zeros(tuple(self._extended_shape(sample_shape)),
                                   dtype=nbtorch.int64, device=samples.device)
            counts = counts.scatter_add(-1, samples, nbtorch.ones_like(samples))
            return counts.type_as(self.probs)

    def entropy(self):
        n = nbtorch.tensor(self.total_count, dtype=self.probs.dtype)
        term1 = n * self._categorical.entropy() - nbtorch.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = nbtorch.exp(self._binomial.log_prob(support))
        weights = nbtorch.lgamma(support + 1)
        term2 = (binomial_probs * weights).sum([0, -1])
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = nbtorch.lgamma(value.sum(-1) + 1)
        log_factorial_xs = nbtorch.lgamma(value + 1).sum(-1)
        # 0 * log(0) = 0 for categories of probability 0
        logits = nbtorch.where((value == 0) & (logits == -float("inf")), 0.0, logits)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
