"""nbtorch.compile and what compiled code may do: assign module state, return detached
values, call backward or seed the generator, run hooks, change the Python values the graph
was traced with (globals, closure variables, module attributes, submodules, the default
dtype). Each is replayed, guarded (a recompile) or run eagerly with the reason - never a
stale graph. (Capture, fusion and autograd through graphs: test_compile.py.)"""
import warnings

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch.jit._compile import CompileError


class _Tracking(nn.Module):
    """Assigns module state in forward, as running averages and caches do."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("avg", torch.zeros(4))
        self.register_buffer("steps", torch.tensor(0))
        self.last = None

    def forward(self, x):
        y = self.lin(x)
        if self.training:
            self.avg = 0.9 * self.avg + 0.1 * y.detach().mean(0)   # a buffer replaced
            self.steps += 1                                         # += on a buffer
        self.last = y.detach()                                      # a plain attribute
        return (y - self.avg).relu()                               # reads the new value


@pytest.mark.parametrize("dynamic", [False, True])
def test_assignments_to_module_state_are_replayed_every_call(dynamic):
    """`self.avg = ...`, `self.steps += 1`, `self.last = y` in forward: each compiled call
    assigns them as eager does (they used to stop the capture, and a plain attribute kept
    the tracer's proxy object, never updated again)."""
    torch.manual_seed(0)
    eager = _Tracking()
    model = _Tracking()
    model.load_state_dict(eager.state_dict())
    fast = torch.compile(model, dynamic=dynamic, fullgraph=True)
    for step, n in enumerate((8, 8, 5, 8)):
        x = torch.randn(n, 4)
        for m in (eager, model):
            m.train(step != 2)
        out, ref = fast(x), eager(x)
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-6)
        out.sum().backward()
        ref.sum().backward()
        np.testing.assert_allclose(model.avg.numpy(), eager.avg.numpy(), atol=1e-6)
        assert model.steps.item() == eager.steps.item()
        assert type(model.last) is torch.Tensor
        np.testing.assert_allclose(model.last.numpy(), eager.last.numpy(), atol=1e-6)
    assert set(model.state_dict()) == {"lin.weight", "lin.bias", "avg", "steps"}
    assert model.steps.item() == 3
    np.testing.assert_allclose(model.lin.weight.grad.numpy(), eager.lin.weight.grad.numpy(),
                               rtol=1e-5, atol=1e-6)


def test_assignments_under_a_custom_backend_and_in_jit_trace():
    model = _Tracking()
    seen = []

    def backend(gm, example_inputs):
        seen.append(gm)
        return gm
    fast = torch.compile(model, backend=backend)
    fast(torch.ones(2, 4))
    fast(torch.ones(2, 4))
    assert len(seen) == 1 and model.steps.item() == 2 and type(model.last) is torch.Tensor
    # jit.trace does not replay assignments: it says so, and leaves the concrete value
    model = _Tracking()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = torch.jit.trace(model, torch.ones(2, 4), check_trace=False)
    said = [str(w.message) for w in caught if w.category is torch.jit.TracerWarning]
    assert [m.split("'")[1] for m in said] == ["avg", "steps", "last"]
    assert all("is not recorded" in m for m in said)
    assert type(model.last) is torch.Tensor and type(model.avg) is torch.Tensor
    traced(torch.ones(2, 4))
    assert model.steps.item() == 2      # the in-place += is replayed; `avg = ...` is not


def test_detached_outputs_next_to_differentiable_ones():
    """A detached output records no node of its own (its node is its source's): the
    compiled backward took it for a differentiable output and failed ("forward() takes 3
    positional arguments but 4 were given"); the output itself required grad."""
    fn = lambda x: ((x * 2).sin(), (x * 3).detach(), x.exp(), x.exp().detach())  # noqa: E731
    fast = torch.compile(fn, fullgraph=True)
    for _ in range(2):
        x = torch.randn(3, dtype=torch.float64, requires_grad=True)
        a, b, c, d = fast(x)
        assert [t.requires_grad for t in (a, b, c, d)] == [True, False, True, False]
        (a.sum() + c.sum()).backward()
        ref = x.detach()
        np.testing.assert_allclose(x.grad.numpy(), (2 * (2 * ref).cos() + ref.exp()).numpy())
        np.testing.assert_allclose(b.numpy(), (3 * ref).numpy())


def test_script_replays_assignments_and_refuses_save_with_the_reason(tmp_path):
    model = _Tracking()
    scripted = torch.jit.script(model)
    scripted(torch.ones(2, 4))
    scripted(torch.ones(3, 4))
    assert model.steps.item() == 2 and model.last.shape == (3, 4)
    with pytest.raises(TypeError, match=r"assigns module attributes in forward \(avg, "
                                        r"steps, last\), which a saved graph cannot replay"):
        torch.jit.save(scripted, str(tmp_path / "m.nbj"))
    with pytest.raises(TypeError, match="not a nbtorch.compile'd one"):
        torch.jit.save(torch.compile(model), str(tmp_path / "m.nbj"))


def test_instance_norm_with_running_stats_compiles_and_trains():
    """Its running statistics are updated by ops (batch norm's in-place update of a
    repeated copy could not be captured: the whole model ran eagerly)."""
    torch.manual_seed(0)
    eager = nn.InstanceNorm2d(3, affine=True, track_running_stats=True)
    model = nn.InstanceNorm2d(3, affine=True, track_running_stats=True)
    model.load_state_dict(eager.state_dict())
    fast = torch.compile(model, fullgraph=True)
    for train in (True, True, False):
        eager.train(train)
        model.train(train)
        x = torch.randn(2, 3, 4, 4)
        out, ref = fast(x), eager(x)
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-5)
        out.sum().backward()
        ref.sum().backward()
        for a, b in ((model.running_mean, eager.running_mean),
                     (model.running_var, eager.running_var),
                     (model.weight.grad, eager.weight.grad)):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_training_steps_inside_compiled_code_run_eagerly_and_correctly():
    """A compiled function calling backward() and optimizer.step() (a whole train step):
    the trace ran both once, for real and unrecorded, so every later call replayed a
    forward without the update and the first loss already differed (0.925 vs 0.961).
    Both now stop the trace before they run: eager fallback with the reason, results
    equal to eager; `nbtorch.compile(opt.step)` likewise (its state stays intact)."""
    import copy
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    twin = copy.deepcopy(model)
    opts = [torch.optim.Adam(m.parameters(), lr=0.1) for m in (model, twin)]

    def step(m, opt, x, y):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss
    fast = torch.compile(step)
    with pytest.warns(UserWarning, match=r"zero_grad\(\) cannot be traced"):
        for _ in range(3):
            x, y = torch.randn(5, 4), torch.randint(0, 3, (5,))
            assert fast(model, opts[0], x, y).item() == step(twin, opts[1], x, y).item()
    for a, b in zip(model.parameters(), twin.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    compiled_step = torch.compile(opts[0].step)
    with pytest.warns(UserWarning, match=r"Adam.step\(\) cannot be traced"):
        model(torch.randn(2, 4)).sum().backward()
        compiled_step()
    assert opts[0].state[model[0].weight]["step"].item() == 4
    with pytest.raises(CompileError, match="zero_grad"):
        torch.compile(step, fullgraph=True)(model, opts[0], x, y)

    def no_zero_grad(m, x, y):
        F.cross_entropy(m(x), y).backward()
    with pytest.raises(CompileError, match="backward"):
        torch.compile(no_zero_grad, fullgraph=True)(model, x, y)


def test_python_state_changed_in_forward_runs_eagerly():
    """`self.calls += 1` in forward: a graph cannot replay a Python value (compiled calls
    left it at 1); the code runs eagerly with the reason. Setting an unchanged value
    (a flag) does not stop the capture."""
    class Counting(nn.Module):
        def __init__(self, count):
            super().__init__()
            self.lin, self.calls, self.count, self.flag = nn.Linear(3, 3), 0, count, True

        def forward(self, x):
            if self.count:
                self.calls += 1
            self.flag = True
            return self.lin(x)
    counting = Counting(True)
    fast = torch.compile(counting)
    with pytest.warns(UserWarning, match="sets Counting.calls = 1, a Python value"):
        for _ in range(3):
            fast(torch.randn(2, 3))
    assert counting.calls == 3
    flagged = torch.compile(Counting(False), fullgraph=True)
    flagged(torch.randn(2, 3))
    assert not flagged.fallback_reasons


SCALE = 2.0


def _scaled(x):
    return x * SCALE


def _calls_helper(x):
    return _scaled(x) + 1


def test_python_values_the_graph_baked_in_are_guarded():
    """A global, a closure variable or a module attribute the trace read is a constant of
    the graph: changing it recompiles (compiled calls kept the old value, silently), as
    torch.compile guards them; an attribute the trace did not read does not."""
    global SCALE
    x = torch.ones(2)
    fast = torch.compile(_scaled)
    through = torch.compile(_calls_helper)          # a global of a function it calls
    try:
        assert fast(x).tolist() == [2.0, 2.0] and through(x).tolist() == [3.0, 3.0]
        SCALE = 3.0
        assert fast(x).tolist() == [3.0, 3.0] and fast.recompiles == 1
        assert through(x).tolist() == [4.0, 4.0] and through.recompiles == 1
    finally:
        SCALE = 2.0

    def make():
        k = 2.0
        g = torch.compile(lambda t: t * k)
        first = g(x).tolist()
        k = 5.0
        return first, g(x).tolist()
    assert make() == ([2.0, 2.0], [5.0, 5.0])

    def rebind():
        w = torch.ones(2)
        g = torch.compile(lambda t: t * w + 1)
        first = g(x).tolist()
        w.mul_(2)                                    # in place: the graph reads it
        second = g(x).tolist()
        w = torch.full((2,), 5.0)                    # another tensor: a recompile
        return first, second, g(x).tolist()
    assert rebind() == ([2.0, 2.0], [3.0, 3.0], [6.0, 6.0])
    model = nn.Sequential(nn.Linear(2, 2), nn.LeakyReLU(0.1))
    fast = torch.compile(model)
    y = torch.randn(3, 2)
    fast(y)
    model.epoch = 3                                  # not read by forward: no recompile
    fast(y)
    assert fast.recompiles == 0
    model[1].negative_slope = 0.5
    np.testing.assert_allclose(fast(y).detach().numpy(), model(y).detach().numpy())
    assert fast.recompiles == 1


def test_no_grad_inside_compiled_code_blocks_gradients():
    """Values made under no_grad() inside the code are detached in the graph: the
    compiled backward differentiated through them (x.grad off by 2.3)."""
    def fn(x):
        with torch.no_grad():
            y = x * 2
            z = y.exp()
        return (z * x).sum() + y.sum()
    fast = torch.compile(fn, fullgraph=True)
    for _ in range(2):
        x = torch.randn(3, dtype=torch.float64, requires_grad=True)
        x2 = x.detach().clone().requires_grad_()
        a, b = fast(x), fn(x2)
        a.backward()
        b.backward()
        np.testing.assert_allclose(a.item(), b.item())
        np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy())


def test_hooks_run_every_call():
    """A user's module hook runs Python each call: a compiled graph ran it at the capture
    only (3 calls, 2 runs), and a hook registered after the capture never. Such modules
    run eagerly with the reason (nbtorch's own hooks, weight_norm's, are recorded ops);
    a tensor hook inside the code, which the compiled backward never ran, likewise."""
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    fast = torch.compile(model)
    x = torch.randn(2, 3)
    fast(x)
    seen = []
    model[0].register_forward_hook(lambda mod, i, o: seen.append(1))
    with pytest.warns(UserWarning, match="forward hook .* registered by user code"):
        for _ in range(3):
            fast(x)
    assert len(seen) == 3 and fast.recompiles == 1
    weighted = nn.utils.parametrizations.weight_norm(nn.Linear(3, 3))
    fast = torch.compile(weighted, fullgraph=True)
    np.testing.assert_allclose(fast(x).detach().numpy(), weighted(x).detach().numpy(),
                               rtol=1e-6)

    def scaled_grad(t):
        y = t * 2
        y.register_hook(lambda g: g * 0)
        return (y * y).sum()
    fast = torch.compile(scaled_grad)
    t = torch.randn(3, requires_grad=True)
    with pytest.warns(UserWarning, match=r"register_hook\(\) on a tensor inside traced code"):
        fast(t).backward()
    assert t.grad.abs().sum().item() == 0


def test_default_dtype_is_guarded_and_seeding_runs_eagerly():
    """Factories in the code read the default dtype: changing it recompiles (the graph kept
    float32). Seeding inside the code happened at the capture only (each compiled call drew
    new numbers where eager repeats them): it runs eagerly with the reason."""
    fast = torch.compile(lambda x: x + torch.arange(3) * 0.5)
    assert fast(torch.zeros(3, dtype=torch.float64)).dtype == torch.float64
    try:
        torch.set_default_dtype(torch.float64)
        assert fast(torch.zeros(3, dtype=torch.float64)).tolist() == [0.0, 0.5, 1.0]
        make = torch.compile(lambda x: torch.ones(2) + x)
        assert make(torch.zeros(1)).dtype == torch.float64
        torch.set_default_dtype(torch.float32)
        assert make(torch.zeros(1)).dtype == torch.float32 and make.recompiles == 1
    finally:
        torch.set_default_dtype(torch.float32)
    seeded = torch.compile(lambda x: (torch.manual_seed(0), x + torch.rand(3))[1])
    with pytest.warns(UserWarning, match=r"manual_seed\(\) inside compiled code"):
        first = seeded(torch.zeros(3)).tolist()
    assert seeded(torch.zeros(3)).tolist() == first


def test_replaced_submodules_recompile():
    """A submodule replaced after the capture (an activation swapped, a layer made deeper,
    one appended): the graph ran the old one (0.6 apart) or failed reading a weight
    that is gone; now the module hierarchy is a guard."""
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2))
    fast = torch.compile(model)
    x = torch.randn(4, 3)
    fast(x)
    changes = [lambda: model.__setitem__(1, nn.Tanh()),
               lambda: model.__setitem__(0, nn.Sequential(nn.Linear(3, 3), nn.Sigmoid())),
               lambda: model.append(nn.Softmax(-1)),
               lambda: model[0].__setitem__(1, nn.Identity())]
    for k, change in enumerate(changes, 1):
        change()
        np.testing.assert_allclose(fast(x).detach().numpy(), model(x).detach().numpy(),
                                   rtol=1e-6, atol=1e-7)
        assert fast.recompiles == k
    fast(x)
    assert fast.recompiles == len(changes)


def test_compiling_under_cprofile_keeps_the_profiler():
    """The capture's profile hook (for the helpers' globals) stands aside while a profiler
    runs: under cProfile the trace failed ("'Profile' object is not callable") and the
    profiler was switched off."""
    import cProfile
    import sys
    prof = cProfile.Profile()
    prof.enable()
    try:
        fast = torch.compile(_calls_helper)
        out = fast(torch.ones(2)).tolist()
        still = sys.getprofile() is prof
    finally:
        prof.disable()
    assert out == [3.0, 3.0] and not fast.fallback_reasons and still


class _Trainer:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))

    def forward(self, x):
        return self.model(x)


def test_compiled_function_calling_a_model_updates_its_statistics_once_per_call():
    """A compiled function (not module) calling a model from its closure or through a
    bound object: the first capture's BatchNorm updates are put back (num_batches_tracked
    counted one call more than eager, and the running statistics drifted)."""
    rng = np.random.default_rng(0)
    xs = [torch.tensor(rng.standard_normal((4, 3)).astype("f4")) for _ in range(3)]
    eager, twin = nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    fast = torch.compile(lambda x: twin(x) * 2)
    t_eager, t_comp = _Trainer(), _Trainer()
    t_comp.model.load_state_dict(t_eager.model.state_dict())
    fast_method = torch.compile(t_comp.forward)
    for x in xs:
        assert torch.allclose(fast(x), eager(x) * 2, atol=1e-6)
        assert torch.allclose(fast_method(x), t_eager.forward(x), atol=1e-6)
    for a, b in ((eager, twin), (t_eager.model[1], t_comp.model[1])):
        assert a.num_batches_tracked.item() == b.num_batches_tracked.item() == 3
        assert torch.allclose(a.running_mean, b.running_mean)
        assert torch.allclose(a.running_var, b.running_var)


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.bn, self.l2 = nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2)

    def forward(self, x):
        return self.l2(self.bn(self.l1(x)).relu())


class _CompiledForward(_Net):
    @torch.compile
    def forward(self, x):
        return self.l2(self.bn(self.l1(x)).relu())


def test_compile_as_a_method_decorator_and_with_the_model_as_an_argument():
    """``@torch.compile`` on forward binds self (it raised "missing 1 required positional
    argument"), one graph per instance; a compiled function given the model as an argument
    puts back its BatchNorm update after the first capture (one update more than eager)."""
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    eager = _Net()
    torch.manual_seed(0)
    decorated = _CompiledForward()
    torch.manual_seed(0)
    passed = _Net()

    @torch.compile
    def loss_of(model, x):
        return model(x).pow(2).sum()

    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (eager, decorated, passed)]
    for _ in range(3):
        x = torch.tensor(rng.standard_normal((6, 4)).astype("f4"))
        losses = [eager(x).pow(2).sum(), decorated(x).pow(2).sum(), loss_of(passed, x)]
        for opt, loss in zip(opts, losses):
            opt.zero_grad()
            loss.backward()
            opt.step()
    for m in (decorated, passed):
        for p, q in zip(eager.parameters(), m.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                       atol=1e-6)
        assert m.bn.num_batches_tracked.item() == eager.bn.num_batches_tracked.item() == 3
        assert torch.allclose(m.bn.running_mean, eager.bn.running_mean, atol=1e-6)
    other = _CompiledForward().eval()
    x = torch.randn(3, 4)
    assert torch.allclose(other(x), _Net.forward(other, x))
