"""Optimizers: steps against PyTorch's updates written out in NumPy, state_dict
round trips, parameter groups, and PyTorch's errors for bad input."""
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

STEPS = 4
SHAPES = [(3, 4), (5,)]

# (optimizer class, reference update, list of option sets)
CASES = [
    (optim.SGD, ref.sgd, [
        dict(lr=0.1),
        dict(lr=0.1, momentum=0.9),
        dict(lr=0.05, momentum=0.9, dampening=0.2, weight_decay=0.01),
        dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
        dict(lr=0.05, momentum=0.5, maximize=True, weight_decay=0.1)]),
    (optim.Adam, ref.adam, [
        dict(lr=0.01),
        dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1),
        dict(lr=0.01, amsgrad=True, eps=1e-4),
        dict(lr=0.01, maximize=True, amsgrad=True, weight_decay=0.05)]),
    (optim.AdamW, ref.adamw, [
        dict(lr=0.01),
        dict(lr=0.01, weight_decay=0.2, amsgrad=True),
        dict(lr=0.01, maximize=True, betas=(0.5, 0.6))]),
    (optim.RMSprop, ref.rmsprop, [
        dict(lr=0.01),
        dict(lr=0.01, centered=True),
        dict(lr=0.01, momentum=0.9, alpha=0.9),
        dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1, maximize=True)]),
    (optim.Adagrad, ref.adagrad, [
        dict(lr=0.1),
        dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.3),
        dict(lr=0.1, weight_decay=0.1, maximize=True, eps=1e-3)]),
]
ALL = [(cls, fn, opts) for cls, fn, option_sets in CASES for opts in option_sets]
IDS = [f"{cls.__name__}-{'-'.join(f'{k}={v}' for k, v in opts.items())}" for cls, _, opts in ALL]


def _data(seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]
    return params, grads


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
    for p, s in zip(params, states):               # same state, same keys as PyTorch
        got = opt.state[p]
        keys = {k for k, v in s.items() if isinstance(v, np.ndarray)} | (
            {"step"} if "step" in s else set())
        assert set(got) == keys
        for k, v in s.items():
            if k == "step":
                assert got[k].dtype == torch.float32 and got[k].dim() == 0
                assert got[k].item() == v
            else:
                np.testing.assert_allclose(_value(got[k]), v, rtol=1e-12, atol=1e-14)


FLOAT32_CASES = [1, 7, 10, 14, 17]     # SGD momentum, Adam amsgrad, AdamW, RMSprop, Adagrad


@pytest.mark.parametrize("cls,update,opts", [ALL[i] for i in FLOAT32_CASES],
                         ids=[IDS[i] for i in FLOAT32_CASES])
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
    for step_grads in grads[:2]:
        _set_grads(a_params, step_grads)
        a.step()
    saved = copy.deepcopy(a.state_dict())
    b_params = _leaves([_value(p) for p in a_params])
    b = cls(b_params, **opts)
    b.load_state_dict(saved)
    assert b.state_dict()["param_groups"] == a.state_dict()["param_groups"]
    for step_grads in grads[2:]:
        for params, opt in ((a_params, a), (b_params, b)):
            _set_grads(params, step_grads)
            opt.step()
    for pa, pb in zip(a_params, b_params):
        np.testing.assert_array_equal(_value(pa), _value(pb))
    for pa, pb in zip(a_params, b_params):
        for k, v in a.state[pa].items():
            np.testing.assert_array_equal(np.asarray(v.detach().numpy()),
                                          np.asarray(b.state[pb][k].detach().numpy()))


def test_loaded_state_is_a_copy():
    p = torch.tensor([1.0, 2.0], requires_grad=True)
    a = optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = torch.tensor([1.0, 1.0])
    a.step()
    q = torch.tensor([1.0, 2.0], requires_grad=True)
    b = optim.SGD([q], lr=0.1, momentum=0.9)
    b.load_state_dict(a.state_dict())
    a.step()                                           # moves a's buffer in place
    np.testing.assert_array_equal(_value(b.state[q]["momentum_buffer"]), [1.0, 1.0])


def test_state_dict_layout_matches_pytorch():
    w, b = torch.zeros(2, requires_grad=True), torch.zeros(1, requires_grad=True)
    opt = optim.Adam([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1)
    w.grad = torch.ones(2)
    opt.step()
    sd = opt.state_dict()
    assert list(sd["state"]) == [0]                   # only w has state, keyed by index
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1]["lr"] == 0.5 and sd["param_groups"][0]["lr"] == 0.1
    assert sd["param_groups"][0]["betas"] == (0.9, 0.999)


def test_load_state_dict_checks_groups():
    w, b = torch.zeros(2, requires_grad=True), torch.zeros(1, requires_grad=True)
    two = optim.SGD([{"params": [w]}, {"params": [b]}], lr=0.1)
    one = optim.SGD([w, b], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        one.load_state_dict(two.state_dict())
    other = optim.SGD([{"params": [w, b]}, {"params": [torch.zeros(1, requires_grad=True)]}],
                      lr=0.1)
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that "
                                         "doesn't match the size of optimizer's group"):
        other.load_state_dict(two.state_dict())


def test_load_state_dict_restores_group_options():
    w = torch.zeros(2, requires_grad=True)
    a = optim.SGD([w], lr=0.1, momentum=0.9)
    a.param_groups[0]["lr"] = 0.01
    b = optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.5)
    b.load_state_dict(a.state_dict())
    assert b.param_groups[0]["lr"] == 0.01 and b.param_groups[0]["momentum"] == 0.9


def test_param_groups_have_their_own_options():
    w, b = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    opt = optim.SGD([{"params": [w]}, {"params": b, "lr": 1.0}], lr=0.1)
    w.grad, b.grad = torch.ones(2), torch.ones(2)
    opt.step()
    np.testing.assert_allclose(_value(w), [0.9, 0.9])
    np.testing.assert_allclose(_value(b), [0.0, 0.0])
    assert opt.param_groups[1]["momentum"] == 0        # filled from the defaults
    extra = torch.ones(1, requires_grad=True)
    opt.add_param_group({"params": [extra], "lr": 0.5})
    extra.grad = torch.ones(1)
    opt.step()
    np.testing.assert_allclose(_value(extra), [0.5])


def test_params_without_grad_are_skipped():
    w, frozen = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    opt = optim.Adam([w, frozen], lr=0.1)
    w.grad = torch.ones(2)
    opt.step()
    np.testing.assert_allclose(_value(frozen), [1.0, 1.0])
    assert frozen not in opt.state and w in opt.state


def test_zero_grad():
    w = torch.ones(2, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    w.grad = torch.ones(2)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(_value(w.grad), [0.0, 0.0])
    opt.zero_grad()
    assert w.grad is None


def test_step_with_closure_runs_with_grad_enabled():
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.25)
    seen = []

    def closure():
        opt.zero_grad()
        seen.append(torch.is_grad_enabled())
        loss = (w * w).sum()
        loss.backward()
        return loss

    with torch.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and loss.item() == 5.0
    np.testing.assert_allclose(_value(w), [0.5, -1.0])   # w - 0.25 * 2w


def test_backward_then_step_and_version_counter():
    w = torch.tensor([3.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    before = w._version
    opt.step()
    assert w._version > before
    np.testing.assert_allclose(_value(w), [2.4])


def test_non_contiguous_parameter_is_updated_in_place():
    base = torch.tensor(np.arange(6.0).reshape(2, 3))
    w = base.t().detach().requires_grad_()           # a non-contiguous leaf view
    assert not w.is_contiguous()
    opt = optim.Adam([w], lr=0.1)
    w.grad = torch.ones(3, 2, dtype=torch.float64)
    opt.step()
    want = np.arange(6.0).reshape(2, 3).T - 0.1
    np.testing.assert_allclose(_value(w), want, rtol=1e-7)
    np.testing.assert_allclose(_value(base), want.T, rtol=1e-7)   # storage written


def test_float16_parameters_update_through_float32():
    w = torch.tensor(np.array([1.0, 2.0], np.float16), requires_grad=True)
    opt = optim.SGD([w], lr=0.5, momentum=0.9)
    w.grad = torch.tensor(np.array([1.0, 1.0], np.float16))
    opt.step()
    assert w.dtype == torch.float16 and opt.state[w]["momentum_buffer"].dtype == torch.float16
    np.testing.assert_allclose(_value(w).astype(np.float64), [0.5, 1.5])


def test_step_hooks():
    w = torch.ones(1, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
    w.grad = torch.ones(1)
    opt.step()
    pre.remove()
    opt.step()
    assert calls == ["pre", "post", "post"]


def test_named_parameters():
    w, b = torch.ones(2, requires_grad=True), torch.ones(1, requires_grad=True)
    opt = optim.SGD([("weight", w), ("bias", b)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    with pytest.raises(ValueError, match="with/without names"):
        optim.SGD([("weight", w), b], lr=0.1)


def test_repr_lists_group_options():
    opt = optim.SGD([torch.ones(1, requires_grad=True)], lr=0.1)
    text = repr(opt)
    assert text.startswith("SGD (\nParameter Group 0\n") and "    lr: 0.1\n" in text
    assert text.endswith(")")


# ---------------------------------------------------------------- bad input
def test_empty_parameter_list():
    for cls in (optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop, optim.Adagrad):
        with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
            cls([])
        with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
            cls(iter([]))
    w = torch.ones(1, requires_grad=True)
    opt = optim.SGD([{"params": [w]}, {"params": [], "weight_decay": 0.0}], lr=0.1)
    assert len(opt.param_groups) == 2                 # an empty group is allowed, as in PyTorch


def test_non_tensor_parameters():
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the "
                                        "params is int"):
        optim.SGD([1, 2], lr=0.1)
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an "
                                        "iterable of Tensors or dicts"):
        optim.Adam(torch.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match="param_group must be a dict"):
        optim.SGD([torch.ones(1, requires_grad=True)], lr=0.1).add_param_group([])


def test_sets_duplicates_and_non_leaves_are_refused():
    w = torch.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="ordering of tensors in sets"):
        optim.SGD([{"params": {w}}], lr=0.1)
    assert optim.SGD({w}, lr=0.1).param_groups[0]["params"] == [w]   # PyTorch 2.13 lists it
    with pytest.warns(UserWarning, match="duplicate parameters"):   # PyTorch 2.13 warns
        optim.SGD([w, w], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter "
                                         "group"):
        optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([w * 2], lr=0.1)


@pytest.mark.parametrize("cls,kwargs,message", [
    (optim.SGD, dict(lr=-0.1), "Invalid learning rate: -0.1"),
    (optim.SGD, dict(lr=0.1, momentum=-1), "Invalid momentum value: -1"),
    (optim.SGD, dict(lr=0.1, weight_decay=-1), "Invalid weight_decay value: -1"),
    (optim.SGD, dict(lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero "
                                             "dampening"),
    (optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov"),
    (optim.Adam, dict(lr=-0.1), "Invalid learning rate: -0.1"),
    (optim.Adam, dict(betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (optim.Adam, dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (optim.Adam, dict(eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (optim.Adam, dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    (optim.AdamW, dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    (optim.RMSprop, dict(alpha=-0.5), "Invalid alpha value: -0.5"),
    (optim.RMSprop, dict(momentum=-0.5), "Invalid momentum value: -0.5"),
    (optim.Adagrad, dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    (optim.Adagrad, dict(initial_accumulator_value=-1),
     "Invalid initial_accumulator_value value: -1"),
])
def test_invalid_hyper_parameters(cls, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        cls([torch.ones(1, requires_grad=True)], **kwargs)


def test_implementation_switches():
    w = torch.ones(1, requires_grad=True)
    optim.Adam([w], foreach=False, fused=True)        # accepted: updates are fused anyway
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        optim.SGD([w], foreach=True, fused=True)
    optim.SGD([w * 2], differentiable=True)          # non-leaf params: autograd through


def test_missing_kernel_names_op_and_device():
    from nbtorch.ops.optim_updates import fused_update
    w = torch.ones(1, requires_grad=True)
    with pytest.raises(NotImplementedError, match="no op named 'nope_step'"):
        fused_update("nope_step", w, torch.ones(1), ())


def test_update_ops_refuse_mismatched_tensors():
    from nbtorch.ops.optim_updates import adam_update, sgd_update
    w = torch.ones(3)
    with pytest.raises(RuntimeError, match="sgd_step: grad has shape \\(2,\\) but the "
                                           "parameter has shape \\(3,\\)"):
        sgd_update(w, torch.ones(2), None, lr=0.1, momentum=0, dampening=0, weight_decay=0,
                   nesterov=False, maximize=False, first_step=False)
    with pytest.raises(RuntimeError, match="adam_step: state buffer 1 has shape"):
        adam_update(w, torch.ones(3), torch.zeros(3), torch.zeros(4), None, 1, lr=0.1,
                    beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0, amsgrad=False,
                    maximize=False)
    with pytest.raises(RuntimeError, match="floating-point parameter"):
        sgd_update(torch.ones(3, dtype=torch.int64), torch.ones(3), None, lr=0.1, momentum=0,
                   dampening=0, weight_decay=0, nesterov=False, maximize=False,
                   first_step=False)
    np.testing.assert_array_equal(_value(w), [1.0, 1.0, 1.0])


# ---------------------------------------------------------------- convergence
@pytest.mark.parametrize("make", [lambda p: optim.SGD(p, lr=0.1, momentum=0.9),
                                  lambda p: optim.Adam(p, lr=0.05)], ids=["sgd", "adam"])
def test_linear_regression_recovers_weights(make):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((64, 3))
    true_w, true_b = np.array([1.5, -2.0, 0.5]), 0.7
    x = torch.tensor(x_np)
    y = torch.tensor(x_np @ true_w + true_b)
    w = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = make([w, b])
    for _ in range(300):
        opt.zero_grad()
        r = (x * w).sum(1) + b - y
        loss = (r * r).sum() / 64
        loss.backward()
        opt.step()
    np.testing.assert_allclose(_value(w), true_w, atol=1e-3)
    np.testing.assert_allclose(_value(b), [true_b], atol=1e-3)


def test_user_defined_optimizer_subclass():
    class PlainSGD(optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, dict(lr=lr))

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.sub_(p.grad * group["lr"])

    w = torch.tensor([1.0, 2.0], requires_grad=True)
    opt = PlainSGD([w], lr=0.5)
    calls = []
    opt.register_step_post_hook(lambda o, a, k: calls.append(1))
    w.grad = torch.tensor([1.0, 1.0])
    opt.step()
    np.testing.assert_allclose(_value(w), [0.5, 1.5])
    assert calls == [1] and opt.state_dict()["param_groups"][0]["lr"] == 0.5
    with pytest.raises(ValueError, match="didn't specify a value of required optimization "
                                         "parameter lr"):
        class NeedsLr(optim.Optimizer):
            def __init__(self, params):
                super().__init__(params, dict(lr=optim.optimizer.required))
        NeedsLr([w])


def test_load_state_dict_accepts_string_indices():
    w = torch.ones(2, requires_grad=True)
    a = optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = torch.ones(2)
    a.step()
    sd = a.state_dict()
    sd = {"state": {str(k): v for k, v in sd["state"].items()},
          "param_groups": sd["param_groups"]}
    q = torch.ones(2, requires_grad=True)
    b = optim.SGD([q], lr=0.1, momentum=0.9)
    b.load_state_dict(sd)
    assert q in b.state and "0" not in b.state


def test_functional_update_outside_no_grad_and_deepcopy():
    from nbtorch.ops.optim_updates import adam_update
    w = torch.tensor(np.arange(6.0).reshape(2, 3)).t().detach().requires_grad_()
    m, v = torch.zeros(3, 2, dtype=torch.float64), torch.zeros(3, 2, dtype=torch.float64)
    adam_update(w, torch.ones(3, 2, dtype=torch.float64), m, v, None, 1, lr=0.1, beta1=0.9,
                beta2=0.999, eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False)
    np.testing.assert_allclose(_value(w), np.arange(6.0).reshape(2, 3).T - 0.1, rtol=1e-7)
    opt = optim.Adam([w], lr=0.1)
    w.grad = torch.ones(3, 2, dtype=torch.float64)
    opt.step()
    clone = copy.deepcopy(opt)
    assert clone.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    (cw,) = clone.param_groups[0]["params"]
    assert cw is not w and clone.state[cw]["step"].item() == 1.0


def test_module_training_loop_with_scheduler():
    nn = pytest.importorskip("nbtorch.nn")
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((32, 3)).astype(np.float32)
    true_w = np.array([[0.5, -1.0, 2.0]], np.float32)
    x, y = torch.tensor(x_np), torch.tensor(x_np @ true_w.T + 0.3)
    model = nn.Linear(3, 1)
    criterion = nn.MSELoss()
    opt = optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.0)
    sched = optim.lr_scheduler.StepLR(opt, step_size=100, gamma=0.3)
    for _ in range(300):
        opt.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
    assert loss.item() < 1e-6
    np.testing.assert_allclose(_value(model.weight), true_w, atol=1e-3)
    np.testing.assert_allclose(_value(model.bias), [0.3], atol=1e-3)
