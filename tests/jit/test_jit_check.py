"""jit.trace(check_trace=True): re-trace, compare graphs and outputs as torch.jit does."""
import random
import sys
import warnings

import pytest

import nbtorch as torch
import nbtorch.jit as jit
import nbtorch.nn as nn


def branchy(x):
    if x.sum() > 0:
        return x * 2
    return x * 3


def test_diverging_control_flow_raises_tracing_check_error():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jit.TracerWarning)
        with pytest.raises(jit.TracingCheckError) as e:
            jit.trace(branchy, torch.ones(3), check_inputs=[(-torch.ones(3),)])
    msg = str(e.value)
    assert msg.startswith("Tracing failed sanity checks!\nERROR: Graphs differed across "
                          "invocations!\n\tGraph diff:")
    assert "-     %mul : [num_users=1] = call_function[target=operator.mul](args = (%x, 2)" \
        in msg
    assert "+     %mul : [num_users=1] = call_function[target=operator.mul](args = (%x, 3)" \
        in msg
    line = branchy.__code__.co_firstlineno
    assert f"Trace source location:\n\t\t{__file__}:{line + 2}" in msg
    assert f"Check source location:\n\t\t{__file__}:{line + 3}" in msg
    # the same inputs, or the check switched off: no error
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jit.TracerWarning)
        jit.trace(branchy, torch.ones(3), check_inputs=[(torch.full((3,), 2.0),)])
        traced = jit.trace(branchy, torch.ones(3), check_trace=False)
    assert traced(-torch.ones(3)).tolist() == [-2.0, -2.0, -2.0]     # the frozen branch


def test_python_randomness_changes_the_graph():
    with pytest.raises(jit.TracingCheckError, match="Graphs differed across invocations"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", jit.TracerWarning)
            jit.trace(lambda x: x + random.random(), torch.ones(3))


def test_tensor_constants_that_differ_are_reported():
    consts = iter([torch.zeros(3), torch.ones(3), torch.ones(3)])   # made outside the trace
    with pytest.raises(jit.TracingCheckError, match="Tensor-valued Constant nodes differed in "
                                                    "value across invocations"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", jit.TracerWarning)
            jit.trace(lambda x: x + next(consts), torch.ones(3))


def test_factory_calls_are_recorded_not_frozen():
    def fn(x):
        return torch.zeros(2) + torch.arange(2.0) * x

    traced = jit.trace(fn, torch.ones(2))
    assert [n.target.__name__ for n in traced.graph.nodes if n.op == "call_function"] == \
        ["zeros", "arange", "mul", "add"]
    a, b = traced(torch.ones(2)), traced(torch.ones(2))
    a += 1                                  # each call makes fresh tensors
    assert b.tolist() == [0.0, 1.0]


def test_random_ops_warn_nondeterministic_and_mismatch():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jit.trace(lambda x: x * torch.rand(3), torch.ones(3))
    messages = [str(w.message) for w in caught if issubclass(w.category, jit.TracerWarning)]
    assert messages[0].startswith("Trace had nondeterministic nodes. Did you forget call "
                                  ".eval() on your model? Nodes:\n\t%rand")
    assert messages[1].startswith("Output nr 1. of the traced function does not match the "
                                  "corresponding output of the Python function. Detailed "
                                  "error:\nTensor-likes are not close!\n\nMismatched elements:")


def test_dropout_in_training_mode_warns_and_eval_does_not():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jit.trace(model, torch.randn(8, 4))
    assert "nondeterministic nodes" in str(caught[0].message)
    assert "\t%_1 : [num_users=1] = call_module[target=1]" in str(caught[0].message)
    assert "Output nr 1." in str(caught[1].message)
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error", jit.TracerWarning)
        traced = jit.trace(model, torch.randn(8, 4))
    x = torch.randn(2, 4)
    assert torch.allclose(traced(x), model(x))


def test_check_tolerance():
    class Noisy(nn.Module):
        calls = 0

        def forward(self, x):
            Noisy.calls += 1                      # the eager run differs a little
            return x + (1e-4 if Noisy.calls == 3 else 0.0) * torch.ones(1)
    with pytest.warns(jit.TracerWarning, match="Output nr 1"):
        jit.trace(Noisy(), torch.ones(2))
    Noisy.calls = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", jit.TracerWarning)
        jit.trace(Noisy(), torch.ones(2), check_tolerance=1e-3)


def test_check_warnings_point_at_the_trace_call():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        here = sys._getframe().f_lineno + 1
        jit.trace(lambda x: x * torch.rand(3), torch.ones(3))
    assert {(w.filename, w.lineno) for w in caught} == {(__file__, here)}
