"""LR schedulers against PyTorch 2.13: trajectories, resuming, step(epoch), tensor rates.

Each program runs once with ``torch`` and once with ``nbtorch`` as `T`, and the
recorded rates must agree (to float rounding).
"""
import numpy as np
import pytest

import nbtorch

torch = pytest.importorskip("torch")


def _opt(T, tensor_lr=False, kind="sgd"):
    ps = [T.nn.Parameter(T.ones(2) * (i + 1)) for i in range(3)]
    groups = [{"params": [p], "lr": T.tensor(lr) if tensor_lr else lr}
              for p, lr in zip(ps, [0.1, 0.05, 0.01])]
    opt = T.optim.Adam(groups) if kind == "adam" else T.optim.SGD(groups, lr=0.1, momentum=0.9)
    for p in ps:
        p.grad = T.ones(2)
    return opt


def _lrs(opt):
    return [float(g["lr"]) for g in opt.param_groups]


def _both(program):
    """`program(T)` returns a list of numbers/lists: run it on both, compare."""
    a, b = program(torch), program(nbtorch)
    flat = lambda rows: np.hstack([np.ravel(np.asarray(r, dtype=float)) for r in rows])
    np.testing.assert_allclose(flat(b), flat(a), rtol=1e-12, atol=0)


MAKERS = {
    "multiplicative": lambda T, o, **k: T.optim.lr_scheduler.MultiplicativeLR(
        o, lambda e: 0.9 + 0.001 * e, **k),
    "exponential": lambda T, o, **k: T.optim.lr_scheduler.ExponentialLR(o, 0.93, **k),
    "linear": lambda T, o, **k: T.optim.lr_scheduler.LinearLR(o, 0.1, 0.7, 17, **k),
    "polynomial": lambda T, o, **k: T.optim.lr_scheduler.PolynomialLR(o, 30, 2.0, **k),
    "cosine": lambda T, o, **k: T.optim.lr_scheduler.CosineAnnealingLR(o, 13, 0.001, **k),
    "warm_restarts": lambda T, o, **k: T.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        o, 5, 2, 0.001, **k),
    "constant": lambda T, o, **k: T.optim.lr_scheduler.ConstantLR(o, 1 / 3, 9, **k),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_last_epoch_resume_keeps_the_rates_then_continues(name):
    # (!) the initial step of a resumed scheduler (last_epoch=10) applied one more
    # decay (and warm restarts subtracted T_i instead of taking T_cur % T_i)
    def program(T):
        opt = _opt(T)
        for g in opt.param_groups:
            g["initial_lr"] = g["lr"]
        sched = MAKERS[name](T, opt, last_epoch=10)
        out = [_lrs(opt)]
        for _ in range(25):
            opt.step()
            sched.step()
            out.append(_lrs(opt))
        return out
    _both(program)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_step_epoch_forms(name):
    def program(T):
        opt = _opt(T)
        sched = MAKERS[name](T, opt)
        out = []
        for e in (0, 1, 2, 5, 3, 10, 0, 31, 2):
            opt.step()
            if name == "warm_restarts":          # its own step(epoch): no warning
                sched.step(e)
            else:
                with pytest.warns(UserWarning, match="epoch parameter"):
                    sched.step(e)
            out.append(_lrs(opt))
            opt.step()
            sched.step()
            out.append(_lrs(opt))
        return out
    _both(program)


def test_multiplicative_step_zero_multiplies_as_pytorch():
    # (!) MultiplicativeLR.step(0) after some steps left the rate unchanged
    def program(T):
        opt = _opt(T)
        sched = T.optim.lr_scheduler.MultiplicativeLR(opt, lambda e: 0.5)
        opt.step()
        sched.step()
        with pytest.warns(UserWarning, match="epoch parameter"):
            sched.step(0)
        return _lrs(opt)
    _both(program)
    with pytest.raises(TypeError, match="lr_lambda should be a function, but got float"):
        nbtorch.optim.lr_scheduler.MultiplicativeLR(_opt(nbtorch), 0.5)


def _tensor_program(make, plateau=False):
    def program(T):
        opt = _opt(T, tensor_lr=True, kind="adam")
        lr0 = opt.param_groups[0]["lr"]
        sched = make(T, opt)
        out = []
        for i in range(30):
            opt.step()
            sched.step(1.0 + (i % 4 == 0)) if plateau else sched.step()
            assert opt.param_groups[0]["lr"] is lr0           # filled in place
            last = sched.get_last_lr()
            assert isinstance(last[0], T.Tensor) and last[0] is not lr0
            out.append(_lrs(opt) + [float(x) for x in last])
        return out
    return program


@pytest.mark.parametrize("make", [
    lambda T, o: T.optim.lr_scheduler.CyclicLR(o, 0.01, [0.1, 0.2, 0.3], step_size_up=5),
    lambda T, o: T.optim.lr_scheduler.OneCycleLR(o, 0.5, total_steps=40, three_phase=True),
    lambda T, o: T.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 4),
    lambda T, o: T.optim.lr_scheduler.ExponentialLR(o, 0.9),
    lambda T, o: T.optim.lr_scheduler.SequentialLR(o, [
        T.optim.lr_scheduler.LinearLR(o, 0.1, 1.0, 5),
        T.optim.lr_scheduler.StepLR(o, 3)], [5]),
], ids=["cyclic", "one_cycle", "warm_restarts", "exponential", "sequential"])
def test_tensor_learning_rates_are_filled_in_place(make):
    # (!) CyclicLR, OneCycleLR, warm restarts, SequentialLR and ReduceLROnPlateau
    # replaced a tensor group["lr"] with a float; get_last_lr() aliased the tensor
    _both(_tensor_program(make))


def test_plateau_tensor_learning_rates():
    _both(_tensor_program(lambda T, o: T.optim.lr_scheduler.ReduceLROnPlateau(
        o, patience=0, factor=0.5, eps=0.01), plateau=True))


def test_warm_restarts_fractional_epochs():
    def program(T):
        opt = _opt(T)
        sched = T.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, 3, 2, 0.001)
        out = []
        for epoch in range(12):
            for i in range(4):
                opt.step()
                sched.step(epoch + i / 4)
                out.append(_lrs(opt) + [sched.T_cur, sched.T_i, sched.last_epoch])
        for e in (None, 100.5, None):
            sched.step(e)
            out.append(_lrs(opt) + [sched.T_cur, sched.T_i, sched.last_epoch])
        return out
    _both(program)


def test_sequential_nested_and_resumed():
    def program(T):
        L = T.optim.lr_scheduler

        def make(o):
            inner = L.SequentialLR(o, [L.ConstantLR(o, 0.5, 3), L.ExponentialLR(o, 0.9)], [3])
            return L.SequentialLR(o, [inner, L.StepLR(o, 2, 0.5)], [8])
        opt = _opt(T)
        sched = make(opt)
        out = [_lrs(opt)]
        for _ in range(6):
            opt.step()
            sched.step()
            out.append(_lrs(opt))
        opt2 = _opt(T)
        sched2 = make(opt2)
        opt2.load_state_dict(opt.state_dict())
        sched2.load_state_dict(sched.state_dict())
        for _ in range(10):
            opt.step(), opt2.step()
            sched.step(), sched2.step()
            out.append(_lrs(opt) + _lrs(opt2) + list(sched2.get_last_lr()))
        return out
    _both(program)


def test_state_dict_keys_and_plateau_names():
    for T in (torch, nbtorch):
        s = T.optim.lr_scheduler.StepLR(_opt(T), 3)
        assert "_is_initial" in s.state_dict() and s._is_initial is False
        p = T.optim.lr_scheduler.ReduceLROnPlateau(_opt(T))
        assert p._is_better(0.5, 1.0) and not p._is_better(1.0, 1.0)


def test_error_messages_name_the_other_optimizer_as_pytorch():
    # the message embeds repr(optimizer): (!) nbtorch's lacked the blank line between groups
    def message(T):
        L = T.optim.lr_scheduler
        o = _opt(T)
        with pytest.raises(ValueError) as info:
            L.ChainedScheduler([L.StepLR(o, 2), L.StepLR(_opt(T), 2)])
        return str(info.value)
    assert message(nbtorch) == message(torch)
    assert repr(_opt(nbtorch)) == repr(_opt(torch))
    with pytest.raises(KeyError, match="when resuming scheduler with last_epoch >= 0"):
        nbtorch.optim.lr_scheduler.StepLR(_opt(nbtorch), 3, last_epoch=4)


def test_trajectories_with_momentum_cycling():
    def program(T):
        L = T.optim.lr_scheduler
        out = []
        for kind in ("sgd", "adam"):
            o1, o2 = _opt(T, kind=kind), _opt(T, kind=kind)
            s1 = L.CyclicLR(o1, 0.01, 0.1, 4, mode="exp_range", gamma=0.97)
            s2 = L.OneCycleLR(o2, [0.5, 0.3, 0.2], total_steps=65, anneal_strategy="linear")
            for _ in range(64):
                o1.step(), o2.step()
                s1.step(), s2.step()
                key = "betas" if kind == "adam" else "momentum"
                m = [float(np.ravel(g[key])[0]) for g in o1.param_groups + o2.param_groups]
                out.append(_lrs(o1) + _lrs(o2) + m)
        return out
    _both(program)


def test_step_order_warnings_with_a_replaced_optimizer_step():
    # (!) nbtorch never said "Seems like `optimizer.step()` has been overridden", and
    # warned about the step order when a replaced step (set before the scheduler) ran
    import types
    import warnings

    def messages(T, before, calls_original):
        opt = _opt(T)
        orig = type(opt).step
        body = (lambda self, closure=None: orig(self, closure)) if calls_original else (
            lambda self, closure=None: None)
        if before:
            opt.step = types.MethodType(body, opt)
        sched = T.optim.lr_scheduler.StepLR(opt, 2)
        if not before:
            opt.step = types.MethodType(body, opt)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            opt.step()
            sched.step()
        return [str(w.message)[:40] for w in caught], _lrs(opt)
    for before in (True, False):
        for calls_original in (True, False):
            assert (messages(nbtorch, before, calls_original)
                    == messages(torch, before, calls_original))


@pytest.mark.parametrize("make", [
    lambda T, o: T.optim.lr_scheduler.LambdaLR(o, lambda e: 0.5),
    lambda T, o: T.optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.5),
    lambda T, o: T.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1),
], ids=["lambda", "multiplicative", "cyclic"])
def test_param_group_added_after_the_scheduler_is_an_error(make):
    # (!) the new group was silently left unscheduled; PyTorch's strict zips raise
    messages = []
    for T in (torch, nbtorch):
        opt = _opt(T)
        sched = make(T, opt)
        opt.add_param_group({"params": [T.nn.Parameter(T.ones(1))], "lr": 0.3})
        opt.step()
        with pytest.raises(ValueError) as info:
            sched.step()
        messages.append(str(info.value))
    assert messages[1] == messages[0]


def test_constructor_signatures_are_pytorchs():
    # PyTorch 2.13 removed the deprecated `verbose` argument: passing it is a TypeError
    import inspect
    for name in torch.optim.lr_scheduler.__all__:
        ours = inspect.signature(getattr(nbtorch.optim.lr_scheduler, name).__init__)
        theirs = inspect.signature(getattr(torch.optim.lr_scheduler, name).__init__)
        assert ([(p.name, p.default) for p in ours.parameters.values()]
                == [(p.name, p.default) for p in theirs.parameters.values()]), name
    with pytest.raises(TypeError):
        nbtorch.optim.lr_scheduler.StepLR(_opt(nbtorch), 2, verbose=True)
