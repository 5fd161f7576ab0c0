"""torch.compiler / torch._dynamo calls that PyTorch code makes around torch.compile:
set_stance, mark_dynamic, graph_break, explain and the markers (nbtorch/compiler.py,
nbtorch/_dynamo)."""
import subprocess
import sys
import warnings

import pytest

import nbtorch as torch
from nbtorch.jit import CompileError


def _wrapper(c):
    return getattr(c, "_compiled", c)


def test_set_stance_force_eager_fail_and_eager_on_recompile():
    calls = []

    def f(x):
        if not torch.compiler.is_compiling():
            calls.append(1)             # counts eager runs (a trace appending would fall back)
        return x.sin() * 2

    c = torch.compile(f)
    c(torch.ones(3))
    c(torch.ones(3))
    traced = len(calls)
    with torch.compiler.set_stance("force_eager"):
        c(torch.ones(3))
        c(torch.ones(3))
    assert len(calls) == traced + 2
    with torch.compiler.set_stance("fail_on_recompile"):
        assert c(torch.ones(3)).shape == (3,)           # a graph it has: fine
        with pytest.raises(RuntimeError, match="Detected recompile when torch.compile stance "
                                               "is 'fail_on_recompile'"):
            c(torch.ones(5))
    before = len(calls)
    with torch.compiler.set_stance("eager_on_recompile"):
        assert torch.equal(c(torch.ones(6)), torch.ones(6).sin() * 2)
        c(torch.ones(6))
    assert len(calls) == before + 2 and _wrapper(c).recompiles == 0

    @torch.compiler.set_stance("force_eager")
    def run_eagerly(x):
        return c(x)
    n = len(calls)
    run_eagerly(torch.ones(3))
    assert len(calls) == n + 1
    c(torch.ones(3))                    # the default stance again outside
    assert len(calls) == n + 1
    with pytest.raises(RuntimeError, match="invalid torch.compiler.set_stance stance"):
        torch.compiler.set_stance("sometimes")
    torch.compiler.set_stance("default")


def test_mark_dynamic_batch_dim_shares_one_entry():
    def f(x):
        return (x * 3).relu().sum(1)

    marked, plain = torch.compile(f), torch.compile(f)
    for n in (2, 3, 5):
        x = torch.randn(n, 4)
        torch._dynamo.mark_dynamic(x, 0)
        assert torch.allclose(marked(x), f(x))
        plain(torch.randn(n, 4))
    assert _wrapper(marked)._dynamic and _wrapper(marked).recompiles == 0
    assert _wrapper(plain).recompiles == 2
    y = torch.randn(2, 3)
    torch._dynamo.mark_dynamic(y, [0, -1])
    assert y._dynamo_dynamic_indices == {0, 1}
    torch._dynamo.mark_static(y, 1)
    assert y._dynamo_dynamic_indices == {0}
    with pytest.raises(IndexError, match="dim 2 out of range"):
        torch._dynamo.mark_dynamic(y, 2)


def test_graph_break_and_explain():
    def f(x):
        y = x.cos()
        torch._dynamo.graph_break()
        return y + 1

    with pytest.warns(UserWarning, match=r"\.f eagerly: torch._dynamo.graph_break\(\) called"):
        assert torch.allclose(torch.compile(f)(torch.zeros(2)), torch.full((2,), 2.0))
    with pytest.raises(CompileError, match="graph_break"):
        torch.compile(f, fullgraph=True)(torch.zeros(2))
    torch._dynamo.graph_break()         # outside compiled code: nothing
    out = torch._dynamo.explain(f)(torch.zeros(2))
    assert out.graph_count == 0 and out.graph_break_count == 1
    assert "graph_break() called" in out.break_reasons[0] and "Graph Break Count: 1" in str(out)
    good = torch._dynamo.explain(lambda x: (x * 2).exp())(torch.zeros(3))
    assert good.graph_count == 1 and good.graph_break_count == 0 and good.op_count >= 1


def test_markers_and_settings():
    def f(x):
        return x
    assert torch.compiler.allow_in_graph(f) is f and torch.compiler.assume_constant_result(f) is f
    assert torch._dynamo.allow_in_graph(f) is f and torch._dynamo.disable(f) is f
    assert "inductor" in torch.compiler.list_backends()
    assert torch.compiler.cudagraph_mark_step_begin() is None
    assert not torch.compiler.is_exporting() and not torch.compiler.is_dynamo_compiling()
    probe = torch.compile(lambda x: x * (2 if torch.compiler.is_compiling() else 3))
    assert probe(torch.ones(1)).item() == 2         # the graph took the compiling branch
    old = torch._dynamo.config.recompile_limit
    torch._dynamo.config.recompile_limit = 3
    try:
        assert torch._dynamo.config.cache_size_limit == 3
    finally:
        torch._dynamo.config.cache_size_limit = old
    assert torch._dynamo.config.suppress_errors is False


def test_tracer_warnings_from_code_without_a_source_file():
    """Code run by `python -c` (a __main__ whose loader has no source): the TracerWarning
    is emitted and compile falls back with the reason (the trace failed with ImportError)."""
    code = (
        "import warnings, nbtorch as torch\n"
        "def f(x):\n"
        "    return x * 2 if x.sum() > 0 else x\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    torch.jit.trace(f, torch.ones(2))\n"
        "    torch.compile(f)(torch.ones(2))\n"
        "print([type(m.message).__name__ for m in w])\n"
        "print(any('converted to a Python boolean at <string>:3' in str(m.message) for m in w))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "TracerWarning" in r.stdout and r.stdout.strip().endswith("True")


def test_set_stance_needs_no_warnings_filter():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.compiler.set_stance("force_eager"):
            assert torch.compile(lambda x: x + 1)(torch.zeros(1)).item() == 1.0


def test_autocast_entered_inside_compiled_or_traced_code_is_part_of_the_graph():
    """Code that enters autocast itself: the graph holds the region (_enter_autocast /
    _exit_autocast nodes, as PyTorch's graphs do), so the compiled code and a traced module
    cast as the code does (the graph held the layer call alone and replayed it in float32
    where eager gave bfloat16, silently); bit-equal to eager, no fallback."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 3)
    x = torch.randn(4, 8)

    def f(x):
        y = lin(x)                                  # float32 before the region
        with torch.autocast("cpu", dtype=torch.bfloat16):
            z = lin(y.relu().repeat(1, 3)[:, :8])
        return y, z, z.float() * 2                  # and after it

    fast = torch.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            got, want = fast(x), f(x)
            for g, w in zip(got, want):
                assert g.dtype is w.dtype and torch.equal(g, w)
    assert [t.dtype for t in got] == [torch.float32, torch.bfloat16, torch.float32]
    assert not _wrapper(fast).fallback_reasons and not torch.is_autocast_enabled("cpu")
    traced = torch.jit.trace(f, x)
    assert "_enter_autocast" in traced.code and "_exit_autocast" in traced.code
    for g, w in zip(traced(x), f(x)):
        assert g.dtype is w.dtype and torch.equal(g, w)
    assert not torch.is_autocast_enabled("cpu")
    outer = torch.compile(lambda x: lin(x).relu())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert outer(x).dtype is torch.bfloat16
        assert outer(x).dtype is torch.float32
    assert not _wrapper(outer).fallback_reasons


def test_autocast_inside_a_trace_leaves_no_tracer_function_behind():
    """Autocast's first scan of the modules during a trace took the tracer's wrappers for
    the originals and put them back after every later region (F.linear stayed the trace's
    wrapper, and jit.save refused it). A fresh process, as the scan happens once."""
    code = (
        "import warnings, nbtorch as torch, nbtorch.nn.functional as F\n"
        "orig = F.linear\n"
        "with torch.autocast('cpu'):\n"
        "    pass\n"
        "lin, x = torch.nn.Linear(8, 3), torch.randn(4, 8)\n"
        "def f(x):\n"
        "    with torch.autocast('cpu', dtype=torch.bfloat16):\n"
        "        return lin(x)\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore')\n"
        "    torch.jit.trace(f, x, check_trace=False)\n"
        "    torch.compile(f)(x)\n"
        "with torch.autocast('cpu'):\n"
        "    pass\n"
        "print(F.linear is orig)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "True"


def test_compiled_graph_under_autocast_equals_eager_bit_for_bit():
    """A graph captured under autocast holds its casts and runs its ops with autocast
    suspended, as eager ops run inside autocast's wrappers (Addmm's float32 product of
    bfloat16 inputs was cast down to bfloat16 again: 1 ulp from eager)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    fast = torch.compile(model)
    x = torch.randn(5, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        for _ in range(2):
            got, want = fast(x), model(x)
            assert got.dtype is want.dtype is torch.bfloat16 and torch.equal(got, want)
            assert torch.is_autocast_enabled("cpu")      # the region is as it was
    assert not _wrapper(fast).fallback_reasons


def test_compiled_functional_calls_and_layers_under_autocast_equal_eager():
    """Functions called directly in compiled code (F.linear, torch.matmul) under an outer
    autocast ran without its casts (float32 results, silently: the graph named the
    function itself, not autocast's wrapper), and a Transformer layer in eval mode failed
    to trace under autocast (its layers run for real mixed float32 and bfloat16): both
    compile now and equal eager bit for bit."""
    torch.manual_seed(0)
    w, b = torch.randn(3, 8, requires_grad=True), torch.randn(3, requires_grad=True)
    x = torch.randn(4, 8)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
    cases = [(lambda x: F_linear(x, w, b), x), (lambda x: torch.matmul(x, w.t()).relu(), x),
             (layer, torch.randn(2, 5, 8))]
    for fn, arg in cases:
        fast = torch.compile(fn)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            want, got = fn(arg), fast(arg)
        assert got.dtype is want.dtype and torch.equal(got, want)
        assert not _wrapper(fast).fallback_reasons


def F_linear(x, w, b):
    return torch.nn.functional.linear(x, w, b)
