"""ContinuousBernoulli(probs | logits): the normalised Bernoulli likelihood on [0, 1]
(Loaiza-Ganem and Cunningham, 2019)."""
import math
from numbers import Number

import nbtorch
from nbtorch import Size
from nbtorch.nn.functional import binary_cross_entropy_with_logits

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """Density C(p) p**x (1 - p)**(1 - x) on [0, 1]. Near p = 1/2 (inside `lims`) the
    normaliser, moments and CDF use Taylor expansions, as their closed forms cancel.
    Reparameterised through its inverse CDF.

    Example:
        >>> ContinuousBernoulli(nbtorch.tensor([0.3])).sample()    # e.g. tensor([0.2538])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            # checked before the clamp below, which would hide invalid values
            if validate_args is not None:
                if not bool(self.arg_constraints["probs"].check(self.probs).all()):
                    raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = Size() if is_scalar else self._param.size()
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(ContinuousBernoulli, batch_shape, _instance,
                                  ("probs", "logits"))
        new._lims = self._lims
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return nbtorch.where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self):
        """log C(p) = log(|log(1-p) - log p| / |1 - 2p|), log 2 + ... near p = 1/2."""
        cut = self._cut_probs()
        below = nbtorch.where(cut <= 0.5, cut, 0.0)
        above = nbtorch.where(cut >= 0.5, cut, 1.0)
        log_norm = nbtorch.log(nbtorch.abs(nbtorch.log1p(-cut) - nbtorch.log(cut))) - \
            nbtorch.where(cut <= 0.5, nbtorch.log1p(-2.0 * below), nbtorch.log(2.0 * above - 1.0))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return nbtorch.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (nbtorch.log1p(-cut) - nbtorch.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return nbtorch.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return nbtorch.sqrt(self.variance)

    @property
    def variance(self):
        cut = self._cut_probs()
        vars_ = (cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2)
                 + 1.0 / (nbtorch.log1p(-cut) - nbtorch.log(cut)).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return nbtorch.where(self._outside_unstable_region(), vars_, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=Size()):
        with nbtorch.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        u = nbtorch.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (-binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = nbtorch.where(self._outside_unstable_region(), cdfs, value)
        return nbtorch.where(value <= 0.0, 0.0, nbtorch.where(value >= 1.0, 1.0, unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        inv = ((nbtorch.log1p(-cut + value * (2.0 * cut - 1.0)) - nbtorch.log1p(-cut))
               / (nbtorch.log(cut) - nbtorch.log1p(-cut)))
        return nbtorch.where(self._outside_unstable_region(), inv, value)

    def entropy(self):
        log_probs0 = nbtorch.log1p(-self.probs)
        log_probs1 = nbtorch.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """log((e**x - 1) / x) for the natural parameter x = logit(p)."""
        out = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = nbtorch.where(out, x, self._lims[0] - 0.5)
        log_norm = nbtorch.log(nbtorch.abs(nbtorch.expm1(cut))) - nbtorch.log(nbtorch.abs(cut))
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return nbtorch.where(out, log_norm, taylor)
