"""Optimizer options, argument errors and sparse gradients against PyTorch 2.13.

Each check builds the same optimizer in ``torch`` and ``nbtorch`` and compares
the outcome: the trajectory, or the exception's type and message.
"""
import warnings

import numpy as np
import pytest

import nbtorch

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(0)
_W = _RNG.standard_normal((3, 4)).astype(np.float32) * 0.5
_X = _RNG.standard_normal((8, 4)).astype(np.float32)
_Y = _RNG.standard_normal((8, 3)).astype(np.float32)


def _params(T):
    return [T.nn.Parameter(T.tensor(_W)), T.nn.Parameter(T.zeros(3))]


def _train(T, make, steps):
    ps = _params(T)
    opt = make(T, ps)
    x, y = T.tensor(_X), T.tensor(_Y)
    for _ in range(steps):
        opt.zero_grad()
        ((T.tanh(x @ ps[0].t() + ps[1]) - y) ** 2).mean().backward()
        opt.step()
    return [p.detach().numpy().copy() for p in ps]


def _outcome(T, make, steps=1):
    """The trajectory's end, or (exception type, message)."""
    try:
        return _train(T, make, steps)
    except Exception as e:                       # noqa: BLE001 - compared with PyTorch's
        return type(e).__name__, str(e)


def _same(make, steps=1):
    want, got = _outcome(torch, make, steps), _outcome(nbtorch, make, steps)
    if isinstance(want, tuple):
        assert got == want
    else:
        assert not isinstance(got, tuple), got
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-7)


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, fused=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, maximize=True, foreach=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1, fused=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, foreach=False)),
    ("AdamW", dict(lr=0.01, amsgrad=True, maximize=True, fused=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.5, fused=True)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, foreach=True)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, foreach=True)),
])
def test_option_combinations_follow_pytorch(name, kwargs):
    _same(lambda T, ps: getattr(T.optim, name)(ps, **kwargs), steps=20)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop",
                                  "Adadelta", "ASGD", "Rprop"])
@pytest.mark.parametrize("foreach", [None, True])
def test_capturable_on_cpu_is_refused_at_step_as_pytorch(name, foreach):
    # (!) capturable=True with CPU parameters was accepted (PyTorch: AssertionError)
    _same(lambda T, ps: getattr(T.optim, name)(ps, capturable=True, foreach=foreach))


@pytest.mark.parametrize("name,kwargs", [
    ("Adam", dict(lr=[0.1, 0.2])),
    ("SGD", dict(lr=[0.1, 0.2])),
    ("RMSprop", dict(lr=[0.1, 0.2])),
    ("Adam", dict(lr=0.1, foreach=True)),
    ("AdamW", dict(lr=0.1, foreach=True, capturable=True)),
    ("Adam", dict(betas=([0.9], 0.99))),
    ("Adam", dict(betas=(0, 0.99))),
    ("Adam", dict(betas=([0.9], [0.99, 0.9]))),
    ("Adam", dict(fused=True, differentiable=True)),
    ("SGD", dict(fused=True, differentiable=True)),
    ("Adagrad", dict(fused=True, foreach=True)),
])
def test_argument_errors_as_pytorch(name, kwargs):
    def make(T, ps):
        kw = {k: (T.tensor(v) if isinstance(v, list) else
                  tuple(T.tensor(b) if isinstance(b, list) else b for b in v)
                  if isinstance(v, tuple) else v) for k, v in kwargs.items()}
        if "lr" in kwargs and not isinstance(kwargs["lr"], list) and "betas" not in kwargs:
            kw["lr"] = T.tensor(kwargs["lr"])
        return getattr(T.optim, name)(ps, **kw)
    _same(make)


def test_tensor_lr_trains_without_warnings():
    # (!) ASGD warned "To copy construct from a tensor" for a tensor lr
    for name in ["ASGD", "Adam", "SGD", "Rprop", "Adafactor"]:
        _same(lambda T, ps: getattr(T.optim, name)(ps, lr=T.tensor(0.01)), steps=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _train(nbtorch, lambda T, ps: T.optim.ASGD(ps, lr=T.tensor(0.01)), 2)


def test_param_group_errors_as_pytorch():
    for T in (torch, nbtorch):
        ps = _params(T)
        opt = T.optim.SGD(set(ps[:1]), lr=0.1)           # a top-level set is listed
        assert opt.param_groups[0]["params"] == ps[:1]
    messages = []
    for T in (torch, nbtorch):
        ps = _params(T)
        opt = T.optim.SGD([("w", ps[0])], lr=0.1)
        got = []
        for bad in ([ps[1]], {"params": [ps[1]]}):
            with pytest.raises((TypeError, ValueError)) as info:
                opt.add_param_group(bad)
            got.append(str(info.value))
        messages.append(got)
    assert messages[1] == messages[0]
    assert repr(nbtorch.optim.SGD(_params(nbtorch), lr=0.1)) == repr(
        torch.optim.SGD(_params(torch), lr=0.1))


def _sparse_program(name, kwargs):
    def run(T):
        with warnings.catch_warnings():             # PyTorch: "Sparse invariant checks ..."
            warnings.simplefilter("ignore", UserWarning)
            return _run(T)

    def _run(T):
        w = T.nn.Parameter(T.arange(15.).reshape(5, 3) / 10)
        opt = getattr(T.optim, name)([w], lr=0.1, **kwargs)
        for i in range(3):
            w.grad = T.sparse_coo_tensor(T.tensor([[1, 3, 1]]), T.tensor(
                [[1., 2., 3.], [0.5, 0.5, 0.5], [1., 0., -1.]]) * (i + 1), (5, 3))
            opt.step((lambda: T.tensor(1.0)) if name == "LBFGS" else None)
        return w.detach().numpy().copy()
    return run


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", {}), ("SGD", dict(momentum=0.9, nesterov=True)), ("SGD", dict(maximize=True)),
    ("Adagrad", dict(lr_decay=0.1)), ("Adagrad", dict(maximize=True)),
    ("SparseAdam", {}), ("SparseAdam", dict(maximize=True, betas=(0.5, 0.9))),
    ("LBFGS", dict(max_iter=2)),
])
def test_sparse_gradients_update_the_touched_rows_as_pytorch(name, kwargs):
    # (!) SparseAdam.step() ignored sparse gradients (returned without updating);
    # SGD, Adagrad and LBFGS raised on them
    program = _sparse_program(name, kwargs)
    np.testing.assert_allclose(program(nbtorch), program(torch), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,kwargs", [
    ("Adam", {}), ("AdamW", {}), ("RMSprop", {}), ("Adadelta", {}), ("Adamax", {}),
    ("NAdam", {}), ("RAdam", {}), ("ASGD", {}), ("Rprop", {}), ("Adafactor", {}),
    ("SGD", dict(weight_decay=0.1)), ("Adagrad", dict(weight_decay=0.1)),
])
def test_sparse_gradient_errors_as_pytorch(name, kwargs):
    messages = []
    for T in (torch, nbtorch):
        with pytest.raises(RuntimeError) as info:
            _sparse_program(name, kwargs)(T)
        messages.append(str(info.value))
    assert messages[1] == messages[0]


def test_sparse_adam_refuses_dense_gradients_as_pytorch():
    _same(lambda T, ps: T.optim.SparseAdam(ps))


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.5, dampening=0.2, maximize=True, foreach=True)),
    ("Adam", dict(lr=0.1, weight_decay=0.1)),
    ("Adam", dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("AdamW", dict(lr=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, initial_accumulator_value=0.2, maximize=True)),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1)),
    ("NAdam", dict(lr=0.1, weight_decay=0.1, momentum_decay=0.01)),
    ("RAdam", dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True)),
    ("ASGD", dict(lr=0.1, t0=1, lambd=0.1, weight_decay=0.1, maximize=True)),
])
def test_differentiable_steps_carry_gradients_as_pytorch(name, kwargs):
    # (!) differentiable=True was refused (NotImplementedError); now every optimizer that
    # takes it runs PyTorch's update as recorded tensor ops
    def program(T):
        w = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
        g0 = T.tensor([0.1, 0.3, -0.2], requires_grad=True)
        p = w.clone()                                 # a non-leaf parameter, as in PyTorch
        opt = getattr(T.optim, name)([p], differentiable=True, **kwargs)
        for i in range(3):
            p.grad = g0 * (i + 1) + w * 0.1
            opt.step()
        grads = T.autograd.grad((p ** 2).sum(), (w, g0))
        return [p.detach().numpy().copy()] + [g.numpy().copy() for g in grads]
    for got, want in zip(program(nbtorch), program(torch)):    # float32 backward rounding
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6 * np.nanmax(np.abs(want)))
    _same(lambda T, ps: T.optim.Adam(ps, differentiable=True))    # leaves: in-place error
    _same(lambda T, ps: T.optim.Adam(ps, differentiable=True, foreach=True))


@pytest.mark.parametrize("name", ["Adamax", "Rprop"])
def test_differentiable_trajectories_where_pytorch_cannot_backward(name):
    # PyTorch's own Adamax/Rprop graphs fail their version checks in backward; the
    # updates themselves still agree
    def program(T):
        p = T.tensor([0.5, -1.0, 2.0], requires_grad=True).clone()
        opt = getattr(T.optim, name)([p], lr=0.1, differentiable=True)
        out = []
        for i in range(4):
            p.grad = T.tensor([0.1, -0.3, 0.2]) * (i - 1.5)
            opt.step()
            out.append(p.detach().numpy().copy())
        return np.array(out)
    np.testing.assert_allclose(program(nbtorch), program(torch), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("kwargs", [dict(), dict(lr=0.02, nesterov=False, ns_steps=3),
                                    dict(lr=0.02, adjust_lr_fn="match_rms_adamw",
                                         weight_decay=0.01)])
def test_muon_follows_pytorch(kwargs):
    # (!) the bfloat16 Newton-Schulz update was added with alpha rounded in bfloat16
    # (errors ~1e-3 of each update); PyTorch adds it in the parameter's float32
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 6)).astype(np.float32)
    grads = [rng.standard_normal((4, 6)).astype(np.float32) for _ in range(4)]

    def program(T):
        p = T.nn.Parameter(T.tensor(w))
        opt = T.optim.Muon([p], **kwargs)
        for g in grads:
            p.grad = T.tensor(g)
            opt.step()
        return p.detach().numpy().copy()
    np.testing.assert_allclose(program(nbtorch), program(torch), rtol=1e-6, atol=1e-7)


def test_swap_in_optimizer_params_and_state_as_pytorch():
    # (!) torch.optim.swap_in_optimizer_params_and_state (PyTorch 2.13) was missing
    import copy

    def program(T):
        ps = [T.nn.Parameter(T.ones(2))]
        opt = T.optim.Adam(ps, lr=0.1)
        ps[0].grad = T.ones(2)
        opt.step()
        swapped = copy.deepcopy(opt.state_dict())
        swapped["param_groups"][0]["lr"] = 0.5
        q = T.nn.Parameter(T.zeros(2))
        q.grad = T.ones(2)
        with T.optim.swap_in_optimizer_params_and_state(opt, {"w": q}, swapped):
            opt.step()
            inside = opt.param_groups[0]["lr"]
        bad = {"state": {5: {}}, "param_groups": swapped["param_groups"]}
        with pytest.raises(RuntimeError) as info:
            with T.optim.swap_in_optimizer_params_and_state(opt, {"w": q}, bad):
                pass
        return (q.detach().tolist(), inside, opt.param_groups[0]["lr"],
                float(swapped["state"][0]["step"]), float(opt.state[ps[0]]["step"]),
                str(info.value))
    assert program(nbtorch) == program(torch)
