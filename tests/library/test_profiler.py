"""nbtorch.profiler: recorded ops, counts, shapes, overhead/bytes, table, Chrome trace."""
import json

import numpy as np
import pytest

import nbtorch
from nbtorch import library, profiler
from nbtorch._registry import _KERNELS
from nbtorch.autograd.function import BackwardNode, Function


def _program():
    x = nbtorch.randn(8, 4, requires_grad=True)
    w = nbtorch.randn(4, 3, requires_grad=True)
    with profiler.profile() as prof:
        with profiler.record_function("forward"):
            y = (x @ w).relu()
            loss = y.sum()
        loss.backward()
    return prof, x, w


def _named(prof, name, kind=None):
    return [e for e in prof.events() if e.name == name and (kind is None or e.kind == kind)]


def test_recorded_ops_counts_and_shapes():
    prof, x, w = _program()
    forward = _named(prof, "forward")[0]
    mm = forward.children[0]
    assert mm.name == "Matmul" and mm.kind == "op" and mm.depth == 1
    assert mm.input_shapes == [[8, 4], [4, 3]] and mm.dtype == "float32" and mm.device == "cpu"
    (kernel,) = mm.children
    assert kernel.kind == "kernel" and kernel.name == "matmul"
    assert kernel.input_shapes == [[8, 4], [4, 3], [8, 3]]
    assert kernel.bytes == (32 + 12 + 24) * 4                 # inputs + output
    assert mm.kernel_time == kernel.cpu_time_total
    assert mm.overhead == pytest.approx(mm.cpu_time_total - kernel.cpu_time_total)
    assert [e.name for e in _named(prof, "forward")] == ["forward"]
    assert [c.name for c in forward.children] == ["Matmul", "Relu", "Sum"]
    avg = {(a.key, a.kind): a for a in prof.key_averages()}
    assert avg[("Matmul", "op")].count == 3                  # forward + two in backward
    assert avg[("matmul", "kernel")].count == 3
    assert avg[("MmBackward0", "backward")].count == 1
    assert avg[("ReluBackward0", "backward")].count == 1
    assert avg[("relu", "kernel")].count == 1
    assert x.grad is not None and w.grad is not None          # the program still ran


def test_table_is_sorted_and_limited():
    prof, _, _ = _program()
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=4)
    lines = table.splitlines()
    assert "Name" in lines[1] and "Self CPU %" in lines[1] and "# Calls" in lines[1]
    assert len(lines) == 3 + 4 + 2
    totals = [_seconds(line.split()[4]) for line in lines[3:7]]   # the CPU total column
    assert totals == sorted(totals, reverse=True)
    shapes = prof.key_averages(group_by_input_shape=True).table(row_limit=None)
    assert "[[8, 4], [4, 3]]" in shapes
    with pytest.raises(ValueError, match="unknown sort_by"):
        prof.key_averages().table(sort_by="speed")


def _seconds(text):
    for unit, scale in (("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * scale
    raise AssertionError(text)


def test_chrome_trace_is_valid_json(tmp_path):
    prof, _, _ = _program()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert len(events) == len(prof.events())
    for ev in events:
        assert ev["ph"] == "X" and ev["dur"] >= 0 and ev["ts"] >= 0
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int)
        assert {"device", "input_shapes", "bytes"} <= set(ev["args"])
    names = {ev["name"] for ev in events}
    assert {"forward", "Matmul", "matmul", "MmBackward0"} <= names


def test_compile_time_is_charged_to_the_kernel_that_compiled():
    with library.Library("t_prof") as lib:
        op = lib.elementwise(lambda x: x * 3.0 + 1.0, name="affine")
        x = nbtorch.ones(4, dtype=nbtorch.float64)
        with profiler.profile() as prof:
            op(x)      # first call: compiles the float64 loop
            op(x)      # second call: nothing to compile
        first, second = _named(prof, "t_prof::affine", "kernel")
        assert first.compile_time > 0 and second.compile_time == 0
        np.testing.assert_allclose(op(x).numpy(), 4.0)


def test_hooks_are_removed_after_profiling():
    apply_before = Function.__dict__["apply"]
    node_before = BackwardNode.__dict__["apply"]
    kernels_before = dict(_KERNELS)
    prof, _, _ = _program()
    assert Function.__dict__["apply"] is apply_before
    assert BackwardNode.__dict__["apply"] is node_before
    assert all(_KERNELS[k] is v for k, v in kernels_before.items())
    n = len(prof.events())
    nbtorch.ones(3) + 1                                        # not recorded any more
    assert len(prof.events()) == n


def test_profiles_do_not_nest_and_record_function_outside_is_a_no_op():
    with profiler.record_function("nothing"):
        pass
    with profiler.profile():
        with pytest.raises(RuntimeError, match="already running"):
            with profiler.profile():
                pass
    with profiler.profile(enabled=False) as prof:
        nbtorch.ones(2) + 1
    assert len(prof.events()) == 0


def test_override_while_profiling_is_restored_cleanly():
    builtin = library.kernel("neg", "cpu")
    with profiler.profile() as prof:
        with library.override("neg", "cpu", lambda out, x: np.negative(x, out=out)):
            y = -nbtorch.ones(2)
    assert library.kernel("neg", "cpu") is builtin
    assert y.tolist() == [-1.0, -1.0] and _named(prof, "neg", "kernel")


def test_the_autograd_profiler_api_is_this_profiler():
    """torch.autograd.profiler.profile / record_function, with their legacy arguments."""
    x = nbtorch.ones(3, requires_grad=True)
    with nbtorch.autograd.profiler.profile(use_cuda=False, record_shapes=True,
                                           with_flops=False) as prof:
        with nbtorch.autograd.profiler.record_function("block"):
            (x * x).sum().backward()
    names = [(e.name, e.kind) for e in prof.function_events]
    assert names[0] == ("block", "user") and ("Mul", "op") in names
    assert any(kind == "backward" for _, kind in names)
    assert "Mul" in prof.key_averages().table(row_limit=5)
