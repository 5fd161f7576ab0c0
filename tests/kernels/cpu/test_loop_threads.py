"""kernels/cpu/loop_threads.py: C loops split over Numba's threads, and the elementwise
calls that take that path (ufunc loops by address, the contiguous loops' C twins)."""
import os

import numpy as np
import pytest

from nbtorch.kernels.cpu import (contiguous_abi, loop_threads, openmp, scalar_operand,
                                 ufuncs, workers)

N = (1 << 17) + 37         # above the parallel threshold, not a multiple of a chunk


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("chunks", [1, 2, 3, 7])
def test_run_loop_matches_numpy(dtype, chunks):
    rng = np.random.default_rng(chunks)
    a = rng.standard_normal(N).astype(dtype)
    b = rng.standard_normal(N).astype(dtype)
    types = np.dtype(dtype).char * 2 + "->" + np.dtype(dtype).char
    ufuncs.loop("add", types)
    address = ufuncs._loop_address("add", types)
    assert address
    out = np.full_like(a, np.nan)
    loop_threads.run_loop(address, (a, b, out), N, chunks)
    assert np.array_equal(out, a + b)
    s = np.asarray(1.5, dtype)                    # a 0-d operand: stride 0
    loop_threads.run_loop(address, (a, s, out), N, chunks)
    assert np.array_equal(out, a + s)
    loop_threads.run_loop(address, [s[()], a, out], N, chunks)    # a NumPy scalar, a list
    assert np.array_equal(out, a + s)


def test_only_float_loops_run_by_address():
    ufuncs.loop("add", "ll->l")                   # integer bodies may raise: the ufunc
    assert ufuncs._loop_address("add", "ll->l") == 0
    ufuncs.loop("where", "?ff->f")                # a bool mask selecting floats: by address
    assert ufuncs._loop_address("where", "?ff->f")


@pytest.mark.parametrize("n", [5000, N])
def test_where_with_a_value_or_an_expanded_gradient_matches_numpy(n, monkeypatch):
    """A bool mask and a 0-d value (`where(x > 0, x, 0.)`) or a gradient expanded from
    one value (every stride 0: x.sum()'s backward) run the vectorised blocked loop."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    mask = x > 0
    for helpers in (False, True):
        monkeypatch.setattr(ufuncs, "use_helpers", lambda key: helpers)
        monkeypatch.setattr(workers, "NUM_THREADS", 2)
        out = np.full(n, np.nan, np.float32)
        ufuncs.kernel("where")(out, mask, x, np.asarray(np.float32(0.5)))
        np.testing.assert_array_equal(out, np.where(mask, x, np.float32(0.5)))
        g = np.lib.stride_tricks.as_strided(np.float32(2.0) * np.ones(1, np.float32),
                                            (n,), (0,))
        ufuncs.kernel("mul")(out, g, x)
        np.testing.assert_array_equal(out, 2 * x)


@pytest.fixture
def parallel_path(monkeypatch):
    """Force the parallel path of large calls; record the loops run by address."""
    monkeypatch.setattr(ufuncs, "use_helpers", lambda key: True)
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    calls = []
    original = loop_threads.run_loop

    def spy(address, operands, n, chunks):
        calls.append(address)
        return original(address, operands, n, chunks)
    monkeypatch.setattr(loop_threads, "run_loop", spy)
    value_loop = scalar_operand.run             # an array and one value: its own loops
    monkeypatch.setattr(scalar_operand, "run",
                        lambda address, *rest: calls.append(address) or value_loop(address,
                                                                                    *rest))
    return calls


def _serial(name, *args, dtype=np.float32):
    out = np.empty(np.broadcast_shapes(*(np.shape(a) for a in args)), dtype)
    for k in range(0, out.shape[0], 1000):       # small calls: the serial loops
        ufuncs.kernel(name)(out[k:k + 1000], *(a[k:k + 1000] if np.ndim(a) else a
                                               for a in args))
    return out


def test_elementwise_calls_take_the_threaded_loops_bit_for_bit(parallel_path):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    for name, args in [("add", (a, b)), ("mul", (a, np.float32(0.3))), ("exp", (a,)),
                       ("tanh", (a,)), ("gelu_grad", (b, a)),
                       ("softplus", (a, np.asarray(2.0, np.float32),
                                     np.asarray(20.0, np.float32)))]:
        out = np.empty_like(a)
        before = len(parallel_path)
        ufuncs.kernel(name)(out, *args)
        assert len(parallel_path) == before + 1, name
        np.testing.assert_array_equal(out, _serial(name, *args), err_msg=name)
    x = a.copy()
    ufuncs.kernel("add")(x, x, b)                 # in place: element for element
    assert np.array_equal(x, a + b)


def test_other_layouts_and_a_forked_child_keep_to_the_helpers(parallel_path, monkeypatch):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((N // 64, 64)).astype(np.float32)
    row = rng.standard_normal(64).astype(np.float32)
    out = np.empty_like(a)
    ufuncs.kernel("add")(out, a, row)             # broadcast row: split along an axis
    t = np.empty_like(a).T
    c = np.ascontiguousarray(a.T)
    ufuncs.kernel("add")(t, c, c)                 # out not C-contiguous, its inputs are
    assert not parallel_path
    assert np.array_equal(out, a + row) and np.array_equal(t, c + c)
    monkeypatch.setattr(openmp, "USABLE", False)
    ufuncs.kernel("exp")(out, a)
    assert not parallel_path
    assert np.array_equal(out.reshape(-1), _serial("exp", a.reshape(-1)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_runs_large_elementwise_calls(monkeypatch):
    monkeypatch.setattr(ufuncs, "use_helpers", lambda key: True)   # parallel calls only
    a = np.arange(N, dtype=np.float32)
    address = ufuncs._loop_address("add", "ff->f") or (ufuncs.loop("add", "ff->f") and
                                                        ufuncs._loop_address("add", "ff->f"))
    scratch = np.empty_like(a)                    # alive while the loop writes it
    bases, steps = loop_threads.operand_pointers((a, a, scratch))
    loop_threads._run_chunks(address, bases, steps, N, 2, 16, 0, 0)      # OpenMP started
    pid = os.fork()
    if pid == 0:                                  # pragma: no cover - the child
        ok = False
        try:
            out = np.empty_like(a)
            for _ in range(3):
                ufuncs.kernel("add")(out, a, a)
                ufuncs.kernel("exp")(out, a / N)
            ok = not openmp.USABLE and np.array_equal(out, _serial("exp", a / N))
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_every_contiguous_loop_has_a_c_twin():
    assert set(contiguous_abi._WRAPPERS) == set(ufuncs.contiguous.CONTIGUOUS_LOOPS)


def test_softplus_tensor_with_python_parameters_splits(parallel_path):
    """F.softplus's beta and threshold reach the split loop as NumPy scalars (once a
    compile error: operand_pointers took only arrays)."""
    import nbtorch
    import nbtorch.nn.functional as F
    x = np.random.default_rng(3).standard_normal(N).astype(np.float32) * 30
    for kwargs in ({}, {"beta": 2.0, "threshold": 5.0}):
        before = len(parallel_path)
        got = F.softplus(nbtorch.from_numpy(x), **kwargs).numpy()
        assert len(parallel_path) == before + 1
        beta, threshold = kwargs.get("beta", 1.0), kwargs.get("threshold", 20.0)
        want = np.where(x * beta > threshold, x, np.logaddexp(0, x * beta) / beta)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


def test_broadcast_blocks_replace_zero_d_inputs_of_long_loops():
    a = np.ones(5000, np.float32)
    s = np.asarray(2.0, np.float32)
    ops, wrap = loop_threads.broadcast_blocks([a, s, a], 5000)
    assert wrap == 0b10 and ops[0] is a and ops[2] is a
    assert ops[1].shape == (loop_threads.BLOCK,) and np.all(ops[1] == 2.0)
    ops, wrap = loop_threads.broadcast_blocks([s, a, np.asarray(1.0, np.float32)], 5000)
    assert wrap == 0b01 and ops[2].ndim == 0             # the output is never wrapped
    ops, wrap = loop_threads.broadcast_blocks([a[:100], s, a[:100]], 100)
    assert wrap == 0 and ops[1] is s                      # short loops keep the stride 0


@pytest.mark.parametrize("n", [loop_threads.BLOCK + 1, 5000, N])
@pytest.mark.parametrize("name, fn", [("sub", np.subtract), ("div", np.divide),
                                      ("mul", np.multiply), ("add", np.add)])
def test_a_broadcast_value_gives_numpys_bits_on_every_path(n, name, fn, monkeypatch):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    s = np.asarray(1.7, np.float32)
    for helpers in (False, True):                # N: serial, then split over threads
        monkeypatch.setattr(ufuncs, "use_helpers", lambda key: helpers)
        monkeypatch.setattr(workers, "NUM_THREADS", 2)
        for args in ((a, s), (s, a), (a, s.reshape(1))):
            out = np.full(n, np.nan, np.float32)
            ufuncs.kernel(name)(out, *args)
            np.testing.assert_array_equal(out, fn(*args), err_msg=f"{name} {args[0].shape}")


def test_tensor_ops_with_python_numbers_match_numpy():
    import nbtorch
    x = np.random.default_rng(5).standard_normal((300, 700)).astype(np.float32)
    t = nbtorch.from_numpy(x)
    f = np.float32
    np.testing.assert_array_equal((t * 0.5).numpy(), x * f(0.5))
    np.testing.assert_array_equal((1 - t).numpy(), f(1) - x)
    np.testing.assert_array_equal((t / 1.5).numpy(), x / f(1.5))
    np.testing.assert_array_equal((t + 2).numpy(), x + f(2))
    y = t.clone()
    y.mul_(3.0)
    np.testing.assert_array_equal(y.numpy(), x * f(3))


def test_in_place_bits_mark_inputs_that_are_the_output():
    a, b = np.ones(5000, np.float32), np.ones(5000, np.float32)
    bases, steps = loop_threads.operand_pointers((a, b, a))
    assert loop_threads.in_place_bits(bases, steps) == 1 << loop_threads.ALIAS_SHIFT
    bases, steps = loop_threads.operand_pointers((a, a, a))
    assert loop_threads.in_place_bits(bases, steps) == 0b11 << loop_threads.ALIAS_SHIFT
    bases, steps = loop_threads.operand_pointers((b, a[:1].reshape(()), a))
    assert loop_threads.in_place_bits(bases, steps) == 0     # a 0-d input: no alias


@pytest.mark.parametrize("n", [loop_threads.BLOCK + 1, 5000, N])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_in_place_loops_read_a_copy_of_each_block_and_give_numpys_bits(n, dtype,
                                                                        monkeypatch):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    s = np.asarray(1.7, dtype)
    for helpers in (False, True):                # N: serial, then split over threads
        monkeypatch.setattr(ufuncs, "use_helpers", lambda key: helpers)
        monkeypatch.setattr(workers, "NUM_THREADS", 2)
        for name, fn, args in [("add", np.add, ("x", b)), ("mul", np.multiply, ("x", s)),
                               ("sub", np.subtract, (b, "x")), ("mul", np.multiply, ("x", "x")),
                               ("relu", lambda v: np.maximum(v, 0), ("x",))]:
            x = a.copy()
            operands = [x if isinstance(v, str) else v for v in args]
            want = fn(*[a if isinstance(v, str) else v for v in args])
            ufuncs.kernel(name)(x, *operands)
            np.testing.assert_array_equal(x, want, err_msg=f"{name} {args} {helpers}")


def test_in_place_tensor_ops_match_out_of_place_ones():
    import nbtorch
    x = np.random.default_rng(6).standard_normal((300, 700)).astype(np.float32)
    y = np.random.default_rng(7).standard_normal((300, 700)).astype(np.float32)
    t, u = nbtorch.from_numpy(x.copy()), nbtorch.from_numpy(y)
    for op in ("add", "mul", "sub", "div", "pow", "atan2"):
        want = getattr(nbtorch, op)(t, u).numpy()
        v = t.clone()
        getattr(v, op + "_")(u)
        np.testing.assert_array_equal(v.numpy(), want, err_msg=op)
    v = t.clone().t()                            # transposed: in its memory order
    v.mul_(u.t()).relu_()
    np.testing.assert_array_equal(v.numpy(), np.maximum(x.T * y.T, 0))


def test_permuted_operands_run_in_memory_order(parallel_path):
    """Operands sharing a transposed or permuted dense layout are viewed in memory order
    (`ufuncs._memory_order`) and take the flat split loops, with NumPy's bits; mixed
    layouts keep the chunked path."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((512, 300)).astype(np.float32).T
    b = rng.standard_normal((512, 300)).astype(np.float32).T
    out = np.empty((512, 300), np.float32).T
    before = len(parallel_path)
    ufuncs.kernel("add")(out, a, b)
    ufuncs.kernel("mul")(out, a, np.asarray(0.5, np.float32))
    assert len(parallel_path) == before + 2
    assert np.array_equal(out, a * np.float32(0.5))
    x = a.copy(order="C")                          # a C-ordered input, a transposed out
    ufuncs.kernel("add")(out, x, b)
    assert len(parallel_path) == before + 2 and np.array_equal(out, x + b)
