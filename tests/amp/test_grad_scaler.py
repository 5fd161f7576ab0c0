"""GradScaler against PyTorch 2.13 on CPU tensors: the scale/growth-tracker trajectory,
parameters (skipped steps included) and state dicts over a few steps with forced inf/nan
gradients; the AMP recipe's loop unmodified; errors and the disabled pass-through."""
import pickle

import numpy as np
import pytest

import nbtorch

torch = pytest.importorskip("torch")


def _model(m, seed=0):
    torch.manual_seed(seed)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
    if m is torch:
        return ref
    model = nbtorch.nn.Sequential(nbtorch.nn.Linear(4, 6), nbtorch.nn.Tanh(),
                                  nbtorch.nn.Linear(6, 3))
    with nbtorch.no_grad():
        for p, q in zip(model.parameters(), ref.parameters()):
            p.copy_(nbtorch.tensor(q.detach().numpy()))
    return model


class _PlainSGD:
    """What GradScaler needs of an optimizer (param_groups, step): PyTorch's side of the
    comparison, without torch.optim (whose first use imports torch._dynamo: seconds)."""

    def __init__(self, params, lr):
        self.param_groups = [{"params": list(params), "lr": lr}]

    def step(self):
        with torch.no_grad():
            for p in self.param_groups[0]["params"]:
                p.add_(p.grad, alpha=-self.param_groups[0]["lr"])
        return "stepped"

    def zero_grad(self):
        for p in self.param_groups[0]["params"]:
            p.grad = None


def _trajectory(m, steps, **kw):
    model = _model(m)
    opt = (m.optim.SGD if m is nbtorch else _PlainSGD)(model.parameters(), lr=0.05)
    if m is nbtorch:                      # the same return value as _PlainSGD.step
        opt.step = lambda step=opt.step: (step(), "stepped")[1]
    scaler = m.amp.GradScaler("cpu", **kw)
    rng = np.random.RandomState(1)
    out = []
    for i in range(steps):
        x = m.tensor(rng.randn(5, 4).astype(np.float32))
        y = m.tensor(rng.randint(0, 3, 5))
        loss = m.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        if i in (2, 5):                   # a gradient overflows: the step is skipped
            next(model.parameters()).grad[0, 0] = float("inf") if i == 2 else float("nan")
        if i % 2:
            scaler.unscale_(opt)          # clipping between unscale_ and step
            m.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        ret = scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        out.append((scaler.get_scale(), scaler._get_growth_tracker(), ret,
                    [p.detach().numpy().copy() for p in model.parameters()]))
    return out, scaler.state_dict()


def test_trajectory_matches_pytorch():
    kw = dict(init_scale=2.0 ** 10, growth_factor=4.0, backoff_factor=0.25, growth_interval=2)
    got, got_sd = _trajectory(nbtorch, 8, **kw)
    want, want_sd = _trajectory(torch, 8, **kw)
    assert got_sd == want_sd
    for (s, g, r, ps), (ts, tg, tr, tps) in zip(got, want):
        assert (s, g, r) == (ts, tg, tr)
        for p, q in zip(ps, tps):
            np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)
    assert [s for s, *_ in got] == [1024.0, 4096.0, 1024.0, 1024.0, 4096.0, 1024.0,
                                    1024.0, 4096.0]


def test_amp_recipe_loop_runs_unmodified():
    """PyTorch's AMP recipe (device and dtype set for the CPU), checkpoint included."""
    torch = nbtorch                                      # noqa: F811  (`import torch`)
    device, use_amp = "cpu", True
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = torch.nn.MSELoss().to(device)
    data = [torch.randn(4, 8, device=device) for _ in range(3)]
    targets = [torch.randn(4, 4, device=device) for _ in range(3)]
    scaler = torch.amp.GradScaler("cpu", enabled=use_amp)
    for epoch in range(2):
        for input, target in zip(data, targets):
            with torch.autocast(device_type=device, dtype=torch.float16, enabled=use_amp):
                output = net(input)
                assert output.dtype is torch.float16
                loss = loss_fn(output, target)
                assert loss.dtype is torch.float32
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=0.1)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
    checkpoint = {"model": net.state_dict(), "optimizer": opt.state_dict(),
                  "scaler": scaler.state_dict()}
    scaler2 = torch.amp.GradScaler("cpu")
    scaler2.load_state_dict(checkpoint["scaler"])
    assert scaler2.state_dict() == scaler.state_dict()
    assert scaler.state_dict()["_growth_tracker"] == 6


def test_disabled_is_a_pass_through():
    model = _model(nbtorch)
    opt = nbtorch.optim.SGD(model.parameters(), lr=0.1)
    scaler = nbtorch.amp.GradScaler("cpu", enabled=False)
    loss = model(nbtorch.ones(1, 4)).sum()
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0
    loss.backward()
    before = next(model.parameters()).detach().clone()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert not nbtorch.equal(before, next(model.parameters()).detach())
    assert scaler.state_dict() == {} and not scaler.is_enabled()


def test_scale_nested_outputs_and_pickle():
    scaler = nbtorch.amp.GradScaler("cpu", init_scale=3.0)
    a, b = nbtorch.ones(2), nbtorch.ones(1)
    out = scaler.scale([a, (b, a)])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    assert out[1][0].tolist() == [3.0]
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable"):
        scaler.scale([3])
    copy = pickle.loads(pickle.dumps(scaler))
    assert copy.get_scale() == 3.0 and copy._scale is None


def test_errors_as_pytorch():
    model = _model(nbtorch)
    opt = nbtorch.optim.SGD(model.parameters(), lr=0.1)
    scaler = nbtorch.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="Attempted unscale_ but _scale is None"):
        scaler.unscale_(opt)
    scaler.scale(model(nbtorch.ones(1, 4)).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this "
                                           r"optimizer since the last update\(\)"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the "
                                           r"last update\(\)"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0)
    scaler.update(2.0)
    assert scaler.get_scale() == 2.0
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        scaler.load_state_dict({})
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0"):
        nbtorch.amp.GradScaler("cpu", growth_factor=1.0)
    half = nbtorch.nn.Linear(2, 2).half()
    hopt = nbtorch.optim.SGD(half.parameters(), lr=0.1)
    scaler.scale(half(nbtorch.ones(1, 2, dtype=nbtorch.float16)).float().sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(hopt)
