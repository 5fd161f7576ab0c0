"""LBFGS, CyclicLR, swa_utils and the optim namespace compared with PyTorch itself
(skipped where PyTorch is not installed)."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nb = pytest.importorskip("nbtorch")


# ---------------------------------------------------------------- namespace coverage
def test_every_optimizer_and_scheduler_name_of_pytorch_exists():
    """Optimizers, lr_scheduler and swa_utils: PyTorch's public names (all but a
    helper for tensor subclasses)."""
    not_yet = {"swap_in_optimizer_params_and_state"}
    missing = [n for n in torch.optim.__all__ if n not in not_yet and not hasattr(nb.optim, n)]
    assert not missing
    for module in ("lr_scheduler", "swa_utils"):
        theirs = getattr(torch.optim, module).__all__
        ours = getattr(nb.optim, module)
        assert [n for n in theirs if not hasattr(ours, n)] == []


BAD_HYPER_PARAMETERS = [
    ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(eps=-1.0)), ("Adamax", dict(lr=-1.0)),
    ("Adamax", dict(betas=(1.0, 0.9))), ("NAdam", dict(momentum_decay=-1.0)),
    ("NAdam", dict(betas=(0.9, 1.0))), ("RAdam", dict(weight_decay=-0.5)),
    ("ASGD", dict(lr=-1.0)), ("ASGD", dict(weight_decay=-1.0)), ("Rprop", dict(etas=(1.5, 2.0))),
    ("Rprop", dict(etas=(0.5, 0.9))), ("LBFGS", dict(lr=-1.0)), ("SparseAdam", dict(lr=0.0)),
    ("SparseAdam", dict(eps=0.0)), ("Adafactor", dict(beta2_decay=0.5)),
    ("Adafactor", dict(d=0.5)), ("Adafactor", dict(eps=(-1.0, 1e-3))),
    ("Muon", dict(momentum=-1.0)), ("Muon", dict(adjust_lr_fn="nope")),
    ("Adadelta", dict(fused=True)),
]


@pytest.mark.parametrize("name,kwargs", BAD_HYPER_PARAMETERS,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD_HYPER_PARAMETERS)])
def test_bad_hyper_parameters_raise_what_pytorch_raises(name, kwargs):
    errors = []
    for lib in (torch, nb):
        with pytest.raises(Exception) as info:
            getattr(lib.optim, name)([lib.zeros(2, 2, requires_grad=True)], **kwargs)
        errors.append(info.value)
    assert type(errors[1]) is type(errors[0])
    if not isinstance(errors[0], TypeError):      # TypeError: an unexpected keyword
        assert str(errors[1]) == str(errors[0])


# ---------------------------------------------------------------- LBFGS
def _rosenbrock(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def _lbfgs_run(lib, kwargs, dtype, steps):
    x = lib.tensor(np.array([-1.5, 2.0, 0.5, -0.3, 1.2], dtype=dtype), requires_grad=True)
    opt = lib.optim.LBFGS([x], **kwargs)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(x)
        loss.backward()
        return loss

    path, losses = [], []
    for _ in range(steps):
        losses.append(float(opt.step(closure).detach()))
        path.append(x.detach().numpy().copy())
    return np.array(path), losses, opt.state[x]


@pytest.mark.parametrize("kwargs", [
    dict(), dict(line_search_fn="strong_wolfe"), dict(history_size=3, max_iter=5),
    dict(lr=0.1, history_size=2, max_iter=7, line_search_fn="strong_wolfe"),
    dict(tolerance_grad=1e-3, tolerance_change=1e-4, max_eval=12),
], ids=["plain", "wolfe", "short-history", "wolfe-small-lr", "tolerances"])
def test_lbfgs_matches_pytorch_float64(kwargs):
    want, want_losses, t_state = _lbfgs_run(torch, kwargs, "float64", 8)
    got, got_losses, n_state = _lbfgs_run(nb, kwargs, "float64", 8)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-9)
    assert n_state["func_evals"] == t_state["func_evals"]
    assert n_state["n_iter"] == t_state["n_iter"]
    assert set(n_state) == set(t_state)
    assert len(n_state["old_dirs"]) == len(t_state["old_dirs"])


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_matches_pytorch_float32_first_iterations(line_search_fn):
    kwargs = dict(max_iter=4, history_size=3, line_search_fn=line_search_fn)
    want, _, _ = _lbfgs_run(torch, kwargs, "float32", 2)
    got, _, _ = _lbfgs_run(nb, kwargs, "float32", 2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- Muon
@pytest.mark.parametrize("kwargs", [dict(), dict(lr=0.02, nesterov=False, weight_decay=0.01,
                                                 adjust_lr_fn="match_rms_adamw")])
def test_muon_matches_pytorch(kwargs):
    """Muon's Newton-Schulz runs in bfloat16 (bit-identical here); the momentum lerp and
    the final add round twice in nbtorch where PyTorch fuses them, and bfloat16
    amplifies those ulps: trajectories agree to ~1e-4."""
    rng = np.random.default_rng(0)
    shapes, steps = [(4, 3), (3, 5)], 20
    start = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(steps)]
    runs = []
    for lib in (torch, nb):
        params = [lib.tensor(a, requires_grad=True) for a in start]
        opt = lib.optim.Muon(params, **kwargs)
        for step_grads in grads:
            for p, g in zip(params, step_grads):
                p.grad = lib.tensor(g)
            opt.step()
        runs.append(([p.detach().numpy() for p in params], opt))
    for got, want in zip(runs[1][0], runs[0][0]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-4)
    assert runs[1][1].defaults == runs[0][1].defaults
    assert repr(runs[1][1]) == repr(runs[0][1])


# ---------------------------------------------------------------- CyclicLR, SWALR
def _sequence(lib, build, optimizer="SGD", steps=25, **opt_kwargs):
    p = lib.zeros(1, requires_grad=True)
    opt = getattr(lib.optim, optimizer)([p], lr=0.1, **opt_kwargs)
    sched = build(opt, lib.optim)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(steps):
            group = opt.param_groups[0]
            out.append((group["lr"], group["betas"][0] if "betas" in group
                        else group.get("momentum", 0.0)))
            opt.step()
            sched.step()
    return np.array(out), sched


SEQUENCES = [
    (lambda o, O: O.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=4), "SGD"),
    (lambda o, O: O.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=4), "Adam"),
    (lambda o, O: O.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=3, step_size_down=5,
                                          mode="triangular2"), "SGD"),
    (lambda o, O: O.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=2, mode="exp_range",
                                          gamma=0.9, cycle_momentum=False), "RMSprop"),
    (lambda o, O: O.lr_scheduler.CyclicLR(o, [0.01], [0.2], step_size_up=3,
                                          scale_fn=lambda x: 0.5 ** x,
                                          scale_mode="iterations"), "SGD"),
    (lambda o, O: O.swa_utils.SWALR(o, swa_lr=0.05, anneal_epochs=5), "SGD"),
    (lambda o, O: O.swa_utils.SWALR(o, swa_lr=[0.05], anneal_epochs=3,
                                    anneal_strategy="linear"), "SGD"),
    (lambda o, O: O.swa_utils.SWALR(o, swa_lr=0.05, anneal_epochs=0), "SGD"),
]


@pytest.mark.parametrize("build,optimizer", SEQUENCES,
                         ids=["cyclic", "cyclic-adam", "cyclic-triangular2", "cyclic-exp",
                              "cyclic-custom", "swalr-cos", "swalr-linear", "swalr-0"])
def test_scheduler_sequence_and_state_dict_match_pytorch(build, optimizer):
    kwargs = dict(momentum=0.9) if optimizer == "SGD" else {}
    want, t_sched = _sequence(torch, build, optimizer, **kwargs)
    got, n_sched = _sequence(nb, build, optimizer, **kwargs)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    t_state, n_state = t_sched.state_dict(), n_sched.state_dict()
    assert set(n_state) == set(t_state)
    for k in n_state:
        if not callable(t_state[k]):
            assert n_state[k] == t_state[k], k


# ---------------------------------------------------------------- AveragedModel, update_bn
def _averaged(lib, make, steps=6):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    y = rng.standard_normal((8, 2)).astype(np.float32)
    w1 = rng.standard_normal((4, 3)).astype(np.float32) * 0.5
    w2 = rng.standard_normal((2, 4)).astype(np.float32) * 0.5
    nn = lib.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    with lib.no_grad():
        model[0].weight.copy_(lib.tensor(w1))
        model[3].weight.copy_(lib.tensor(w2))
        model[0].bias.zero_()
        model[3].bias.zero_()
    averaged = make(lib.optim.swa_utils, model)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean().backward()
        opt.step()
        averaged.update_parameters(model)
    lib.optim.swa_utils.update_bn([lib.tensor(x[:4]), (lib.tensor(x[4:]),)], averaged)
    state = {k: v.detach().numpy().astype(np.float64) for k, v in averaged.state_dict().items()}
    return state, averaged(lib.tensor(x)).detach().numpy()


@pytest.mark.parametrize("make", [
    lambda S, m: S.AveragedModel(m),
    lambda S, m: S.AveragedModel(m, multi_avg_fn=S.get_ema_multi_avg_fn(0.9)),
    lambda S, m: S.AveragedModel(m, multi_avg_fn=S.get_swa_multi_avg_fn()),
    lambda S, m: S.AveragedModel(m, avg_fn=S.get_ema_avg_fn(0.8), use_buffers=True),
    lambda S, m: S.AveragedModel(m, avg_fn=S.get_swa_avg_fn()),
], ids=["swa", "ema-multi", "swa-multi", "ema-buffers", "swa-avg-fn"])
def test_averaged_model_and_update_bn_match_pytorch(make):
    want, want_out = _averaged(torch, make)
    got, got_out = _averaged(nb, make)
    assert list(got) == list(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(got_out, want_out, rtol=1e-5, atol=1e-6)
