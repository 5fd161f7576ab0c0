"""`ExponentialFamily`: distributions p(x) = h(x) exp(<t(x), theta> - F(theta)).

Subclasses give their natural parameters theta and log-normaliser F; the
entropy (and the KL divergence between two members of one family, in kl.py)
then follow from F and its gradient (Bregman divergence), computed with
nbtorch's autograd.
"""
import nbtorch

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base of exponential-family distributions (Normal, Gamma, Beta, Poisson, ...)."""

    @property
    def _natural_params(self):
        """The natural parameters theta, a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """F(theta), the log-normaliser."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """E[log h(x)]."""
        raise NotImplementedError

    def entropy(self):
        """H = F(theta) - <theta, grad F(theta)> - E[log h(x)]."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        with nbtorch.enable_grad():
            lg_normal = self._log_normalizer(*nparams)
            gradients = nbtorch.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for p, g in zip(nparams, gradients):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
