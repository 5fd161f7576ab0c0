"""Optimizer trajectories and scheduler sequences compared with PyTorch itself
(skipped where PyTorch is not installed)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
nb = pytest.importorskip("nbtorch")
nb_optim = pytest.importorskip("nbtorch.optim")

OPTIMIZERS = [
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True, maximize=True, betas=(0.8, 0.9))),
    ("Adam", dict(lr=0.01, betas=(0.3, 0.9), weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, maximize=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.1)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5, eps=1e-3, weight_decay=0.1, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.3, 0.9), weight_decay=0.1, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict()),                                  # rectified from step 6
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.8), weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=20, weight_decay=0.1)),
    ("ASGD", dict(t0=0, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(0.01, 0.3), maximize=True)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-3), d=2.0, weight_decay=0.1,
                       maximize=True)),
]
STEPS = 50
TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=1e-6, atol=1e-6)}


def _problem(dtype, steps=STEPS, seed=0):
    rng = np.random.default_rng(seed)
    start = [rng.standard_normal((4, 3)).astype(dtype), rng.standard_normal(5).astype(dtype)]
    grads = [[rng.standard_normal(a.shape).astype(dtype) for a in start] for _ in range(steps)]
    return start, grads


def _step_both(tp, np_, t_opt, n_opt, step_grads):
    for t, n, g in zip(tp, np_, step_grads):
        t.grad = torch.tensor(g)
        n.grad = nb.tensor(g)
    t_opt.step()
    n_opt.step()


def _compare_states(t_opt, n_opt, tol):
    t_state, n_state = t_opt.state_dict(), n_opt.state_dict()
    assert set(t_state["state"]) == set(n_state["state"])
    for i, s in t_state["state"].items():
        assert set(s) == set(n_state["state"][i])
        for k, v in s.items():
            got = n_state["state"][i][k]
            if isinstance(v, torch.Tensor):
                assert str(got.dtype) == str(v.dtype), k
                np.testing.assert_allclose(got.numpy(), v.numpy(), **tol, err_msg=k)
            else:
                assert got == v, k
    for tg, ng in zip(t_state["param_groups"], n_state["param_groups"]):
        assert set(tg) - {"fused"} <= set(ng)
        for k in set(tg) & set(ng):
            assert tg[k] == ng[k], k


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", OPTIMIZERS,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMIZERS)])
def test_trajectory_matches_pytorch(name, kwargs, dtype):
    """50 steps of both libraries from the same start and gradients: parameters and
    every state entry agree to 1e-6 (float32; most rules bit for bit) or 1e-10."""
    start, grads = _problem(dtype)
    tp = [torch.tensor(a, requires_grad=True) for a in start]
    np_ = [nb.tensor(a, requires_grad=True) for a in start]
    t_opt = getattr(torch.optim, name)(tp, **kwargs)
    n_opt = getattr(nb_optim, name)(np_, **kwargs)
    for step_grads in grads:
        _step_both(tp, np_, t_opt, n_opt, step_grads)
        for t, n in zip(tp, np_):
            np.testing.assert_allclose(n.detach().numpy(), t.detach().numpy(), **TOL[dtype])
    _compare_states(t_opt, n_opt, TOL[dtype])


@pytest.mark.parametrize("name,kwargs", OPTIMIZERS[9::2],
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMIZERS[9::2])])
def test_pytorch_state_dict_loads_and_continues(name, kwargs):
    """A PyTorch optimizer's state_dict (tensors converted) loads into nbtorch's,
    which then continues along PyTorch's trajectory."""
    start, grads = _problem("float32", steps=10, seed=1)
    tp = [torch.tensor(a, requires_grad=True) for a in start]
    t_opt = getattr(torch.optim, name)(tp, **kwargs)
    for step_grads in grads[:5]:
        for t, g in zip(tp, step_grads):
            t.grad = torch.tensor(g)
        t_opt.step()
    saved = t_opt.state_dict()
    np_ = [nb.tensor(t.detach().numpy().copy(), requires_grad=True) for t in tp]
    n_opt = getattr(nb_optim, name)(np_, **kwargs)
    n_opt.load_state_dict({
        "state": {i: {k: nb.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v
                      for k, v in s.items()} for i, s in saved["state"].items()},
        "param_groups": saved["param_groups"]})
    for step_grads in grads[5:]:
        _step_both(tp, np_, t_opt, n_opt, step_grads)
    for t, n in zip(tp, np_):
        np.testing.assert_allclose(n.detach().numpy(), t.detach().numpy(), **TOL["float32"])
    _compare_states(t_opt, n_opt, TOL["float32"])


SCHEDULERS = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5, 5], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.8)),
    ("CosineAnnealingLR", dict(T_max=4, eta_min=0.01)),
    ("LinearLR", dict(start_factor=0.2, end_factor=0.9, total_iters=4)),
    ("ConstantLR", dict(factor=0.3, total_iters=3)),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=12)),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=12, three_phase=True,
                        anneal_strategy="linear")),
    ("PolynomialLR", dict(total_iters=8, power=1.5)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.01)),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.9)),
    ("LambdaLR", dict(lr_lambda=lambda e: 1 / (1 + e))),
]


def _sequence(lib, optim_mod, name, kwargs, momentum=0.9):
    p = lib.zeros(1, requires_grad=True)
    opt = optim_mod.SGD([p], lr=0.1, momentum=momentum)
    sched = getattr(optim_mod.lr_scheduler, name)(opt, **kwargs)
    out = []
    for _ in range(12):
        out.append((opt.param_groups[0]["lr"], opt.param_groups[0]["momentum"]))
        opt.step()
        sched.step()
    return out


@pytest.mark.parametrize("name,kwargs", SCHEDULERS,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(SCHEDULERS)])
def test_scheduler_sequence_matches_pytorch(name, kwargs):
    want = _sequence(torch, torch.optim, name, kwargs)
    got = _sequence(nb, nb_optim, name, kwargs)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-12, atol=1e-15)


def test_reduce_lr_on_plateau_matches_pytorch():
    metrics = [1.0, 0.9, 0.9, 0.9, 0.95, 0.8, 0.8, 0.8, 0.8, 0.7]
    out = []
    for lib, optim_mod in ((torch, torch.optim), (nb, nb_optim)):
        opt = optim_mod.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
        sched = optim_mod.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1,
                                                          cooldown=1, threshold=0.01)
        lrs = []
        for m in metrics:
            opt.step()
            sched.step(m)
            lrs.append(opt.param_groups[0]["lr"])
        out.append(lrs)
    assert out[0] == out[1]


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta",
                                  "Adamax", "NAdam", "RAdam", "ASGD", "Rprop", "LBFGS",
                                  "SparseAdam", "Adafactor"])
def test_defaults_and_repr_match_pytorch(name):
    t = getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)])
    n = getattr(nb_optim, name)([nb.zeros(1, requires_grad=True)])
    missing = set(t.defaults) - set(n.defaults)      # options newer PyTorch versions added
    assert not missing - {"decoupled_weight_decay"}, missing
    for k in set(t.defaults) & set(n.defaults):
        assert t.defaults[k] == n.defaults[k], k
    if not missing and set(n.defaults) == set(t.defaults):
        assert repr(t) == repr(n)


@pytest.mark.parametrize("build", [
    lambda o, L: L.ChainedScheduler([L.ConstantLR(o, factor=0.1, total_iters=2),
                                     L.ExponentialLR(o, gamma=0.9)]),
    lambda o, L: L.SequentialLR(o, [L.ConstantLR(o, factor=0.1, total_iters=2),
                                    L.ExponentialLR(o, gamma=0.9)], milestones=[2]),
    lambda o, L: L.SequentialLR(o, [L.LinearLR(o, start_factor=0.1, total_iters=2),
                                    L.CosineAnnealingLR(o, T_max=3)], milestones=[2]),
], ids=["chained", "sequential-constant", "sequential-linear-cosine"])
def test_composed_schedulers_match_pytorch(build):
    out = []
    for lib, optim_mod in ((torch, torch.optim), (nb, nb_optim)):
        opt = optim_mod.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
        sched = build(opt, optim_mod.lr_scheduler)
        lrs = []
        for _ in range(7):
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
        out.append(lrs)
    np.testing.assert_allclose(out[1], out[0], rtol=1e-12, atol=1e-15)


def test_mlp_training_matches_pytorch():
    nn = pytest.importorskip("nbtorch.nn")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 4))
    y = rng.standard_normal((16, 2))
    w1, b1 = rng.standard_normal((8, 4)) * 0.5, rng.standard_normal(8) * 0.1
    w2, b2 = rng.standard_normal((2, 8)) * 0.5, rng.standard_normal(2) * 0.1
    losses = []
    for lib, nn_mod, optim_mod in ((torch, torch.nn, torch.optim), (nb, nn, nb_optim)):
        model = nn_mod.Sequential(nn_mod.Linear(4, 8), nn_mod.Tanh(), nn_mod.Linear(8, 2))
        model.double()
        with lib.no_grad():
            for p, v in zip(model.parameters(), (w1, b1, w2, b2)):
                p.copy_(lib.tensor(v))
        opt = optim_mod.Adam(model.parameters(), lr=0.01, amsgrad=True)
        sched = optim_mod.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=30)
        xs, ys = lib.tensor(x), lib.tensor(y)
        run = []
        for _ in range(30):
            opt.zero_grad()
            loss = ((model(xs) - ys) ** 2).mean()
            loss.backward()
            opt.step()
            sched.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-9)
