"""Fused optimizer kernels against PyTorch's updates written out in NumPy.

Several steps per option set, float32 and float64, serial and parallel
loops; the reference lives in tests/optim/numpy_reference.py.
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
STEPS = 4


def _problem(dtype, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.standard_normal(N)
    grads = [rng.standard_normal(N) for _ in range(STEPS)]
    return p, grads


def _close(got, want, dtype):
    np.testing.assert_allclose(got, want, **TOL[dtype])


@pytest.fixture(params=[(np.float32, "serial"), (np.float64, "serial"),
                        (np.float64, "parallel")], ids=["f32", "f64", "f64-parallel"])
def dtype(request, monkeypatch):
    """The dtype to test; the parallel loops run in float64 only (compile time)."""
    dtype, loop = request.param
    if loop == "parallel":
        monkeypatch.setattr(K, "PARALLEL_MIN_SIZE", 1)
    return dtype


SGD_OPTIONS = [
    dict(),
    dict(momentum=0.9),
    dict(momentum=0.9, dampening=0.3, weight_decay=0.1),
    dict(momentum=0.8, nesterov=True, weight_decay=0.05),
    dict(momentum=0.5, maximize=True, weight_decay=0.1),
    dict(weight_decay=0.2, maximize=True),
]


@pytest.mark.parametrize("opts", SGD_OPTIONS)
def test_sgd_step(opts, dtype):
    p0, grads = _problem(dtype)
    lr = 0.1
    p, buf, state, want = p0.astype(dtype), np.zeros(N, dtype), {}, p0
    momentum = opts.get("momentum", 0.0)
    for k, g in enumerate(grads):
        K.sgd_step(p, g.astype(dtype), buf if momentum else None, lr,
                   opts.get("weight_decay", 0.0), momentum, opts.get("dampening", 0.0),
                   opts.get("nesterov", False), opts.get("maximize", False), k == 0)
        want = ref.sgd(want, g, state, lr, **opts)
        _close(p, want, dtype)
        if momentum:
            _close(buf, state["momentum_buffer"], dtype)


ADAM_OPTIONS = [
    dict(),
    dict(weight_decay=0.1),
    dict(amsgrad=True, betas=(0.8, 0.9)),
    dict(maximize=True, weight_decay=0.05, amsgrad=True),
    dict(decoupled=True, weight_decay=0.1),
    dict(decoupled=True, weight_decay=0.1, amsgrad=True, maximize=True, eps=1e-3),
]


@pytest.mark.parametrize("opts", ADAM_OPTIONS)
def test_adam_step(opts, dtype):
    p0, grads = _problem(dtype, 1)
    lr = 0.01
    amsgrad = opts.get("amsgrad", False)
    beta1, beta2 = opts.get("betas", (0.9, 0.999))
    p, m, v, vmax = p0.astype(dtype), np.zeros(N, dtype), np.zeros(N, dtype), np.zeros(N, dtype)
    state, want = {}, p0
    for step, g in enumerate(grads, 1):
        KA.adam_step(p, g.astype(dtype), m, v, vmax if amsgrad else None, lr, beta1, beta2,
                    opts.get("eps", 1e-8), opts.get("weight_decay", 0.0), step, amsgrad,
                    opts.get("maximize", False), opts.get("decoupled", False))
        want = ref.adam(want, g, state, lr, **opts)
        _close(p, want, dtype)
        _close(m, state["exp_avg"], dtype)
        _close(v, state["exp_avg_sq"], dtype)
        if amsgrad:
            _close(vmax, state["max_exp_avg_sq"], dtype)


RMSPROP_OPTIONS = [
    dict(),
    dict(centered=True),
    dict(momentum=0.9),
    dict(centered=True, momentum=0.5, weight_decay=0.1, alpha=0.9),
    dict(maximize=True, weight_decay=0.1, eps=1e-3),
]


@pytest.mark.parametrize("opts", RMSPROP_OPTIONS)
def test_rmsprop_step(opts, dtype):
    p0, grads = _problem(dtype, 2)
    lr = 0.01
    centered, momentum = opts.get("centered", False), opts.get("momentum", 0.0)
    p, sq, ga, buf = p0.astype(dtype), np.zeros(N, dtype), np.zeros(N, dtype), np.zeros(N, dtype)
    state, want = {}, p0
    for g in grads:
        KD.rmsprop_step(p, g.astype(dtype), sq, ga if centered else None,
                       buf if momentum else None, lr, opts.get("alpha", 0.99),
                       opts.get("eps", 1e-8), opts.get("weight_decay", 0.0), momentum,
                       centered, opts.get("maximize", False))
        want = ref.rmsprop(want, g, state, lr, **opts)
        _close(p, want, dtype)
        _close(sq, state["square_avg"], dtype)
        if centered:
            _close(ga, state["grad_avg"], dtype)
        if momentum:
            _close(buf, state["momentum_buffer"], dtype)


ADAGRAD_OPTIONS = [
    dict(),
    dict(lr_decay=0.1, initial_accumulator_value=0.5),
    dict(weight_decay=0.1, maximize=True, eps=1e-3),
]


@pytest.mark.parametrize("opts", ADAGRAD_OPTIONS)
def test_adagrad_step(opts, dtype):
    p0, grads = _problem(dtype, 3)
    lr = 0.1
    p = p0.astype(dtype)
    s = np.full(N, opts.get("initial_accumulator_value", 0.0), dtype)
    state, want = {}, p0
    for step, g in enumerate(grads, 1):
        KD.adagrad_step(p, g.astype(dtype), s, lr, opts.get("lr_decay", 0.0),
                       opts.get("weight_decay", 0.0), opts.get("eps", 1e-10), step,
                       opts.get("maximize", False))
        want = ref.adagrad(want, g, state, lr, **opts)
        _close(p, want, dtype)
        _close(s, state["sum"], dtype)


def test_empty_parameter_is_a_no_op():
    p = np.empty(0, np.float64)
    KA.adam_step(p, p.copy(), p.copy(), p.copy(), None, 0.1, 0.9, 0.999, 1e-8, 0.0, 1,
                False, False, False)
    K.sgd_step(p, p.copy(), None, 0.1, 0.0, 0.0, 0.0, False, False, True)
    assert p.size == 0


def test_division_by_zero_gives_inf_not_an_exception():
    # eps=0 and a zero gradient: 0/0 as in PyTorch (nan), never ZeroDivisionError.
    p = np.ones(3)
    KD.adagrad_step(p, np.zeros(3), np.zeros(3), 0.1, 0.0, 0.0, 0.0, 1, False)
    assert np.isnan(p).all()


def test_amsgrad_max_propagates_nan():
    p, m, v, vmax = np.ones(2), np.zeros(2), np.zeros(2), np.array([np.nan, 0.0])
    KA.adam_step(p, np.array([1.0, np.nan]), m, v, vmax, 0.1, 0.9, 0.999, 1e-8, 0.0, 1,
                True, False, False)
    assert np.isnan(vmax).all() and np.isnan(p).all()


def test_integer_hyper_parameters_reuse_the_float_signature():
    p = np.ones(4)
    K.sgd_step(p, np.ones(4), None, 1, 0, 0, 0, False, False, True)
    np.testing.assert_array_equal(p, np.zeros(4))
    assert len(K.sgd_step_serial.signatures) == len({s[0] for s in K.sgd_step_serial.signatures})
