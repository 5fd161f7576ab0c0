"""CyclicLR and torch.optim.swa_utils (AveragedModel, SWALR, update_bn, the averaging
functions) against values computed by hand; errors as PyTorch raises them."""
import copy
import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("nbtorch")
optim = pytest.importorskip("nbtorch.optim")
L = optim.lr_scheduler
S = optim.swa_utils


def _opt(lr=1.0, cls=None, **kw):
    return (cls or optim.SGD)([torch.zeros(1, requires_grad=True)], lr=lr, **kw)


def _run(opt, sched, steps, key="lr"):
    out = []
    for _ in range(steps):
        group = opt.param_groups[0]
        out.append(group["betas"][0] if key == "beta1" else group[key])
        opt.step()
        sched.step()
    return out


def _triangle(i, lo, hi, up, down):
    """The triangular wave: lo at the cycle start, hi after `up` steps."""
    x = i % (up + down)
    return lo + (hi - lo) * (x / up if x <= up else (up + down - x) / down)


# ---------------------------------------------------------------- CyclicLR
def test_cyclic_lr_triangular_and_momentum():
    opt = _opt(momentum=0.9)
    sched = L.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=2, step_size_down=4,
                       base_momentum=0.8, max_momentum=0.9)
    assert opt.param_groups[0]["initial_lr"] == 0.1
    assert opt.param_groups[0]["max_momentum"] == 0.9
    lrs, moms = [], []
    for _ in range(13):
        lrs.append(opt.param_groups[0]["lr"])
        moms.append(opt.param_groups[0]["momentum"])
        opt.step()
        sched.step()
    want = [_triangle(i, 0.1, 1.0, 2, 4) for i in range(13)]
    assert lrs == pytest.approx(want, abs=1e-12)
    frac = [(lr - 0.1) / 0.9 for lr in want]
    assert moms == pytest.approx([0.9 - 0.1 * f for f in frac], abs=1e-12)


def test_cyclic_lr_amplitude_modes():
    opt = _opt()
    got = _run(opt, L.CyclicLR(opt, 0.0, 1.0, step_size_up=1, mode="triangular2",
                               cycle_momentum=False), 6)
    assert got == pytest.approx([0.0, 1.0, 0.0, 0.5, 0.0, 0.25])
    opt = _opt()
    got = _run(opt, L.CyclicLR(opt, 0.0, 1.0, step_size_up=1, mode="exp_range", gamma=0.5,
                               cycle_momentum=False), 4)
    assert got == pytest.approx([0.0, 0.5, 0.0, 0.125])      # scaled by gamma ** step
    opt = _opt()
    sched = L.CyclicLR(opt, 0.0, 1.0, step_size_up=1, scale_fn=lambda c: 1.0 / c,
                       cycle_momentum=False)
    assert _run(opt, sched, 4) == pytest.approx([0.0, 1.0, 0.0, 0.5])


def test_cyclic_lr_cycles_adam_beta1_per_group():
    w, b = torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)
    opt = optim.Adam([{"params": [w]}, {"params": [b]}], lr=0.1, betas=(0.5, 0.99))
    sched = L.CyclicLR(opt, base_lr=[0.1, 0.2], max_lr=[0.3, 0.4], step_size_up=1,
                       base_momentum=[0.8, 0.7], max_momentum=0.9)
    assert [g["betas"] for g in opt.param_groups] == [(0.9, 0.99), (0.9, 0.99)]
    opt.step()
    sched.step()
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.3, 0.4])
    assert [g["betas"][0] for g in opt.param_groups] == pytest.approx([0.8, 0.7])


class _Halve:
    """A callable object: its attributes travel in the scheduler's state_dict."""

    def __init__(self):
        self.factor = 0.5

    def __call__(self, cycle):
        return self.factor ** (cycle - 1)


def test_cyclic_lr_state_dict():
    opt = _opt()
    sched = L.CyclicLR(opt, 0.0, 1.0, step_size_up=2, scale_fn=_Halve(), cycle_momentum=False)
    sched._scale_fn_custom.factor = 0.25
    for _ in range(3):
        opt.step()
        sched.step()
    state = copy.deepcopy(sched.state_dict())
    assert state["_scale_fn_custom"] == {"factor": 0.25} and "_scale_fn_ref" not in state
    opt2 = _opt()
    other = L.CyclicLR(opt2, 0.0, 1.0, step_size_up=2, scale_fn=_Halve(), cycle_momentum=False)
    other.load_state_dict(state)
    assert other._scale_fn_custom.factor == 0.25 and other.last_epoch == 3
    plain = L.CyclicLR(_opt(), 0.0, 1.0, mode="exp_range", gamma=0.5, cycle_momentum=False)
    saved = plain.state_dict()
    assert saved["_scale_fn_custom"] is None
    plain.load_state_dict(saved)
    assert plain.scale_fn(2) == 0.25 and plain.scale_mode == "iterations"


def test_cyclic_lr_errors():
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        L.CyclicLR(_opt(), 0.1, 1.0, mode="sawtooth")
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1 with "
                                         "`cycle_momentum` option enabled"):
        L.CyclicLR(_opt(cls=optim.Adagrad), 0.1, 1.0)
    with pytest.raises(ValueError, match="base_lr must have the same length as "
                                         "optimizer.param_groups. base_lr has 2 values, "
                                         "param_groups has 1."):
        L.CyclicLR(_opt(), [0.1, 0.2], 1.0)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        L.CyclicLR(object(), 0.1, 1.0)


# ---------------------------------------------------------------- SWALR
@pytest.mark.parametrize("strategy,anneal", [
    ("cos", lambda t: (1 - math.cos(math.pi * t)) / 2), ("linear", lambda t: t)])
def test_swalr_anneals_to_the_swa_rate(strategy, anneal):
    opt = _opt(1.0)
    sched = S.SWALR(opt, swa_lr=0.1, anneal_epochs=4, anneal_strategy=strategy)
    got = _run(opt, sched, 7)
    want = [0.1 * anneal(min(1.0, e / 4)) + 1.0 * (1 - anneal(min(1.0, e / 4)))
            for e in range(7)]
    assert got == pytest.approx(want, rel=1e-12)
    state = sched.state_dict()
    assert "anneal_func" not in state and state["_anneal_strategy"] == strategy
    sched.load_state_dict(state)
    assert sched.anneal_func(0.5) == pytest.approx(anneal(0.5))


def test_swalr_errors_and_immediate_switch():
    opt = _opt(1.0)
    assert _run(opt, S.SWALR(opt, swa_lr=0.3, anneal_epochs=0), 3) == [0.3, 0.3, 0.3]
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', "
                                         "instead got exp"):
        S.SWALR(_opt(), swa_lr=0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, "
                                         "got -1"):
        S.SWALR(_opt(), swa_lr=0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr must have the same length"):
        S.SWALR(_opt(), swa_lr=[0.1, 0.2])


# ---------------------------------------------------------------- AveragedModel
def _model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))


def _snapshots(model, averaged, count=4):
    """Perturb `model` `count` times, averaging each state in; returns the weights seen."""
    seen = []
    for k in range(count):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.1 * (k + 1))
            model[1].running_mean.add_(1.0)
        averaged.update_parameters(model)
        seen.append([p.detach().numpy().copy() for p in model.parameters()])
    return seen


def test_averaged_model_keeps_the_equal_weight_mean():
    model = _model()
    swa = S.AveragedModel(model)
    assert swa.module is not model and int(swa.n_averaged) == 0
    seen = _snapshots(model, swa)
    assert int(swa.n_averaged) == 4
    for got, *snaps in zip(swa.parameters(), *seen):
        np.testing.assert_allclose(got.detach().numpy(), np.mean(snaps, axis=0), rtol=1e-6)
    # buffers are copied, not averaged
    np.testing.assert_array_equal(swa.module[1].running_mean.numpy(),
                                  model[1].running_mean.numpy())
    x = torch.randn(5, 3)
    swa.eval()
    np.testing.assert_allclose(swa(x).detach().numpy(), swa.module(x).detach().numpy())


@pytest.mark.parametrize("multi", [True, False])
def test_averaged_model_ema(multi):
    model = _model(1)
    fn = dict(multi_avg_fn=S.get_ema_multi_avg_fn(0.75)) if multi else \
        dict(avg_fn=S.get_ema_avg_fn(0.75))
    ema = S.AveragedModel(model, use_buffers=True, **fn)
    seen = _snapshots(model, ema)
    want = [s.copy() for s in seen[0]]
    for snap in seen[1:]:
        want = [0.75 * w + 0.25 * s for w, s in zip(want, snap)]
    for got, w in zip(ema.module.parameters(), want):
        np.testing.assert_allclose(got.detach().numpy(), w, rtol=1e-6, atol=1e-7)
    # with use_buffers the running statistics are averaged as well
    mean = np.zeros(2)
    for k in range(4):
        mean = (k + 1.0) * np.ones(2) if k == 0 else 0.75 * mean + 0.25 * (k + 1.0)
    np.testing.assert_allclose(ema.module[1].running_mean.numpy(), mean, rtol=1e-6)


def test_averaging_functions_and_errors():
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 6.0])
    np.testing.assert_allclose(S.get_swa_avg_fn()(a, b, 3).numpy(), [1.5, 3.0])
    np.testing.assert_allclose(S.get_ema_avg_fn(0.5)(a, b, 3).numpy(), [2.0, 4.0])
    avg = [a.clone()]
    S.get_swa_multi_avg_fn()(avg, [b], torch.tensor(1))
    np.testing.assert_allclose(avg[0].numpy(), [2.0, 4.0])
    for make in (S.get_ema_multi_avg_fn, S.get_ema_avg_fn):
        with pytest.raises(ValueError, match="Invalid decay value 1.5 provided. Please "
                                             r"provide a value in \[0,1\] range."):
            make(1.5)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        S.AveragedModel(_model(), avg_fn=S.get_swa_avg_fn(),
                        multi_avg_fn=S.get_swa_multi_avg_fn())


def test_update_bn_recomputes_running_statistics():
    model = _model(2)
    model.eval()
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(3)]
    loader = [(torch.tensor(x), torch.zeros(4)) for x in batches]    # (input, target) pairs
    bn = model[1]
    S.update_bn(loader, model)
    assert not model.training and bn.momentum == 0.1        # mode and momentum restored
    with torch.no_grad():
        h = [model[0](torch.tensor(x)).numpy().astype(np.float64) for x in batches]
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([y.mean(0) for y in h], 0),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(),
                               np.mean([y.var(0, ddof=1) for y in h], 0), rtol=1e-5)
    assert int(bn.num_batches_tracked) == 3
    plain = torch.nn.Linear(2, 2)
    S.update_bn(loader, plain)                              # no BatchNorm: nothing to do
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        S.update_bn([], _model())
