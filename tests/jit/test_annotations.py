"""TorchScript's annotations and switches in eager mode (nbtorch/jit/_annotations.py): model
code written for torch.jit defines, runs, traces and scripts here."""
import warnings
from typing import Dict, List, Optional, Tuple

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.jit as jit
import nbtorch.nn as nn


class _Scriptable(nn.Module):
    """Written as TorchScript models are: Final constants, exported and unused methods,
    annotate, jit.isinstance refinement and fork/wait."""
    scale: jit.Final[float]

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = 2.0

    @jit.export
    def features(self, x):
        return self.lin(x).relu()

    @jit.unused
    def debug(self, x):
        return x

    def forward(self, x, extra: Optional[List[torch.Tensor]] = None):
        acc = jit.annotate(List[torch.Tensor], [])
        fut = jit.fork(self.features, x)
        acc.append(jit.wait(fut) * self.scale)
        if jit.isinstance(extra, List[torch.Tensor]):
            for t in extra:
                acc.append(t)
        return torch.stack(acc).sum(0)


def test_a_torchscript_style_model_runs_traces_and_scripts():
    torch.manual_seed(0)
    m = _Scriptable()
    x = torch.randn(3, 4)
    ref = m.lin(x).relu() * 2.0
    np.testing.assert_allclose(m(x).detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    extra = [torch.ones(3, 4)]
    np.testing.assert_allclose(m(x, extra).detach().numpy(), (ref + 1).detach().numpy(),
                               rtol=1e-6)
    assert m.features._nbtorch_exported
    traced = jit.trace(m, x)
    np.testing.assert_allclose(traced(x).detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    scripted = jit.script(m)
    np.testing.assert_allclose(scripted(x).detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(scripted.features(x).detach().numpy(),
                               m.lin(x).relu().detach().numpy(), rtol=1e-6)
    assert jit.interface(_Scriptable) is _Scriptable
    assert jit.script_method(len) is len and jit.script_if_tracing(len)([1, 2]) == 2


ISINSTANCE_CASES = [
    ([1, 2], List[int], True), ([1, "a"], List[int], False), ((1, "a"), Tuple[int, str], True),
    ((1, "a"), Tuple[int, int], False), ((1, 2), Tuple[int], False),
    ({"a": [1.0]}, Dict[str, List[float]], True), ({"a": [1]}, Dict[str, List[float]], False),
    (None, Optional[int], True), (3, Optional[int], True), ("x", Optional[int], False),
    ([[1], [2, 3]], List[List[int]], True), (3, (str, int), True), (3.0, (str, int), False),
    ({"a": 1}, Dict[str, int], True), (True, int, True),
]


@pytest.mark.parametrize("obj, target, expected", ISINSTANCE_CASES)
def test_isinstance_refines_parameterised_containers(obj, target, expected):
    assert jit.isinstance(obj, target) is expected
    try:
        import torch as real
    except ImportError:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert real.jit.isinstance(obj, target) is expected


def test_isinstance_empty_containers_and_bad_targets():
    with pytest.warns(UserWarning, match="inner type of a container is lost"):
        assert jit.isinstance([], List[str])
    with pytest.raises(RuntimeError, match="must be a type or a tuple of types"):
        jit.isinstance(1, [int])
    with pytest.raises(RuntimeError, match=r"use list without a contained type.*list\[int\]"):
        jit.isinstance([1], list)
    with pytest.raises(RuntimeError, match=r"use Dict without contained types"):
        jit.isinstance({}, Dict)
    assert jit.isinstance((1, 2, 3), Tuple[int, ...])    # Python's meaning of the ellipsis
    assert jit.isinstance(torch.ones(2), torch.Tensor)


def test_fork_wait_and_the_fuser_switches():
    fut = jit.fork(lambda a, b=1: a + b, 2, b=5)
    assert isinstance(fut, jit.Future) and fut.done() and jit.wait(fut) == 7
    bad = jit.fork(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        jit.wait(bad)
    with jit.fuser("fuser2"), jit.optimized_execution(False):
        assert torch.ones(2).sum().item() == 2.0
    with pytest.raises(Exception, match="unrecognized fuser option"):
        with jit.fuser("fuser9"):
            pass
    old = jit.set_fusion_strategy([("DYNAMIC", 3)])
    assert jit.set_fusion_strategy(old) == [("DYNAMIC", 3)]
    with pytest.raises(RuntimeError, match="STATIC"):
        jit.set_fusion_strategy([("FAST", 1)])
    jit.enable_onednn_fusion(True)
    assert jit.onednn_fusion_enabled()
    jit.enable_onednn_fusion(False)
    with pytest.warns(UserWarning, match="Only works in script mode"):
        with jit.strict_fusion():
            pass
    assert issubclass(jit.Error, RuntimeError) and issubclass(jit.ScriptWarning, Warning)
    assert jit.Attribute(3, int).value == 3 and jit.annotate(int, 5) == 5


def test_trace_module_traces_forward_and_other_methods():
    m = _Scriptable()
    x = torch.randn(2, 4)
    traced = jit.trace_module(m, {"forward": (x,), "features": (x,)})
    np.testing.assert_allclose(traced(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(traced.features(x).detach().numpy(),
                               m.features(x).detach().numpy(), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="'forward'"):
        jit.trace_module(m, {"features": (x,)})


class _Legacy(jit.ScriptModule):
    """The legacy API: a ScriptModule subclass with @script_method methods."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 3)

    @jit.script_method
    def forward(self, x):
        return self.lin(x).tanh()


def test_script_module_is_the_base_of_traced_scripted_loaded_and_legacy_modules(tmp_path):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    x = torch.randn(4, 2)
    traced, scripted = jit.trace(m, x), jit.script(m)
    scripted(x)
    traced.save(tmp_path / "m.nbj")
    loaded = jit.load(tmp_path / "m.nbj")
    for s in (traced, scripted, loaded):
        assert isinstance(s, jit.ScriptModule) and isinstance(s, nn.Module)
    assert not isinstance(m, jit.ScriptModule)
    assert jit.script(scripted) is scripted and jit.script(traced) is traced
    fn = jit.trace(lambda a: a * 2, x)
    assert isinstance(fn, jit.ScriptFunction)
    assert isinstance(jit.script(lambda a: a + 1), jit.ScriptFunction)
    legacy = _Legacy()
    np.testing.assert_allclose(legacy(x).detach().numpy(),
                               legacy.lin(x).tanh().detach().numpy(), rtol=1e-6)
    assert [n for n, _ in legacy.named_parameters()] == ["lin.weight", "lin.bias"]
    with pytest.raises(TypeError, match=r"_Legacy subclasses ScriptModule \(the legacy API"):
        legacy.save(tmp_path / "legacy.nbj")
    jit.trace(legacy, x).save(tmp_path / "legacy.nbj")
    np.testing.assert_allclose(jit.load(tmp_path / "legacy.nbj")(x).detach().numpy(),
                               legacy(x).detach().numpy(), rtol=1e-6)
