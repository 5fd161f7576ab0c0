"""Lowering to ops, elementwise fusion and the generated Numba kernels (CPU).

Each distinct fused group is a cold compile in CI: these tests share a few
programs (float32) across layouts.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn.functional as F
from nbtorch.fx.passes import fused_kernel
from nbtorch.fx.passes.fused_kernel import FusedKernel, _merge
from nbtorch.fx.passes.fusion import fuse, fused_kernels
from nbtorch.fx.passes.lower import CaptureError, ElementwiseCall, FunctionCall, lower


def _t(*shape, seed=0, dtype=np.float32):
    return torch.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def _lowered(fn, *xs):
    traced = torch.jit.trace(fn, xs, check_trace=False)
    return lower(traced.graph_module, *xs)


def ten_ops(x, w, b):
    h = x * w + b
    h = torch.tanh(h) * 0.5 + torch.sigmoid(h)
    h = (h - 0.1).relu() / 1.5
    h = torch.exp(h * 0.1)
    return (h * h).sum()


def test_lower_records_ops_and_elementwise_kernels():
    xs = [_t(64, seed=i) for i in range(3)]
    low = _lowered(ten_ops, *xs)
    targets = [n.target for n in low.graph.nodes if n.op == "call_function"]
    ew = [t.op for t in targets if isinstance(t, ElementwiseCall)]
    assert ew == ["mul", "add", "tanh", "mul", "sigmoid", "add", "sub", "relu", "div", "mul",
                  "exp", "mul"]
    assert isinstance(targets[-1], FunctionCall) and targets[-1].cls.__name__ == "Sum"
    assert all("tensor_meta" in n.meta for n in low.graph.nodes)
    np.testing.assert_allclose(low(*xs).numpy(), ten_ops(*xs).numpy(), rtol=1e-6)
    assert "elementwise.tanh" in str(low.graph) or "tanh" in str(low.graph)


def test_fuse_ten_ops_into_one_kernel():
    xs = [_t(64, seed=i) for i in range(3)]
    low = _lowered(ten_ops, *xs)
    assert fuse(low) == 1
    calls = [n for n in low.graph.nodes if n.op == "call_function"]
    assert len(calls) == 1 and isinstance(calls[0].target, FusedKernel)
    fk = calls[0].target
    assert [s[1] for s in fk.steps][-1] == "sum"
    np.testing.assert_allclose(low(*xs).numpy(), ten_ops(*xs).numpy(), rtol=1e-6)
    src = next(iter(fk.sources().values()))
    assert "@njit(**_LOOP)" in src and "cache=True" in src and "prange" in src
    assert "from nbtorch.kernels.scalar import tanh" in src      # the eager body, reused
    # a group is made for its shape: another one is refused, not computed wrongly
    with pytest.raises(RuntimeError, match="does not broadcast to the fused group's shape"):
        low(*[_t(10, seed=i) for i in range(3)])
    # views at other offsets are fine (same kernel)
    big = _t(200, seed=5)
    zs = [big[3:67], big[70:134], big[136:200]]
    np.testing.assert_allclose(low(*zs).numpy(), ten_ops(*zs).numpy(), rtol=1e-6)


def mixed(x, i, b):
    y = (x * 2 + i) / b            # int operand promoted, broadcast (R,1) and (C,)
    m = (y > 0.5) & (i != 3)       # bool results
    return torch.where(m, y, -y), m


def test_broadcast_promotion_scalars_and_bool_outputs():
    x = _t(4, 1)
    i = torch.tensor(np.arange(5, dtype=np.int64))
    b = _t(5, seed=1).abs() + 0.5
    low = _lowered(mixed, x, i, b)
    assert fuse(low) == 1
    fk = fused_kernels(low)[0]
    assert sorted(o[2] for o in fk.outputs) == ["bool", "float32"]
    got, ref = low(x, i, b), mixed(x, i, b)
    np.testing.assert_allclose(got[0].numpy(), ref[0].numpy(), rtol=1e-6)
    np.testing.assert_array_equal(got[1].numpy(), ref[1].numpy())
    # a transposed operand is strided along the row: kind 's', same values
    bt = _t(5, 4).t()[0].contiguous()
    xt = _t(1, 4, seed=3).t()             # (4, 1) view of a row
    got, ref = low(xt, i, bt.abs() + 0.5), mixed(xt, i, bt.abs() + 0.5)
    np.testing.assert_allclose(got[0].numpy(), ref[0].numpy(), rtol=1e-6)
    # an empty group runs its original nodes
    e = torch.zeros(0, 1)
    low0 = _lowered(mixed, e, i, b)
    assert fuse(low0) == 1
    out = low0(e, i, b)
    assert out[0].shape == (0, 5) and out[1].dtype == torch.bool


def rows(x, b):
    y = x * 2 + b
    return torch.softmax(y, -1), y.mean(-1, keepdim=True) - 1, F.layer_norm(y, (8,))


def test_row_reductions_softmax_mean_layer_norm():
    x, b = _t(5, 8), _t(8, seed=1)
    low = _lowered(rows, x, b)
    assert fuse(low) == 1
    ops = [s[1] for s in fused_kernels(low)[0].steps]
    assert ops.count("amax") == 1 and "rsqrt" in ops and ops.count("mean") == 3
    for got, ref in zip(low(x, b), rows(x, b)):
        assert got.shape == ref.shape
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    # leading dims merge: a 3-D input of the same row length
    x3 = _t(2, 3, 8, seed=4)
    low3 = _lowered(rows, x3, b)
    fuse(low3)
    for got, ref in zip(low3(x3, b), rows(x3, b)):
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    # NaN survives the max reduction (fast-math is 'reassoc' only)
    xn = x.clone()
    xn[1, 3] = float("nan")
    sm = low(xn, b)[0].numpy()
    assert np.isnan(sm[1]).all() and not np.isnan(sm[0]).any()


def test_long_rows_cut_for_threads(monkeypatch):
    monkeypatch.setattr(fused_kernel, "ROW_BLOCK", 16)
    monkeypatch.setattr(fused_kernel, "PARALLEL_THRESHOLD", 8)     # elementwise: 32
    xs = [_t(100, seed=i) for i in range(3)]

    def chain(x, w, b):
        return torch.tanh(x * w + b) * 0.5 + torch.sigmoid(x)
    low = _lowered(chain, *xs)
    fuse(low)
    fk = fused_kernels(low)[0]
    R, C, n_last, lead, st, kinds, parallel = fk.plan(xs)
    assert (R, C, n_last, parallel) == (7, 16, 4, True)
    np.testing.assert_allclose(low(*xs).numpy(), chain(*xs).numpy(), rtol=1e-6)


def test_merge_dims():
    # contiguous (2, 3, 4) and a (4,) bias: the bias blocks merging with the last dim
    assert _merge([2, 3, 4], [[12, 4, 1], [0, 0, 1]], False) == [[6, [4, 0]], [4, [1, 1]]]
    assert _merge([2, 3, 4], [[12, 4, 1], [12, 4, 1]], False) == [[24, [1, 1]]]
    assert _merge([2, 3, 4], [[12, 4, 1]], True) == [[6, [4]], [4, [1]]]
    assert _merge([2, 1, 4], [[4, 99, 1]], False) == [[8, [1]]]


def numpy_double(x):
    return torch.from_numpy(x.detach().numpy() * 2)    # data made in Python


torch.fx.wrap("numpy_double")


def test_inplace_replayed_and_capture_error_names_the_op():
    def f(x):
        y = x * 2
        y.add_(1)                      # an in-place write: one node writing into y
        return y + 1
    x = _t(3)
    low = lower(torch.jit.trace(f, (x,), check_trace=False).graph_module, x)
    assert any(type(n.target).__name__ == "InplaceCall" for n in low.graph.nodes)
    x2 = _t(3, seed=1)
    np.testing.assert_allclose(low(x2).numpy(), f(x2).numpy())

    def g(x):
        return numpy_double(x) + 1
    gm = torch.fx.symbolic_trace(g)
    with pytest.raises(CaptureError, match="computed outside the recorded ops"):
        lower(gm, x)


_SECOND = textwrap.dedent("""
    import numpy as np, nbtorch as torch
    from nbtorch.fx.passes.lower import lower
    from nbtorch.fx.passes.fusion import fuse, fused_kernels
    import tests.jit.test_fusion as t
    xs = [t._t(64, seed=i) for i in range(3)]
    low = t._lowered(t.ten_ops, *xs)
    fuse(low)
    out = low(*xs)
    fk = fused_kernels(low)[0]
    (serial, parallel), = fk._kernels.values()
    print(sum(serial.stats.cache_hits.values()), sum(serial.stats.cache_misses.values()))
    import nbtorch.kernels._generated as g
    print(g.directory())
""")


def test_second_process_compiles_nothing():
    xs = [_t(64, seed=i) for i in range(3)]
    low = _lowered(ten_ops, *xs)
    fuse(low)
    low(*xs)                           # compiled (or loaded) here: the child must load it
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    runs = [subprocess.run([sys.executable, "-c", _SECOND], capture_output=True, text=True,
                           env=env, cwd=root, timeout=300) for _ in range(1)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    hits, misses = map(int, runs[0].stdout.split("\n")[0].split())
    assert (hits, misses) == (1, 0), runs[0].stdout
    directory = runs[0].stdout.split("\n")[1]
    assert not os.path.abspath(directory).startswith(root)
    assert any(f.startswith("fused_mul_add_tanh") for f in os.listdir(directory))


def two_groups(x, w):
    a = torch.tanh(x * 2 + 1)          # group 1 -> read by mm only
    b = torch.tanh((a @ w) * 2 + 1)    # group 2 -> read by mm only (same program)
    return torch.tanh((b @ w) * 2 + 1)


def test_memory_plan_reuses_buffers():
    from nbtorch.fx.passes.memory_plan import PlannedCall, plan_memory
    x, w = _t(6, 6), _t(6, 6, seed=1)
    low = _lowered(two_groups, x, w)
    assert fuse(low) == 3
    plan = plan_memory(low, min_bytes=0)
    assert len(plan.values) == 2 and len(plan.buffer_bytes) == 1     # lifetimes disjoint
    assert plan.saved_bytes == 6 * 6 * 4
    calls = [n.target for n in low.graph.nodes if isinstance(n.target, PlannedCall)]
    assert len(calls) == 2
    ref = two_groups(x, w).numpy()
    np.testing.assert_allclose(low(x, w).numpy(), ref, rtol=1e-5)
    buf = calls[0].arena.buffers()[0]
    out = low(x, w)                     # the same memory serves the next call
    assert calls[0].arena.buffers()[0] is buf
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5)


def test_cuda_sources_compile_to_ptx():
    """The generated CUDA kernels type-check for sm_90 (NVVM, no GPU needed)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        pytest.skip("needs the real numba.cuda compiler, not the simulator")
    from numba import cuda, types
    try:
        from nbtorch.cuda.typecheck import CC, _fake_current_device
        if not cuda.is_available():
            _fake_current_device(CC)
        cuda.compile_ptx(lambda: None, (), cc=CC)
    except Exception as e:
        pytest.skip(f"NVVM not available: {type(e).__name__}")
    from nbtorch.kernels import _generated
    from nbtorch.kernels.cuda import fusion as cuda_fusion
    from nbtorch.kernels.fusion import Program
    f32, f64, i64 = types.float32, types.float64, types.int64
    arr = lambda t, nd=1: types.Array(t, nd, "C")        # noqa: E731
    softmax_like = Program(
        [("c", "float32"), ("b", "float32")], ["float32"],
        [("call", "mul", (("a", 0), ("s", 0)), ("float32", "float32"), "float32"),
         ("call", "add", (("v", 0), ("a", 1)), ("float32", "float32"), "float32"),
         ("reduce", "amax", ("v", 1), "float32"),
         ("call", "sub", (("v", 1), ("v", 2)), ("float32", "float32"), "float32"),
         ("call", "exp", (("v", 3),), ("float32",), "float32"),
         ("reduce", "sum", ("v", 4), "float32"),
         ("call", "div", (("v", 4), ("v", 5)), ("float32", "float32"), "float32")],
        [(("v", 6), "elem", "float32"), (("v", 5), "row", "float32")])
    mixed = Program(
        [("c", "float32"), ("z", "float32"), ("s", "float64")], ["float32"],
        [("call", "tanh", (("a", 0),), ("float32",), "float32"),
         ("call", "add", (("v", 0), ("a", 1)), ("float32", "float32"), "float32"),
         ("call", "gt", (("v", 1), ("s", 0)), ("float32", "float32"), "bool"),
         ("call", "where", (("v", 2), ("a", 2), ("v", 1)), ("bool", "float64", "float64"),
          "float64")],
        [(("v", 3), "elem", "float64")])
    for program, arrays, scalars, outs in (
            (softmax_like, [f32, f32], [f32], [f32, f32]),
            (mixed, [f32, f32, f64], [f32], [f64])):
        module = _generated.load("cuda_fused_check", cuda_fusion.source(program))
        argtypes = [i64, i64, i64, arr(i64), arr(i64, 2)]
        for a in arrays:
            argtypes += [arr(a), i64]
        argtypes += scalars + [arr(o) for o in outs]
        ptx, _ = cuda.compile_ptx(module.fused.py_func, tuple(argtypes), cc=CC)
        assert ".entry" in ptx


def test_fused_row_reduction_over_a_row_of_one_element():
    """softmax over a length-1 last dim (the first step of a growing attention cache): a
    size-1 dim read as stride 0 made every operand 'constant along the row' and the code
    generator raised ValueError inside the compiled call. Rows of one element now fuse."""
    def f(x, b):
        return (x / 2 + b).softmax(-1), (x * b).sum(-1), (x - b).amax(-1)

    fast = torch.compile(f)
    for n in (1, 1, 3):
        x, b = _t(4, 2, n), _t(4, 1, 1, seed=3)
        for got, want in zip(fast(x, b), f(x, b)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_a_stored_value_and_its_row_sum_do_not_depend_on_where_the_output_lies(dt, tmp_path,
                                                                             monkeypatch):
    """A fused pass that stores an elementwise output and sums per row runs the stores and
    the sum in two loops: in one reassoc loop LLVM picked its vector or scalar version by
    where the output lay after the input, and the two summed in different orders."""
    import importlib
    from nbtorch.kernels import fusion
    steps = [("call", "mul", (("a", 0), ("a", 0)), (dt, dt), dt),
             ("reduce", "sum", ("v", 0), dt)]
    program = fusion.Program([("c", dt)], [], steps,
                             [(("v", 0), "elem", dt), (("v", 1), "row", dt)])
    name = f"fused_placement_{dt}"
    (tmp_path / f"{name}.py").write_text(fusion.cpu_source(program, "fused"))
    monkeypatch.syspath_prepend(str(tmp_path))
    serial = importlib.import_module(name).fused_serial
    rng = np.random.default_rng(0)
    for R, C in ((3, 8), (3, 12), (6, 16), (1, 33)):
        n = R * C
        lead, st = np.array([R], np.int64), np.array([[C, 1]], np.int64)
        buf = np.zeros(2 * n + 80, dt)
        x = buf[:n]
        x[:] = rng.standard_normal(n)
        y, s = np.empty(n, dt), np.empty(R, dt)
        serial(R, C, C, lead, st, x, 0, y, s)
        for gap in range(0, 80, 2):
            y2, s2 = buf[n + gap:2 * n + gap], np.empty(R, dt)
            serial(R, C, C, lead, st, x, 0, y2, s2)
            assert y2.tobytes() == y.tobytes() and s2.tobytes() == s.tobytes(), (R, C, gap)
