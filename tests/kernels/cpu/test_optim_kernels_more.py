"""The fused kernels of Adadelta, Adamax, NAdam, RAdam, ASGD and Rprop against
PyTorch's updates written out in NumPy (tests/optim/numpy_reference.py).

Several steps per option set, float32 and float64, serial and parallel loops.
"""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

K = pytest.importorskip("nbtorch.kernels.cpu.optim")
KA = pytest.importorskip("nbtorch.kernels.cpu.optim_adam")
KD = pytest.importorskip("nbtorch.kernels.cpu.optim_adaptive")

_spec = importlib.util.spec_from_file_location(
    "numpy_reference", Path(__file__).parents[2] / "optim" / "numpy_reference.py")
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}
N = 37
STEPS = 8


@pytest.fixture(params=[(np.float32, "serial"), (np.float64, "serial"),
                        (np.float64, "parallel")], ids=["f32", "f64", "f64-parallel"])
def dtype(request, monkeypatch):
    """The dtype to test; the parallel loops run in float64 only (compile time)."""
    dtype, loop = request.param
    if loop == "parallel":
        monkeypatch.setattr(K, "PARALLEL_MIN_SIZE", 1)
    return dtype


def _problem(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(N), [rng.standard_normal(N) for _ in range(STEPS)]


def _run(rule, opts, dtype, seed, kernel_step, buffers):
    """Step the kernel and the reference side by side; `kernel_step(p, g, bufs, state,
    step)` calls the kernel (`state` is the reference's state before this step)."""
    p0, grads = _problem(seed)
    p = p0.astype(dtype)
    bufs = {name: np.full(N, fill, dtype) for name, fill in buffers.items()}
    state, want = {}, p0
    for step, g in enumerate(grads, 1):
        before = dict(state)
        want = rule(want, g, state, **opts)
        kernel_step(p, g.astype(dtype), bufs, before, step)
        np.testing.assert_allclose(p, want, **TOL[dtype])
        for name, b in bufs.items():
            np.testing.assert_allclose(b, state[name], **TOL[dtype], err_msg=name)


@pytest.mark.parametrize("opts", [dict(), dict(rho=0.5, weight_decay=0.1, eps=1e-3),
                                  dict(lr=0.5, maximize=True)])
def test_adadelta_step(opts, dtype):
    o = dict(dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False), **opts)
    _run(ref.adadelta, opts, dtype, 1, lambda p, g, b, s, t: KD.adadelta_step(
        p, g, b["square_avg"], b["acc_delta"], o["lr"], o["rho"], o["eps"],
        o["weight_decay"], o["maximize"]), dict(square_avg=0.0, acc_delta=0.0))


@pytest.mark.parametrize("opts", [dict(), dict(betas=(0.8, 0.9), weight_decay=0.1),
                                  dict(lr=0.01, maximize=True, eps=1e-3)])
def test_adamax_step(opts, dtype):
    o = dict(dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, maximize=False),
             **opts)
    _run(ref.adamax, opts, dtype, 2, lambda p, g, b, s, t: KA.adamax_step(
        p, g, b["exp_avg"], b["exp_inf"], o["lr"], *o["betas"], o["eps"], o["weight_decay"],
        t, o["maximize"]), dict(exp_avg=0.0, exp_inf=0.0))


def _nadam_kernel(o):
    beta1, beta2 = o["betas"]

    def step(p, g, b, state, t):
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * o["momentum_decay"]))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * o["momentum_decay"]))
        mu_product = ref._f32(np.float32(state.get("mu_product", 1.0)) * np.float32(mu))
        KA.nadam_step(p, g, b["exp_avg"], b["exp_avg_sq"], o["lr"], beta1, beta2, o["eps"],
                      o["weight_decay"], mu, mu_next, mu_product, t,
                      o["decoupled_weight_decay"], o["maximize"])
    return step


@pytest.mark.parametrize("opts", [
    dict(), dict(weight_decay=0.1, momentum_decay=0.01),
    dict(weight_decay=0.1, decoupled_weight_decay=True, maximize=True, betas=(0.8, 0.9))])
def test_nadam_step(opts, dtype):
    o = dict(dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                  momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False), **opts)
    _run(ref.nadam, opts, dtype, 3, _nadam_kernel(o), dict(exp_avg=0.0, exp_avg_sq=0.0))


@pytest.mark.parametrize("opts", [
    dict(), dict(betas=(0.9, 0.8), weight_decay=0.1),      # rectified from step 7 on
    dict(betas=(0.5, 0.5), weight_decay=0.1, decoupled_weight_decay=True, maximize=True)])
def test_radam_step(opts, dtype):
    o = dict(dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                  decoupled_weight_decay=False, maximize=False), **opts)
    _run(ref.radam, opts, dtype, 4, lambda p, g, b, s, t: KA.radam_step(
        p, g, b["exp_avg"], b["exp_avg_sq"], o["lr"], *o["betas"], o["eps"],
        o["weight_decay"], t, o["decoupled_weight_decay"], o["maximize"]),
        dict(exp_avg=0.0, exp_avg_sq=0.0))


def test_radam_rectification_switches_on():
    assert not KA.radam_scalars(1e-3, 0.9, 0.8, 0.0, 6.0, False)[4]
    assert KA.radam_scalars(1e-3, 0.9, 0.8, 0.0, 7.0, False)[4]


@pytest.mark.parametrize("opts", [dict(), dict(lambd=0.1, alpha=0.5, t0=3, weight_decay=0.1),
                                  dict(lr=0.1, t0=0, maximize=True)])
def test_asgd_step(opts, dtype):
    o = dict(dict(lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, maximize=False),
             **opts)
    _run(ref.asgd, opts, dtype, 5, lambda p, g, b, s, t: K.asgd_step(
        p, g, b["ax"], s.get("eta", ref._f32(o["lr"])), o["lambd"], s.get("mu", 1.0),
        o["weight_decay"], o["maximize"]), dict(ax=0.0))


@pytest.mark.parametrize("opts", [dict(), dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(0.05, 0.2)),
                                  dict(maximize=True)])
def test_rprop_step(opts, dtype):
    o = dict(dict(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False), **opts)
    _run(ref.rprop, opts, dtype, 6, lambda p, g, b, s, t: K.rprop_step(
        p, g, b["prev"], b["step_size"], *o["etas"], *o["step_sizes"], o["maximize"]),
        dict(prev=0.0, step_size=o["lr"]))


def test_rprop_sign_flip_and_nan_gradient():
    p, prev, size = np.zeros(3), np.array([1.0, 1.0, 1.0]), np.full(3, 0.1)
    K.rprop_step(p, np.array([2.0, -3.0, np.nan]), prev, size, 0.5, 1.2, 1e-6, 50, False)
    np.testing.assert_allclose(size, [0.12, 0.05, 0.1])     # grew, shrank, kept (NaN sign: 0)
    np.testing.assert_allclose(p[:2], [-0.12, 0.0])         # a flipped sign does not move
    assert p[2] == 0.0 and prev[1] == 0.0 and np.isnan(prev[2])


def test_adamax_infinity_norm_propagates_nan():
    p, m, u = np.ones(2), np.zeros(2), np.array([np.nan, 1.0])
    KA.adamax_step(p, np.array([1.0, np.nan]), m, u, 0.1, 0.9, 0.999, 1e-8, 0.0, 1, False)
    assert np.isnan(u).all() and np.isnan(p).all()


def test_empty_parameters_are_no_ops():
    e = np.empty(0)
    KD.adadelta_step(e, e, e, e, 1.0, 0.9, 1e-6, 0.0, False)
    KA.nadam_step(e, e, e, e, 1e-3, 0.9, 0.999, 1e-8, 0.0, 0.5, 0.5, 0.5, 1, False, False)
    K.rprop_step(e, e, e, e, 0.5, 1.2, 1e-6, 50, False)
