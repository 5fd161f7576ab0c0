"""Behaviours of the distribution API beside the values (errors, flags, utilities,
MixtureSameFamily and Independent, cached transforms) against PyTorch's."""
import numpy as np
import pytest

import nbtorch
import nbtorch.distributions as D

from dist_sweep_helpers import same

torch = pytest.importorskip("torch")
TD = torch.distributions


def T(lib, a):
    return lib.tensor(np.asarray(a, dtype=np.float64), dtype=lib.float64)


EYE2 = np.eye(2)
CALLS = {
    "binomial enumerate, inhomogeneous": lambda m, l: m.Binomial(
        T(l, [2., 3.]), T(l, [0.5, 0.5])).enumerate_support(),
    "binomial enumerate": lambda m, l: m.Binomial(
        T(l, [3., 3.]), T(l, [0.5, 0.5])).enumerate_support(False),
    "perplexity mvn": lambda m, l: m.MultivariateNormal(T(l, [0., 1.]), T(l, EYE2)).perplexity(),
    "perplexity categorical": lambda m, l: m.Categorical(T(l, [0.2, 0.8])).perplexity(),
    "cdf categorical": lambda m, l: m.Categorical(T(l, [0.2, 0.8])).cdf(T(l, 1.0)),
    "cdf poisson": lambda m, l: m.Poisson(T(l, [2.0])).cdf(T(l, [1.0])),
    "icdf broadcast": lambda m, l: m.Normal(T(l, [0.0, 1.0]), T(l, [1.0, 2.0])).icdf(
        T(l, [[0.1], [0.9]])),
    "value not broadcastable": lambda m, l: m.Normal(T(l, [0.0, 1.0]), T(l, [1.0, 2.0])).log_prob(
        T(l, [0.1, 0.2, 0.3])),
    "value event shape": lambda m, l: m.MultivariateNormal(T(l, [0., 1.]), T(l, EYE2)).log_prob(
        T(l, [0.1, 0.2, 0.3])),
    "sample_n": lambda m, l: tuple(m.Normal(T(l, 0.), T(l, 1.)).sample_n(3).shape),
    "rsample of Bernoulli": lambda m, l: m.Bernoulli(T(l, 0.3)).rsample(),
    "rsample of Poisson": lambda m, l: m.Poisson(T(l, 0.3)).rsample(),
    "categorical 0-d probs": lambda m, l: m.Categorical(T(l, 0.3)),
    "categorical probs and logits": lambda m, l: m.Categorical(T(l, [0.3, 0.7]), T(l, [0.3, 0.7])),
    "number and tensor": lambda m, l: tuple(m.Normal(0.0, T(l, [1.0, 2.0])).batch_shape),
    "set_default_validate_args(3)": lambda m, l: m.Distribution.set_default_validate_args(3),
    "base shapes": lambda m, l: tuple(m.Distribution(batch_shape=(2,),
                                                     event_shape=(3,)).batch_shape),
    "base support": lambda m, l: m.Distribution().support,
    "base mean": lambda m, l: m.Distribution().mean,
    "base sample": lambda m, l: m.Distribution().sample(),
    "multinomial total": lambda m, l: m.Multinomial(5, T(l, [0.2, 0.8])).sample((3,)).sum(-1),
    "multinomial value off the total": lambda m, l: m.Multinomial(5, T(l, [0.2, 0.8])).log_prob(
        T(l, [1.0, 2.0])),
    "mvn mode": lambda m, l: m.MultivariateNormal(T(l, [0., 1.]), T(l, EYE2)).mode,
    "low-rank mode": lambda m, l: m.LowRankMultivariateNormal(
        T(l, [0., 1.]), T(l, [[1.], [2.]]), T(l, [1., 1.])).mode,
    "exp-family entropy": lambda m, l: super(m.Normal, m.Normal(T(l, [0.]), T(l, [2.]))).entropy(),
    "KL with no formula": lambda m, l: m.kl_divergence(m.LKJCholesky(2, T(l, 1.0)),
                                                       m.LKJCholesky(2, T(l, 1.0))),
    "Wishart df too small": lambda m, l: m.Wishart(T(l, [1.0]), covariance_matrix=T(l, np.eye(3))),
    "probs_to_logits": lambda m, l: m.utils.probs_to_logits(T(l, [0.2, 0.8])),
    "logits_to_probs binary": lambda m, l: m.utils.logits_to_probs(T(l, [0.2, -0.8]),
                                                                   is_binary=True),
    "clamp_probs": lambda m, l: m.utils.clamp_probs(T(l, [0.0, 1.0])),
    "tril_matrix_to_vec": lambda m, l: m.utils.tril_matrix_to_vec(
        T(l, np.arange(9.).reshape(3, 3)), diag=-1),
    "vec_to_tril_matrix": lambda m, l: m.utils.vec_to_tril_matrix(T(l, np.arange(6.))),
    "broadcast_all": lambda m, l: [tuple(x.shape) for x in m.utils.broadcast_all(
        1.0, T(l, [1.0, 2.0]))],
    "broadcast_all of a str": lambda m, l: m.utils.broadcast_all(1.0, "a"),
}


@pytest.mark.filterwarnings("ignore:.*does not define `arg_constraints`")  # both warn
@pytest.mark.filterwarnings("ignore:`sample_n:FutureWarning")    # both: PyTorch's warning
@pytest.mark.parametrize("name", sorted(CALLS))
def test_call_matches_pytorch(name):
    same(lambda: CALLS[name](D, nbtorch), lambda: CALLS[name](TD, torch), name)


def _composites(m, l):
    cat = m.Categorical(T(l, [0.3, 0.7]))
    locs = T(l, [[0.0, 1.0], [1.0, -1.0]])
    return {
        "mixture of normals": (m.MixtureSameFamily(
            m.Categorical(T(l, [[0.2, 0.8], [0.5, 0.5]])),
            m.Normal(T(l, [[0.0, 1.0], [-1.0, 2.0]]), T(l, [[1.0, 0.5], [2.0, 1.0]]))),
            [[0.3, -0.5], [1.0, 2.0]]),
        "mixture of mvns": (m.MixtureSameFamily(cat, m.MultivariateNormal(
            locs, T(l, np.stack([EYE2, 2 * EYE2])))), [[0.3, -0.5], [1.0, 2.0]]),
        "mixture of independents": (m.MixtureSameFamily(cat, m.Independent(
            m.Normal(locs, T(l, [[1.0, 2.0], [0.5, 1.0]])), 1)), [[0.3, -0.5]]),
        "independent 2": (m.Independent(m.Normal(T(l, np.zeros((2, 3, 4))),
                                                 T(l, np.ones((2, 3, 4)))), 2),
                          np.full((2, 3, 4), 0.3)),
        "independent bernoulli": (m.Independent(m.Bernoulli(T(l, [[0.2, 0.7], [0.5, 0.1]])), 1),
                                  [[1.0, 0.0], [0.0, 1.0]]),
        "independent categorical": (m.Independent(m.Categorical(T(l, np.full((2, 3, 4), 0.25))), 1),
                                    np.array([[0, 1, 2], [3, 3, 0]])),
    }


def test_mixture_and_independent():
    ours_all, refs = _composites(D, nbtorch), _composites(TD, torch)
    for key, (ours, value) in ours_all.items():
        ref = refs[key][0]
        same(lambda: (tuple(ours.batch_shape), tuple(ours.event_shape), repr(ours.support),
                      ours.has_rsample, ours.has_enumerate_support, repr(ours)),
             lambda: (tuple(ref.batch_shape), tuple(ref.event_shape), repr(ref.support),
                      ref.has_rsample, ref.has_enumerate_support, repr(ref)), key)
        v = np.asarray(value)
        vo, vr = ((nbtorch.tensor(v), torch.tensor(v)) if v.dtype.kind == "i"
                  else (T(nbtorch, v), T(torch, v)))
        for fn in ("log_prob", "cdf"):
            same(lambda: getattr(ours, fn)(vo), lambda: getattr(ref, fn)(vr), f"{key}.{fn}")
        for prop in ("mean", "variance", "mode", "stddev"):
            same(lambda: getattr(ours, prop), lambda: getattr(ref, prop), f"{key}.{prop}",
                 message=False)
        same(ours.entropy, ref.entropy, f"{key}.entropy", message=False)
        same(lambda: tuple(ours.sample((3,)).shape), lambda: tuple(ref.sample((3,)).shape))
        if ref.has_enumerate_support:
            same(ours.enumerate_support, ref.enumerate_support, key)
        shape = (5,) + tuple(ref.batch_shape)
        same(lambda: tuple(ours.expand(shape).batch_shape),
             lambda: tuple(ref.expand(shape).batch_shape), key)


def test_cached_transform():
    for module, lib in ((D, nbtorch), (TD, torch)):
        t = module.transforms.ExpTransform(cache_size=1)
        x = lib.tensor([0.5, 1.0])
        y = t(x)
        assert t.inv(y) is x and t(x) is y and t.inv.inv is t
        assert t.with_cache(0)._cache_size == 0
        with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
            module.transforms.ExpTransform(cache_size=2)


def test_reprs_of_every_case_and_its_expansion():
    from cases import CASES, build
    for name in sorted(CASES):
        ours = build(D, name, lambda a: T(nbtorch, a))
        ref = build(TD, name, lambda a: T(torch, a))
        assert repr(ours) == repr(ref), name
        shape = (2,) + tuple(ref.batch_shape)
        assert repr(ours.expand(shape)) == repr(ref.expand(shape)), name
