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
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, maximize=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.1)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kwargs", OPTIMIZERS,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMIZERS)])
def test_trajectory_matches_pytorch(name, kwargs, dtype):
    rng = np.random.default_rng(0)
    start = [rng.standard_normal((4, 3)).astype(dtype), rng.standard_normal(5).astype(dtype)]
    grads = [[rng.standard_normal(a.shape).astype(dtype) for a in start] for _ in range(6)]
    tp = [torch.tensor(a, requires_grad=True) for a in start]
    np_ = [nb.tensor(a, requires_grad=True) for a in start]
    t_opt = getattr(torch.optim, name)(tp, **kwargs)
    n_opt = getattr(nb_optim, name)(np_, **kwargs)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=2e-5, atol=2e-6)
    for step_grads in grads:
        for t, n, g in zip(tp, np_, step_grads):
            t.grad = torch.tensor(g)
            n.grad = nb.tensor(g)
        t_opt.step()
        n_opt.step()
        for t, n in zip(tp, np_):
            np.testing.assert_allclose(n.detach().numpy(), t.detach().numpy(), **tol)
    t_state = t_opt.state_dict()
    n_state = n_opt.state_dict()
    assert set(t_state["state"]) == set(n_state["state"])
    for i, s in t_state["state"].items():
        assert set(s) == set(n_state["state"][i])
    for tg, ng in zip(t_state["param_groups"], n_state["param_groups"]):
        for k in ("lr", "params", "weight_decay", "maximize"):
            assert tg[k] == ng[k]


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


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
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
