"""Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop, LBFGS and SparseAdam without
PyTorch: steps against PyTorch's updates written out in NumPy
(numpy_reference.py), state_dict round trips, closed-form LBFGS solutions, and
PyTorch's errors for bad hyper-parameters."""
import copy
import importlib.util
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("nbtorch")
optim = pytest.importorskip("nbtorch.optim")

_spec = importlib.util.spec_from_file_location(
    "numpy_reference", Path(__file__).with_name("numpy_reference.py"))
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

STEPS = 8
SHAPES = [(3, 4), (5,)]
CASES = [
    (optim.Adadelta, ref.adadelta, [
        dict(), dict(lr=0.5, rho=0.5, eps=1e-3, weight_decay=0.1), dict(maximize=True)]),
    (optim.Adamax, ref.adamax, [
        dict(), dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1), dict(maximize=True)]),
    (optim.NAdam, ref.nadam, [
        dict(), dict(weight_decay=0.1, momentum_decay=0.01),
        dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)]),
    (optim.RAdam, ref.radam, [
        dict(), dict(betas=(0.9, 0.8), weight_decay=0.1),         # rectified from step 7
        dict(lr=0.01, betas=(0.9, 0.8), weight_decay=0.1, decoupled_weight_decay=True,
             maximize=True)]),
    (optim.ASGD, ref.asgd, [
        dict(), dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1),
        dict(t0=0, maximize=True)]),
    (optim.Rprop, ref.rprop, [
        dict(), dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(0.05, 0.2)), dict(maximize=True)]),
    (optim.Adafactor, ref.adafactor, [
        dict(eps=(1e-30, 1e-3)),
        dict(lr=0.05, weight_decay=0.1, d=2.0, beta2_decay=-0.5, maximize=True,
             eps=(1e-30, 1e-3))]),
]
ALL = [(cls, fn, opts) for cls, fn, option_sets in CASES for opts in option_sets]
IDS = [f"{cls.__name__}-{i}" for i, (cls, _, _) in enumerate(ALL)]


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return ([rng.standard_normal(s) for s in SHAPES],
            [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)])


def _leaves(arrays, dtype=np.float64):
    return [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]


def _set_grads(params, grads):
    for p, g in zip(params, grads):
        p.grad = torch.tensor(g.astype(p.detach().numpy().dtype))


def _value(t):
    return t.detach().numpy()


@pytest.mark.parametrize("cls,update,opts", ALL, ids=IDS)
def test_steps_match_numpy_reference(cls, update, opts):
    arrays, grads = _data()
    params = _leaves(arrays)
    opt = cls(params, **opts)
    want, states = [a.copy() for a in arrays], [{} for _ in arrays]
    for step_grads in grads:
        _set_grads(params, step_grads)
        opt.step()
        want = [update(w, g, s, **opts) for w, g, s in zip(want, step_grads, states)]
        for p, w in zip(params, want):
            np.testing.assert_allclose(_value(p), w, rtol=1e-12, atol=1e-14)
    for p, s in zip(params, states):               # same state and keys as PyTorch's
        got = opt.state[p]
        assert set(got) == set(s)
        for k, v in s.items():
            if np.ndim(v) == 0:                     # step, mu_product, eta, mu
                assert got[k].dtype == torch.float32 and got[k].dim() == 0, k
                assert got[k].item() == pytest.approx(v, rel=1e-15), k
            else:
                np.testing.assert_allclose(_value(got[k]), v, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("cls,update,opts", [c for c in ALL if c[2]],
                         ids=[i for i, c in zip(IDS, ALL) if c[2]])
def test_float32_parameters(cls, update, opts):
    arrays, grads = _data(1)
    params = _leaves(arrays, np.float32)
    opt = cls(params, **opts)
    want, states = [a.astype(np.float32).astype(np.float64) for a in arrays], [{}, {}]
    for step_grads in grads:
        step_grads = [g.astype(np.float32).astype(np.float64) for g in step_grads]
        _set_grads(params, step_grads)
        opt.step()
        want = [update(w, g, s, **opts) for w, g, s in zip(want, step_grads, states)]
    for p, w in zip(params, want):
        assert p.dtype == torch.float32
        np.testing.assert_allclose(_value(p), w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls,update,opts", ALL, ids=IDS)
def test_state_dict_round_trip_continues_identically(cls, update, opts):
    arrays, grads = _data(2)
    a_params = _leaves(arrays)
    a = cls(a_params, **opts)
    for step_grads in grads[:3]:
        _set_grads(a_params, step_grads)
        a.step()
    saved = copy.deepcopy(a.state_dict())
    b_params = _leaves([_value(p) for p in a_params])
    b = cls(b_params, **opts)
    b.load_state_dict(saved)
    assert b.state_dict()["param_groups"] == a.state_dict()["param_groups"]
    for pb in b_params:        # PyTorch's policy: floating state takes the param's dtype
        assert all(v.dtype == (torch.float32 if k == "step" else pb.dtype)
                   for k, v in b.state[pb].items())
    for step_grads in grads[3:]:
        for params, opt in ((a_params, a), (b_params, b)):
            _set_grads(params, step_grads)
            opt.step()
    # NAdam's mu_product and ASGD's eta/mu continue in float64 once loaded (as in
    # PyTorch), so those trajectories agree to rounding, the others exactly
    tol = dict(rtol=1e-10, atol=1e-12) if cls in (optim.NAdam, optim.ASGD) else dict(rtol=0)
    for pa, pb in zip(a_params, b_params):
        np.testing.assert_allclose(_value(pa), _value(pb), **tol)
        for k, v in a.state[pa].items():
            scalar_tol = dict(rtol=1e-6) if v.dim() == 0 and k != "step" else tol
            np.testing.assert_allclose(_value(v), _value(b.state[pb][k]), **scalar_tol)


def test_scalar_state_follows_the_default_dtype():
    torch.set_default_dtype(torch.float64)
    try:
        p = torch.zeros(2, requires_grad=True)
        opt = optim.NAdam([p])
        p.grad = torch.ones(2)
        opt.step()
        assert opt.state[p]["step"].dtype == opt.state[p]["mu_product"].dtype == torch.float64
    finally:
        torch.set_default_dtype(torch.float32)


def test_non_contiguous_and_float16_parameters():
    base = torch.tensor(np.arange(12.0).reshape(3, 4))
    w = base.t().detach().requires_grad_()           # a transposed view is updated in place
    opt = optim.Rprop([w], lr=0.5)
    w.grad = torch.ones(4, 3, dtype=torch.float64)
    opt.step()
    np.testing.assert_allclose(_value(w), np.arange(12.0).reshape(3, 4).T - 0.5)
    h = torch.ones(3, dtype=torch.float16, requires_grad=True)
    opt = optim.Adamax([h], lr=0.1)
    h.grad = torch.ones(3, dtype=torch.float16)
    opt.step()
    assert h.dtype == torch.float16 and opt.state[h]["exp_inf"].dtype == torch.float16
    np.testing.assert_allclose(_value(h).astype(np.float32), 0.9, rtol=1e-3)


@pytest.mark.parametrize("cls,kwargs,message", [
    (optim.Adadelta, dict(lr=-1.0), "Invalid learning rate: -1.0"),
    (optim.Adadelta, dict(rho=1.5), "Invalid rho value: 1.5"),
    (optim.Adadelta, dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    (optim.Adadelta, dict(weight_decay=-1.0), "Invalid weight_decay value: -1.0"),
    (optim.Adamax, dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (optim.Adamax, dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    (optim.NAdam, dict(momentum_decay=-1.0), "Invalid momentum_decay value: -1.0"),
    (optim.NAdam, dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    (optim.RAdam, dict(weight_decay=-1.0), "Invalid weight_decay value: -1.0"),
    (optim.RAdam, dict(lr=-1.0), "Invalid learning rate: -1.0"),
    (optim.ASGD, dict(lr=-1.0), "Invalid learning rate: -1.0"),
    (optim.ASGD, dict(weight_decay=-1.0), "Invalid weight_decay value: -1.0"),
    (optim.Rprop, dict(etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
    (optim.Rprop, dict(etas=(0.5, 0.9)), "Invalid eta values: 0.5, 0.9"),
    (optim.Rprop, dict(lr=-1.0), "Invalid learning rate: -1.0"),
    (optim.LBFGS, dict(lr=-1.0), "Invalid learning rate: -1.0"),
    (optim.SparseAdam, dict(lr=0.0), "Invalid learning rate: 0.0"),
    (optim.SparseAdam, dict(eps=0.0), "Invalid epsilon value: 0.0"),
    (optim.SparseAdam, dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
])
def test_invalid_hyper_parameters(cls, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        cls([torch.ones(1, requires_grad=True)], **kwargs)


@pytest.mark.parametrize("cls", [optim.Adadelta, optim.Adamax, optim.NAdam, optim.RAdam,
                                 optim.ASGD, optim.Rprop])
def test_implementation_switches(cls):
    w = torch.ones(1, requires_grad=True)
    opt = cls([w], foreach=True, capturable=True, maximize=True)   # accepted, as in PyTorch
    assert opt.defaults["foreach"] is True and opt.defaults["capturable"] is True
    with pytest.raises(TypeError):                   # no fused implementation in PyTorch
        cls([w], fused=True)
    assert cls([w * 2], differentiable=True).defaults["differentiable"] is True


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adafactor_default_eps_is_the_dtype_eps_and_batched_matrices(dtype):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((2, 3, 4)), rng.standard_normal(())]
    params = _leaves(arrays, dtype)
    opt = optim.Adafactor(params, lr=0.1)
    want, states = [a.astype(dtype).astype(np.float64) for a in arrays], [{}, {}]
    for _ in range(4):
        grads = [rng.standard_normal(a.shape).astype(dtype).astype(np.float64) for a in arrays]
        _set_grads(params, grads)
        opt.step()
        want = [ref.adafactor(w, g, s, lr=0.1, dtype_eps=np.finfo(dtype).eps)
                for w, g, s in zip(want, grads, states)]
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12)
    for p, w in zip(params, want):
        np.testing.assert_allclose(_value(p), w, **tol)
    assert opt.state[params[0]]["row_var"].shape == (2, 3, 1)
    assert opt.state[params[0]]["col_var"].shape == (2, 1, 4)


def test_muon_orthogonalises_the_momentum():
    rng = np.random.default_rng(4)
    w0, grads = rng.standard_normal((4, 6)), [rng.standard_normal((4, 6)) for _ in range(3)]
    w = torch.tensor(w0.astype(np.float32), requires_grad=True)
    opt = optim.Muon([w], lr=0.02, momentum=0.9, weight_decay=0.1)
    want, buf = w0.copy(), np.zeros_like(w0)
    for g in grads:
        g = g.astype(np.float32).astype(np.float64)
        w.grad = torch.tensor(g.astype(np.float32))
        opt.step()
        buf = buf + 0.1 * (g - buf)
        update = ref.newton_schulz(g + 0.9 * (buf - g))           # Nesterov
        want = want * (1 - 0.02 * 0.1) - 0.02 * update           # 4x6: ratio 1
    # the Newton-Schulz iterations run in bfloat16, as PyTorch's: each of the 3 updates
    # (entries ~1, scaled by lr 0.02) is exact to about 2%
    np.testing.assert_allclose(_value(w), want, atol=0.02 * 0.02 * 3)
    assert np.abs(_value(w) - w0).max() > 0.03          # it moved by more than the error
    singular = np.linalg.svd(ref.newton_schulz(grads[0]), compute_uv=False)
    assert np.all((singular > 0.6) & (singular < 1.25))         # nearly orthogonal
    np.testing.assert_allclose(_value(opt.state[w]["momentum_buffer"]), buf, rtol=1e-5)


def test_adafactor_and_muon_errors():
    w = torch.zeros(2, 2, requires_grad=True)
    for kwargs, message in [(dict(lr=-1.0), "Learning rate should be >= 0 but is: -1.0"),
                            (dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
                            (dict(eps=(-1.0, 1e-3)), "epsilon1 should be >= 0 but is: -1.0"),
                            (dict(eps=(None, -1.0)), "epsilon2 should be >= 0 but is: -1.0"),
                            (dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
                            (dict(weight_decay=-1.0), "weight_decay should be >= 0")]:
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            optim.Adafactor([w], **kwargs)
    for kwargs, message in [(dict(lr=-1.0), "Learning rate should be >= 0 but is: -1.0"),
                            (dict(momentum=-1.0), "momentum should be >= 0 but is: -1.0"),
                            (dict(weight_decay=-1.0), "weight decay should be >= 0"),
                            (dict(adjust_lr_fn="x"), "Adjust learning rate function x is not "
                                                     "supported")]:
        with pytest.raises(ValueError, match=message):
            optim.Muon([w], **kwargs)
    with pytest.raises(ValueError, match="Muon only supports 2D parameters whereas we found a "
                                         "parameter with size"):
        optim.Muon([torch.zeros(3, requires_grad=True)])
    opt = optim.Muon([w], ns_steps=100)
    w.grad = torch.ones(2, 2)
    with pytest.raises(ValueError, match="Number of steps must be less than 100"):
        opt.step()


# ---------------------------------------------------------------- LBFGS
def _least_squares(seed=0, n=12, d=5):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((n, d)), rng.standard_normal(n)
    return a, b, np.linalg.solve(a.T @ a, a.T @ b)


@pytest.mark.parametrize("kwargs", [dict(), dict(line_search_fn="strong_wolfe"),
                                    dict(history_size=2, max_iter=50, lr=0.5)])
def test_lbfgs_solves_least_squares(kwargs):
    a_np, b_np, solution = _least_squares()
    a, b = torch.tensor(a_np), torch.tensor(b_np)
    x = torch.zeros(5, dtype=torch.float64, requires_grad=True)
    opt = optim.LBFGS([x], tolerance_grad=1e-10, tolerance_change=1e-14, **kwargs)
    calls = []

    def closure():
        opt.zero_grad()
        r = a @ x - b
        loss = (r * r).sum()
        loss.backward()
        calls.append(loss.item())
        return loss

    first = opt.step(closure)
    assert first.item() == calls[0] == pytest.approx(float(b_np @ b_np))
    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(_value(x), solution, rtol=1e-6, atol=1e-7)
    state = opt.state[x]
    assert state["func_evals"] == len(calls) and state["n_iter"] >= 5
    assert len(state["old_dirs"]) <= kwargs.get("history_size", 100)
    assert {"d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad",
            "prev_loss", "func_evals", "n_iter"} <= set(state)


def test_lbfgs_state_dict_round_trip_and_several_parameters():
    a_np, b_np, solution = _least_squares(1)
    a, b = torch.tensor(a_np), torch.tensor(b_np)

    def make():
        w = torch.zeros(3, dtype=torch.float64, requires_grad=True)
        v = torch.zeros(2, dtype=torch.float64, requires_grad=True)
        opt = optim.LBFGS([w, v], max_iter=3, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            r = a[:, :3] @ w + a[:, 3:] @ v - b
            loss = (r * r).sum()
            loss.backward()
            return loss
        return w, v, opt, closure

    w1, v1, opt1, c1 = make()
    opt1.step(c1)
    w2, v2, opt2, c2 = make()
    with torch.no_grad():
        w2.copy_(w1)
        v2.copy_(v1)
    opt2.load_state_dict(copy.deepcopy(opt1.state_dict()))
    for _ in range(4):
        opt1.step(c1)
        opt2.step(c2)
    np.testing.assert_array_equal(_value(w1), _value(w2))
    np.testing.assert_allclose(np.concatenate([_value(w1), _value(v1)]), solution, rtol=1e-4)


def test_lbfgs_errors():
    w = torch.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": [w]}, {"params": [torch.zeros(1, requires_grad=True)]}])
    opt = optim.LBFGS([w], line_search_fn="armijo")

    def closure():
        opt.zero_grad()
        loss = ((w - 1) ** 2).sum()
        loss.backward()
        return loss
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)
    with pytest.raises(TypeError):
        optim.LBFGS([w]).step()                     # the closure is required
    assert optim.LBFGS([w], max_iter=8).defaults["max_eval"] == 10


def test_lbfgs_stops_at_a_stationary_point():
    w = torch.ones(3, requires_grad=True)
    opt = optim.LBFGS([w])
    evals = []

    def closure():
        opt.zero_grad()
        loss = ((w - 1) ** 2).sum()
        loss.backward()
        evals.append(1)
        return loss
    opt.step(closure)
    assert len(evals) == 1 and opt.state[w]["n_iter"] == 0


# ---------------------------------------------------------------- SparseAdam
def test_sparse_adam_refuses_dense_gradients():
    w = torch.ones(3, requires_grad=True)
    opt = optim.SparseAdam([w], lr=0.1)
    assert opt.defaults == dict(lr=0.1, betas=(0.9, 0.999), eps=1e-8, maximize=False)
    opt.step()                                       # no gradient: nothing to do
    w.grad = torch.ones(3)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, "
                                           "please consider Adam instead$"):
        opt.step()
    np.testing.assert_array_equal(_value(w), [1.0, 1.0, 1.0])
