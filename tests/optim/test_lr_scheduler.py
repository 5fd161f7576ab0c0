"""Learning-rate schedulers: each sequence against values computed by hand,
state_dict round trips, PyTorch's warnings and errors."""
import math
import warnings

import pytest

torch = pytest.importorskip("nbtorch")
optim = pytest.importorskip("nbtorch.optim")
L = optim.lr_scheduler


def _opt(lr=1.0, cls=None, groups=1, **kw):
    params = [{"params": [torch.zeros(1, requires_grad=True)]} for _ in range(groups)]
    return (cls or optim.SGD)(params, lr=lr, **kw)


def _run(opt, sched, epochs):
    """The rate of group 0 at epochs 0 .. epochs-1 (optimizer.step before sched.step)."""
    lrs = []
    for _ in range(epochs):
        lrs.append(opt.param_groups[0]["lr"])
        assert sched.get_last_lr()[0] == opt.param_groups[0]["lr"]
        opt.step()
        sched.step()
    return lrs


def _close(got, want):
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def cos_lr(e, T, base=1.0, lo=0.0):
    return lo + (base - lo) * (1 + math.cos(math.pi * e / T)) / 2


def test_step_lr():
    opt = _opt(0.05)
    _close(_run(opt, L.StepLR(opt, step_size=2, gamma=0.1), 6),
           [0.05, 0.05, 0.005, 0.005, 0.0005, 0.0005])


def test_multi_step_lr_counts_repeated_milestones():
    opt = _opt()
    _close(_run(opt, L.MultiStepLR(opt, milestones=[2, 5, 5], gamma=0.5), 7),
           [1, 1, 0.5, 0.5, 0.5, 0.125, 0.125])


def test_exponential_lr():
    opt = _opt()
    _close(_run(opt, L.ExponentialLR(opt, gamma=0.5), 4), [1, 0.5, 0.25, 0.125])


def test_cosine_annealing_lr_follows_the_cosine_past_t_max():
    opt = _opt()
    got = _run(opt, L.CosineAnnealingLR(opt, T_max=4), 10)
    _close(got, [cos_lr(e, 4) for e in range(10)])       # 1, .854, .5, .146, 0, .146, ...
    _close(got[:5], [1.0, (1 + 2 ** -0.5) / 2, 0.5, (1 - 2 ** -0.5) / 2, 0.0])
    opt = _opt(0.5)
    _close(_run(opt, L.CosineAnnealingLR(opt, T_max=3, eta_min=0.1), 7),
           [cos_lr(e, 3, 0.5, 0.1) for e in range(7)])


def test_lambda_lr_per_group():
    opt = _opt(2.0, groups=2)
    sched = L.LambdaLR(opt, [lambda e: 1 / (e + 1), lambda e: 0.5 ** e])
    _close(_run(opt, sched, 4), [2, 1, 2 / 3, 0.5])
    _close([g["lr"] for g in opt.param_groups], [0.4, 2 * 0.5 ** 4])
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        L.LambdaLR(opt, [lambda e: 1.0])


def test_linear_lr():
    opt = _opt()
    _close(_run(opt, L.LinearLR(opt, start_factor=0.25, total_iters=3), 6),
           [0.25, 0.5, 0.75, 1.0, 1.0, 1.0])
    opt = _opt()
    _close(_run(opt, L.LinearLR(opt, start_factor=1.0, end_factor=0.5, total_iters=2), 4),
           [1.0, 0.75, 0.5, 0.5])
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        L.LinearLR(_opt(), start_factor=0)
    with pytest.raises(ValueError, match="Ending multiplicative factor"):
        L.LinearLR(_opt(), end_factor=1.5)


def test_constant_lr():
    opt = _opt()
    _close(_run(opt, L.ConstantLR(opt, factor=0.5, total_iters=2), 4), [0.5, 0.5, 1, 1])


def test_sequential_lr():
    opt = _opt()
    warm = L.ConstantLR(opt, factor=0.1, total_iters=2)
    decay = L.ExponentialLR(opt, gamma=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # no deprecation warning at milestones
        got = _run(opt, L.SequentialLR(opt, [warm, decay], milestones=[2]), 5)
    _close(got, [0.1, 0.1, 1.0, 0.9, 0.81])


def test_sequential_lr_with_linear_warm_up_and_zero_milestone():
    opt = _opt()
    warm = L.LinearLR(opt, start_factor=0.1, total_iters=2)
    decay = L.ExponentialLR(opt, gamma=0.5)
    _close(_run(opt, L.SequentialLR(opt, [warm, decay], milestones=[2]), 5),
           [0.1, 0.55, 1.0, 0.5, 0.25])
    opt = _opt()
    first = L.ConstantLR(opt, factor=0.1, total_iters=10)
    second = L.ExponentialLR(opt, gamma=0.5)
    _close(_run(opt, L.SequentialLR(opt, [first, second], milestones=[0]), 3),
           [1.0, 0.5, 0.25])


def test_sequential_lr_errors():
    opt, other = _opt(), _opt()
    a = L.StepLR(opt, 2)
    with pytest.raises(ValueError, match="expects at least one scheduler"):
        L.SequentialLR(opt, [], [])
    with pytest.raises(ValueError, match="number of milestones to be equal to 2"):
        L.SequentialLR(opt, [a, L.StepLR(opt, 2)], [1, 2])
    with pytest.raises(ValueError, match="expects all schedulers to belong to the same "
                                         "optimizer"):
        L.SequentialLR(opt, [a, L.StepLR(other, 2)], [1])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        L.SequentialLR(opt, [a, L.ReduceLROnPlateau(opt)], [1])


def _one_cycle_expected(total, max_lr, pct, div, final_div, anneal, three_phase=False):
    """OneCycleLR's rates written out: phases end at pct*total-1 (and 2*pct*total-2)."""
    init, lo = max_lr / div, max_lr / div / final_div
    if three_phase:
        phases = [(pct * total - 1, init, max_lr), (2 * pct * total - 2, max_lr, init),
                  (total - 1, init, lo)]
    else:
        phases = [(pct * total - 1, init, max_lr), (total - 1, max_lr, lo)]
    out = []
    for step in range(total):
        start = 0.0
        for i, (end, a, b) in enumerate(phases):
            if step <= end or i == len(phases) - 1:
                t = (step - start) / (end - start)
                out.append(b + (a - b) / 2 * (math.cos(math.pi * t) + 1) if anneal == "cos"
                           else a + (b - a) * t)
                break
            start = end
    return out


@pytest.mark.parametrize("anneal,three_phase", [("cos", False), ("linear", False),
                                                ("cos", True)])
def test_one_cycle_lr(anneal, three_phase):
    opt = _opt(cls=optim.SGD, momentum=0.9)
    sched = L.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy=anneal,
                         three_phase=three_phase)
    got = _run(opt, sched, 10)
    want = _one_cycle_expected(10, 1.0, 0.3, 25.0, 1e4, anneal, three_phase)
    _close(got, want)
    assert got[0] == pytest.approx(0.04) and max(got) == pytest.approx(1.0)
    if not three_phase:
        assert got[-1] == pytest.approx(4e-6)
    with pytest.raises(ValueError, match="Tried to step 11 times. The specified number of "
                                         "total steps is 10"):
        sched.step()


def test_one_cycle_lr_cycles_momentum_and_adam_beta1():
    opt = _opt(cls=optim.SGD, momentum=0.9)
    sched = L.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="linear")
    moms = []
    for _ in range(10):
        moms.append(opt.param_groups[0]["momentum"])
        opt.step()
        if len(moms) < 10:
            sched.step()
    _close(moms[:3], [0.95, 0.9, 0.85])                # down while the rate goes up
    assert moms[-1] == pytest.approx(0.95)
    adam = _opt(cls=optim.Adam)
    L.OneCycleLR(adam, max_lr=0.01, epochs=2, steps_per_epoch=5)
    assert adam.param_groups[0]["betas"] == (0.95, 0.999)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        L.OneCycleLR(_opt(cls=optim.Adagrad), max_lr=0.1, total_steps=5)


@pytest.mark.parametrize("kwargs,message", [
    (dict(total_steps=0), "Expected positive integer total_steps, but got 0"),
    (dict(epochs=2), r"You must define either total_steps OR \(epochs AND steps_per_epoch\)"),
    (dict(epochs=0, steps_per_epoch=2), "Expected positive integer epochs, but got 0"),
    (dict(total_steps=5, pct_start=1.5), "Expected float between 0 and 1 pct_start"),
    (dict(total_steps=5, anneal_strategy="exp"), "anneal_strategy must be one of 'cos' or "
                                                 "'linear', instead got exp"),
    (dict(total_steps=5, max_lr=[1.0, 2.0]), "max_lr must have the same length as "
                                              "optimizer.param_groups. max_lr has 2 values, "
                                              "param_groups has 1."),
])
def test_one_cycle_lr_errors(kwargs, message):
    kwargs = {"max_lr": 1.0, **kwargs}
    with pytest.raises(ValueError, match=message):
        L.OneCycleLR(_opt(), **kwargs)


def test_reduce_lr_on_plateau_patience_and_cooldown():
    opt = _opt()
    sched = L.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1)
    lrs = []
    for metric in [1, 1, 1, 1, 1, 0.5, 0.5, 0.5]:
        opt.step()
        sched.step(metric)
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs == [1, 1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25]
    assert sched.get_last_lr() == [0.25] and sched.last_epoch == 8


def test_reduce_lr_on_plateau_max_mode_threshold_and_min_lr():
    opt = _opt(0.1, groups=2)
    sched = L.ReduceLROnPlateau(opt, mode="max", factor=0.1, patience=0, threshold=0.5,
                                threshold_mode="abs", min_lr=[0.05, 0.0])
    sched.step(1.0)                                  # first value: an improvement
    sched.step(1.4)                                  # +0.4 < threshold 0.5: a bad epoch
    _close([g["lr"] for g in opt.param_groups], [0.05, 0.01])
    sched.step(2.0)                                  # +1.0: better
    _close([g["lr"] for g in opt.param_groups], [0.05, 0.01])
    opt = _opt(1e-8)
    sched = L.ReduceLROnPlateau(opt, patience=0)
    sched.step(1.0)
    sched.step(1.0)
    assert opt.param_groups[0]["lr"] == 1e-8          # change below eps: skipped


def test_reduce_lr_on_plateau_errors():
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        L.ReduceLROnPlateau(_opt(), factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown!"):
        L.ReduceLROnPlateau(_opt(), mode="avg")
    with pytest.raises(ValueError, match="threshold mode pct is unknown!"):
        L.ReduceLROnPlateau(_opt(), threshold_mode="pct")
    with pytest.raises(ValueError, match="expected 1 min_lrs, got 2"):
        L.ReduceLROnPlateau(_opt(), min_lr=[0.1, 0.2])


@pytest.mark.parametrize("make", [
    lambda o: L.StepLR(o, step_size=2, gamma=0.5),
    lambda o: L.MultiStepLR(o, milestones=[1, 3]),
    lambda o: L.ExponentialLR(o, gamma=0.7),
    lambda o: L.CosineAnnealingLR(o, T_max=5, eta_min=0.01),
    lambda o: L.LinearLR(o, start_factor=0.2, total_iters=4),
    lambda o: L.OneCycleLR(o, max_lr=2.0, total_steps=12),
    lambda o: L.SequentialLR(o, [L.LinearLR(o, 0.5, total_iters=2),
                                 L.CosineAnnealingLR(o, T_max=6)], milestones=[3]),
], ids=["step", "multistep", "exp", "cosine", "linear", "onecycle", "sequential"])
def test_state_dict_round_trip(make):
    opt_a = _opt(momentum=0.9)
    a = make(opt_a)
    _run(opt_a, a, 4)
    opt_b = _opt(momentum=0.9)
    b = make(opt_b)
    b.load_state_dict(a.state_dict())
    opt_b.load_state_dict(opt_a.state_dict())
    assert "optimizer" not in a.state_dict()
    assert _run(opt_a, a, 6) == _run(opt_b, b, 6)


def test_lambda_lr_state_dict_keeps_callable_objects_state():
    class Decay:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, epoch):
            return self.rate ** epoch

    a_fn, b_fn = Decay(), Decay()
    a_fn.rate = 0.9
    a = L.LambdaLR(_opt(), [a_fn])
    sd = a.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.9}]
    b = L.LambdaLR(_opt(), lambda e: 1.0)
    assert b.state_dict()["lr_lambdas"] == [None]   # plain functions are not saved
    c = L.LambdaLR(_opt(), [b_fn])
    c.load_state_dict(sd)
    assert b_fn.rate == 0.9


def test_plateau_state_dict_round_trip():
    opt = _opt()
    a = L.ReduceLROnPlateau(opt, patience=1, factor=0.5)
    for m in [3, 2, 2]:
        a.step(m)
    b = L.ReduceLROnPlateau(_opt(), patience=1, factor=0.5)
    b.load_state_dict(a.state_dict())
    assert b.best == 2 and b.num_bad_epochs == 1 and "optimizer" not in a.state_dict()


def test_warnings():
    opt = _opt()
    sched = L.StepLR(opt, 1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)`"):
        sched.step(5)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 ** 5)   # closed form


def test_scheduler_errors():
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        L.StepLR([], 1)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in "
                                       "param_groups\\[0\\] when resuming scheduler with last_epoch >= 0"):
        L.StepLR(_opt(), 1, last_epoch=3)


def test_resuming_with_last_epoch():
    opt = _opt()
    L.ExponentialLR(opt, gamma=0.5)                  # records initial_lr
    opt.param_groups[0]["lr"] = 0.25                 # as after two epochs
    sched = L.ExponentialLR(opt, gamma=0.5, last_epoch=1)
    # PyTorch 2.13: the initial step keeps the resumed rate; the next step decays it
    assert sched.last_epoch == 2 and opt.param_groups[0]["lr"] == 0.25
    assert sched.base_lrs == [1.0]


def test_multiplicative_lr():
    opt = _opt()
    _close(_run(opt, L.MultiplicativeLR(opt, lambda e: 0.5), 3), [1, 0.5, 0.25])


def test_polynomial_lr():
    opt = _opt()
    _close(_run(opt, L.PolynomialLR(opt, total_iters=4), 6), [1, 0.75, 0.5, 0.25, 0, 0])
    opt = _opt()
    _close(_run(opt, L.PolynomialLR(opt, total_iters=4, power=2.0), 5),
           [1, 0.5625, 0.25, 0.0625, 0])


def test_cosine_annealing_warm_restarts():
    opt = _opt()
    got = _run(opt, L.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2), 7)
    # T_cur / T_i per epoch: 0/2, 1/2, 0/4, 1/4, 2/4, 3/4, 0/8
    _close(got, [cos_lr(t, T) for t, T in [(0, 2), (1, 2), (0, 4), (1, 4), (2, 4), (3, 4),
                                            (0, 8)]])
    opt = _opt()
    sched = L.CosineAnnealingWarmRestarts(opt, T_0=2, eta_min=0.1)
    sched.step(1.5)                                   # fractional epochs: per-batch annealing
    _close([opt.param_groups[0]["lr"]], [cos_lr(1.5, 2, 1.0, 0.1)])
    sched.step(5)                                     # T_cur = 5 % 2
    _close([opt.param_groups[0]["lr"]], [cos_lr(1, 2, 1.0, 0.1)])
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        L.CosineAnnealingWarmRestarts(_opt(), T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 0"):
        L.CosineAnnealingWarmRestarts(_opt(), T_0=1, T_mult=0)


def test_chained_scheduler_multiplies_factors():
    opt = _opt()
    sched = L.ChainedScheduler([L.ConstantLR(opt, factor=0.1, total_iters=2),
                                L.ExponentialLR(opt, gamma=0.9)])
    _close(_run(opt, sched, 5), [0.1, 0.09, 0.81, 0.729, 0.6561])
    state = sched.state_dict()
    assert len(state["_schedulers"]) == 2 and "optimizer" not in state
    with pytest.raises(ValueError, match="expects at least one scheduler to be chained"):
        L.ChainedScheduler([])
