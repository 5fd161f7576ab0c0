"""Every transform (forward, inverse, log_abs_det_jacobian, sign, domains, shapes, caching,
repr), every constraint (check, repr) and what biject_to/transform_to give for each,
against PyTorch (float64)."""
import numpy as np
import pytest

import nbtorch
import nbtorch.distributions as D
from nbtorch.distributions import constraints as C

from dist_sweep_helpers import same

torch = pytest.importorskip("torch")
TD = torch.distributions
TC = TD.constraints

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3))
A = RNG.standard_normal((2, 3, 3))


def _tensors(a):
    return nbtorch.tensor(a, dtype=nbtorch.float64), torch.tensor(a, dtype=torch.float64)


def _transforms(module, lib):
    t = lambda a: lib.tensor(a, dtype=lib.float64)
    M = module.transforms
    return {
        "exp": M.ExpTransform(), "sigmoid": M.SigmoidTransform(), "tanh": M.TanhTransform(),
        "softplus": M.SoftplusTransform(), "abs": M.AbsTransform(),
        "affine": M.AffineTransform(t([1.0, -2.0, 0.5]), t([2.0, -0.5, 3.0])),
        "affine_numbers": M.AffineTransform(1.5, -2.0),
        "affine_event": M.AffineTransform(t([1.0, -2.0, 0.5]), t([2.0, -0.5, 3.0]),
                                          event_dim=1),
        "power": M.PowerTransform(t(2.5)), "power_negative": M.PowerTransform(-1.5),
        "softmax": M.SoftmaxTransform(), "stick_breaking": M.StickBreakingTransform(),
        "lower_cholesky": M.LowerCholeskyTransform(), "corr_cholesky": M.CorrCholeskyTransform(),
        "positive_definite": M.PositiveDefiniteTransform(),
        "compose": M.ComposeTransform([M.AffineTransform(0.5, 2.0), M.ExpTransform()]),
        "compose_empty": M.ComposeTransform([]),
        "compose_event": M.ComposeTransform([M.ExpTransform(), M.StickBreakingTransform()]),
        "independent": M.IndependentTransform(M.ExpTransform(), 1),
        "reshape": M.ReshapeTransform((6,), (2, 3)),
        "inv_exp": M.ExpTransform().inv, "inv_sigmoid": M.SigmoidTransform().inv,
        "cat": M.CatTransform([M.ExpTransform(), M.AffineTransform(1.0, 2.0)], dim=1,
                              lengths=[1, 2]),
        "stack": M.StackTransform([M.ExpTransform(), M.SigmoidTransform()], dim=0),
        "cdf": M.CumulativeDistributionTransform(module.Normal(t(0.5), t(2.0))),
        "identity": M.identity_transform,
    }


INPUTS = {"lower_cholesky": A, "corr_cholesky": RNG.standard_normal((2, 3)),
          "positive_definite": np.tril(A), "reshape": RNG.standard_normal((4, 6)),
          "power": np.abs(X) + 0.1, "power_negative": np.abs(X) + 0.1,
          "inv_exp": np.abs(X) + 0.1, "inv_sigmoid": 1 / (1 + np.exp(-X))}
OURS, REFS = _transforms(D, nbtorch), _transforms(TD, torch)


@pytest.mark.parametrize("key", sorted(OURS))
def test_transform(key):
    ours, ref = OURS[key], REFS[key]
    xo, xr = _tensors(INPUTS.get(key, X))
    yo, yr = same(lambda: ours(xo), lambda: ref(xr), f"{key} forward")
    same(lambda: ours.inv(yo), lambda: ref.inv(yr), f"{key} inverse", rtol=1e-8)
    same(lambda: ours.log_abs_det_jacobian(xo, yo), lambda: ref.log_abs_det_jacobian(xr, yr),
         f"{key} log_abs_det_jacobian", rtol=1e-8)
    same(lambda: ours.sign, lambda: ref.sign, f"{key} sign")
    same(lambda: (ours.bijective, ours.event_dim, repr(ours), ours.inv.inv is ours,
                  ours == OURS[key], repr(ours.with_cache(1))),
         lambda: (ref.bijective, ref.event_dim, repr(ref), ref.inv.inv is ref,
                  ref == REFS[key], repr(ref.with_cache(1))), key)
    for side in ("domain", "codomain"):
        same(lambda: (repr(getattr(ours, side)), getattr(ours, side).event_dim),
             lambda: (repr(getattr(ref, side)), getattr(ref, side).event_dim), f"{key} {side}")
    for fn in ("forward_shape", "inverse_shape"):
        same(lambda: tuple(getattr(ours, fn)((4, 2, 3))),
             lambda: tuple(getattr(ref, fn)((4, 2, 3))), f"{key} {fn}")


CHECK_VALUES = (X, np.abs(X), np.eye(3), np.array([[0.2, 0.8]]), np.array([1.0, 2.0, 0.0]),
                np.array([np.nan, np.inf, -1.0]), np.tril(np.abs(A)) + np.eye(3))
PLAIN = sorted(n for n in TC.__all__ if isinstance(getattr(TC, n), TC.Constraint))
PARAMETRIC = {"interval": (0.5, 2.0), "half_open_interval": (0.5, 2.0),
              "greater_than": (1.0,), "greater_than_eq": (1.0,), "less_than": (1.0,),
              "integer_interval": (0, 3), "multinomial": (4,)}


def _pairs():
    for name in PLAIN:
        yield name, getattr(C, name), getattr(TC, name)
    for name, args in PARAMETRIC.items():
        yield f"{name}{args}", getattr(C, name)(*args), getattr(TC, name)(*args)
    yield ("cat", C.cat([C.positive, C.real], 1, [1, 2]),
           TC.cat([TC.positive, TC.real], 1, [1, 2]))
    yield "stack", C.stack([C.positive, C.real], 0), TC.stack([TC.positive, TC.real], 0)
    yield "independent", C.independent(C.positive, 1), TC.independent(TC.positive, 1)


@pytest.mark.parametrize("name,ours,ref", list(_pairs()), ids=[p[0] for p in _pairs()])
def test_constraint_and_its_transforms(name, ours, ref):
    same(lambda: (repr(ours), ours.event_dim, ours.is_discrete),
         lambda: (repr(ref), ref.event_dim, ref.is_discrete), name)
    for value in CHECK_VALUES:
        vo, vr = _tensors(value)
        same(lambda: ours.check(vo), lambda: ref.check(vr), f"{name}.check{value.shape}")
    for registry in ("biject_to", "transform_to"):
        to, tr = same(lambda: getattr(D, registry)(ours), lambda: getattr(TD, registry)(ref),
                      f"{registry}({name})")
        if tr is None:
            continue
        assert repr(to) == repr(tr), (registry, name)
        xo, xr = _tensors(INPUTS.get("corr_cholesky") if name == "corr_cholesky" else X)
        if tr.domain.event_dim <= 1:
            same(lambda: to(xo), lambda: tr(xr), f"{registry}({name}) value")
            same(lambda: to.log_abs_det_jacobian(xo, to(xo)),
                 lambda: tr.log_abs_det_jacobian(xr, tr(xr)), f"{registry}({name}) ladj")
