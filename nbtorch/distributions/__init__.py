"""`nbtorch.distributions`: probability distributions, transforms and KL divergences with
the API of ``torch.distributions``.

Distributions sample (`sample`, and `rsample` with gradients flowing to the
parameters where PyTorch's do), score (`log_prob`, `cdf`, `icdf`, `entropy`)
and describe themselves (`mean`, `mode`, `variance`, `support`, `batch_shape`,
`event_shape`); everything is written with nbtorch ops, so it is differentiable.
Random draws come from nbtorch's generator (`nbtorch.manual_seed` reproduces
them); Gamma, Poisson and Binomial samples come from Numba kernels
(`kernels/sampling.py`).

Example:
    >>> import nbtorch
    >>> from nbtorch.distributions import Normal, kl_divergence
    >>> p = Normal(nbtorch.tensor(0.0), nbtorch.tensor(1.0))
    >>> p.log_prob(nbtorch.tensor(0.5))
    tensor(-1.0439)
"""
from . import constraints, transforms
from .bernoulli import Bernoulli
from .binomial import Binomial
from .categorical import Categorical, OneHotCategorical, OneHotCategoricalStraightThrough
from .cauchy import Cauchy
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Beta, Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Chi2, Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfCauchy, HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .pareto import GeneralizedPareto, Pareto
from .poisson import Poisson
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F401,F403
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = [
    "ContinuousBernoulli", "FisherSnedecor", "GeneralizedPareto", "Gumbel", "HalfCauchy",
    "HalfNormal", "InverseGamma", "Kumaraswamy", "LogisticNormal", "NegativeBinomial",
    "Pareto", "Weibull", "VonMises", "LKJCholesky", "Wishart",
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
    "Categorical", "Cauchy", "Chi2", "ComposeTransform", "CorrCholeskyTransform",
    "CumulativeDistributionTransform", "Dirichlet", "Distribution", "ExpTransform",
    "Exponential", "ExponentialFamily", "Gamma", "Geometric", "Independent",
    "IndependentTransform", "Laplace", "LogNormal", "LowRankMultivariateNormal",
    "LowerCholeskyTransform", "MixtureSameFamily", "Multinomial", "MultivariateNormal",
    "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson",
    "PositiveDefiniteTransform", "PowerTransform", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT",
    "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "biject_to",
    "identity_transform", "kl_divergence", "register_kl", "transform_to",
]
