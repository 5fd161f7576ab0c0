"""Parameter sets shared by the distribution tests: one entry per distribution, built
identically from NumPy arrays for nbtorch and (when importable) PyTorch."""
import numpy as np

RNG = np.random.default_rng(1234)
_A = RNG.standard_normal((3, 3))
SPD = _A @ _A.T + 3 * np.eye(3)
SPD2 = np.stack([SPD, SPD + np.diag([1.0, 2.0, 0.5])])


def _pos(*shape):
    return RNG.uniform(0.5, 2.5, shape)


# name -> (constructor args as NumPy arrays / numbers, kwargs, values to score)
CASES = {
    "Normal": ((np.array([0.0, 1.0, -2.0]), np.array([1.0, 0.5, 2.0])), {},
               np.array([[0.3, 1.1, -1.0], [2.0, -1.0, 0.0]])),
    "Bernoulli": ((), {"probs": np.array([0.2, 0.5, 0.9])}, np.array([[0.0, 1.0, 1.0]])),
    "BernoulliLogits": ((), {"logits": np.array([-1.0, 0.0, 3.0])}, np.array([[1.0, 0.0, 1.0]])),
    "Categorical": ((), {"probs": np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])},
                    np.array([[2, 0], [1, 1]])),
    "CategoricalLogits": ((), {"logits": np.array([[0.2, -1.3, 0.5], [2.0, 0.1, 0.3]])},
                          np.array([0, 2])),
    "OneHotCategorical": ((), {"probs": np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])},
                          np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])),
    "Uniform": ((np.array([0.0, -1.0]), np.array([1.0, 3.0])), {},
                np.array([[0.5, 2.0], [0.1, -0.5]])),
    "Beta": ((np.array([0.5, 2.0, 3.5]), np.array([0.7, 1.5, 4.0])), {},
             np.array([[0.3, 0.6, 0.9]])),
    "Gamma": ((np.array([0.5, 2.0, 3.5]), np.array([1.0, 0.5, 4.0])), {},
              np.array([[0.3, 1.6, 2.9]])),
    "Dirichlet": ((np.array([[0.5, 2.0, 3.5], [1.0, 1.0, 1.0]]),), {},
                  np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])),
    "Exponential": ((np.array([0.5, 2.0]),), {}, np.array([[0.3, 1.6], [0.0, 4.0]])),
    "Laplace": ((np.array([0.0, 1.0]), np.array([1.0, 0.5])), {}, np.array([[0.3, -1.6]])),
    "Cauchy": ((np.array([0.0, 1.0]), np.array([1.0, 0.5])), {}, np.array([[0.3, -1.6]])),
    "Poisson": ((np.array([0.5, 4.0, 30.0]),), {}, np.array([[0.0, 3.0, 31.0]])),
    "Binomial": ((np.array([10.0, 5.0, 20.0]),), {"probs": np.array([0.2, 0.5, 0.9])},
                 np.array([[3.0, 0.0, 18.0]])),
    "BinomialLogits": ((10,), {"logits": np.array([-1.0, 0.5])}, np.array([[3.0, 10.0]])),
    "Multinomial": ((7,), {"probs": np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])},
                    np.array([[2.0, 2.0, 3.0], [7.0, 0.0, 0.0]])),
    "Geometric": ((np.array([0.2, 0.5, 0.9]),), {}, np.array([[0.0, 3.0, 1.0]])),
    "LogNormal": ((np.array([0.0, 1.0]), np.array([1.0, 0.5])), {}, np.array([[0.3, 1.6]])),
    "StudentT": ((np.array([0.7, 2.5, 5.0]), np.array([0.0, 1.0, -1.0]),
                  np.array([1.0, 2.0, 0.5])), {}, np.array([[0.3, 1.6, -2.0]])),
    "Chi2": ((np.array([1.0, 2.5, 5.0]),), {}, np.array([[0.3, 1.6, 4.0]])),
    "MultivariateNormal": ((np.array([0.5, -1.0, 2.0]),), {"covariance_matrix": SPD},
                           np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 1.5]])),
    "MultivariateNormalPrecision": ((np.zeros((2, 3)),), {"precision_matrix": SPD2},
                                    np.array([[1.0, -2.0, 1.5]])),
    "MultivariateNormalTril": ((np.array([0.5, -1.0, 2.0]),),
                               {"scale_tril": np.linalg.cholesky(SPD)},
                               np.array([[1.0, -2.0, 1.5]])),
    "LowRankMultivariateNormal": ((np.array([[0.5, -1.0, 2.0]]), RNG.standard_normal((3, 2)),
                                   _pos(2, 3)), {}, np.array([[1.0, -2.0, 1.5]])),
    "RelaxedBernoulli": ((np.array([2.2]),), {"probs": np.array([0.1, 0.3, 0.99])},
                         np.array([[0.2, 0.5, 0.95]])),
    "RelaxedOneHotCategorical": ((np.array([0.8]),), {"probs": np.array([0.1, 0.3, 0.6])},
                                 np.array([[0.2, 0.3, 0.5]])),
    "HalfNormal": ((np.array([1.0, 2.5]),), {}, np.array([[0.3, 1.6]])),
    "HalfCauchy": ((np.array([1.0, 2.5]),), {}, np.array([[0.3, 1.6]])),
    "Gumbel": ((np.array([0.0, 1.0]), np.array([1.0, 0.5])), {}, np.array([[0.3, -1.6]])),
    "Pareto": ((np.array([1.0, 2.0]), np.array([5.0, 0.8])), {}, np.array([[1.5, 2.5]])),
    "GeneralizedPareto": ((np.array([0.0, 0.5, 0.0]), np.array([1.0, 2.0, 1.5]),
                           np.array([0.1, 0.0, -0.2])), {}, np.array([[0.5, 1.0, 2.0]])),
    "Weibull": ((np.array([1.0, 2.0]), np.array([1.5, 0.7])), {}, np.array([[0.5, 3.0]])),
    "LogisticNormal": ((np.array([0.0, 0.5]), np.array([1.0, 2.0])), {},
                       np.array([[0.2, 0.3, 0.5]])),
    "Kumaraswamy": ((np.array([0.7, 2.0]), np.array([1.5, 3.0])), {}, np.array([[0.3, 0.6]])),
    "FisherSnedecor": ((np.array([1.0, 5.0]), np.array([3.0, 6.0])), {},
                       np.array([[0.5, 2.0]])),
    "InverseGamma": ((np.array([1.5, 5.5]), np.array([1.0, 2.0])), {}, np.array([[0.5, 2.0]])),
    "NegativeBinomial": ((np.array([3.0, 0.5]),), {"probs": np.array([0.3, 0.6])},
                         np.array([[2.0, 0.0]])),
    "ContinuousBernoulli": ((), {"probs": np.array([0.2, 0.5, 0.8])},
                            np.array([[0.3, 0.6, 0.9]])),
    "ContinuousBernoulliLogits": ((), {"logits": np.array([-1.0, 0.001, 2.0])},
                                  np.array([[0.3, 0.6, 0.9]])),
    "VonMises": ((np.array([1.0, -2.0]), np.array([0.5, 5.0])), {}, np.array([[0.3, -2.5]])),
    "LKJCholesky": ((3, np.array([0.5, 2.0])), {}, np.linalg.cholesky(
        np.array([[1.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.0]]))),
    "Wishart": ((np.array([4.0, 5.5]),), {"covariance_matrix": SPD}, SPD2[:1] + np.eye(3)),
}

CLASS = {"BernoulliLogits": "Bernoulli", "CategoricalLogits": "Categorical",
         "BinomialLogits": "Binomial", "MultivariateNormalPrecision": "MultivariateNormal",
         "MultivariateNormalTril": "MultivariateNormal",
         "ContinuousBernoulliLogits": "ContinuousBernoulli"}


def build(module, name, tensor):
    """The distribution `name` of `module` (nbtorch.distributions or torch.distributions),
    its arrays turned into tensors by `tensor`."""
    args, kwargs, _ = CASES[name]
    conv = lambda v: tensor(v) if isinstance(v, np.ndarray) else v
    cls = getattr(module, CLASS.get(name, name))
    return cls(*[conv(a) for a in args], **{k: conv(v) for k, v in kwargs.items()})
