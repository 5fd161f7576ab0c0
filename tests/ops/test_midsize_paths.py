"""The elementwise paths of mid-size CPU calls (4K to 128K elements): NumPy's own loops
for the IEEE arithmetic ops, the pre-resolved ufunc call for dense same-shape operands,
pow's special exponents, masked_fill's gradient. Each must give the bits of the path it
replaced."""
import numpy as np
import pytest

import nbtorch
from harness import awkward_floats
from nbtorch.autograd import gradcheck
from nbtorch.kernels.cpu import ufuncs

SIZES = (5000, 20000, 70000)        # under, at and past ufuncs.BLOCKED_MIN, all serial


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_twins_give_the_numba_loops_bits(name, dtype):
    """Serial calls of add/sub/mul/div take NumPy's loop: out of place, with a scalar
    operand and in place, bit for bit what the Numba loop computes."""
    types = np.dtype(dtype).char * 2 + "->" + np.dtype(dtype).char
    # the reference names its loop: NumPy's own choice is the first loop of the ufunc that
    # takes the inputs, another one ('dd->d', 'FF->F') where another test of the process
    # compiled that one first
    numba_loop = ufuncs.loop(name, types)
    run = ufuncs.kernel(name)
    for n in SIZES:
        a, b = awkward_floats(n, dtype, 1), awkward_floats(n, dtype, 2)
        scalar = np.asarray(dtype(0.37))
        for args in ((a, b), (a, scalar), (scalar, b)):
            want = np.empty(n, dtype)
            with np.errstate(all="ignore"):
                numba_loop(*args, want, signature=types)
            got = np.empty(n, dtype)
            run(got, *args)
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
        inplace = a.copy()                              # x.op_(y): out is the first input
        run(inplace, inplace, b)
        want = np.empty(n, dtype)
        with np.errstate(all="ignore"):
            numba_loop(a, b, want, signature=types)
        np.testing.assert_array_equal(inplace.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("n", SIZES)
def test_inplace_and_scalar_ops_match_numpy(n):
    x = nbtorch.tensor(awkward_floats(n, np.float32))
    y = nbtorch.tensor(awkward_floats(n, np.float32, 5))
    xn, yn = x.numpy().copy(), y.numpy()
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal((x * 2.5).numpy(), xn * np.float32(2.5))
        np.testing.assert_array_equal((1.5 - x).numpy(), np.float32(1.5) - xn)
        np.testing.assert_array_equal((x / y).numpy(), xn / yn)
        np.testing.assert_array_equal((x * y).numpy(), xn * yn)
        x.add_(y)
        np.testing.assert_array_equal(x.numpy(), xn + yn)
        x.mul_(0.5)
        np.testing.assert_array_equal(x.numpy(), (xn + yn) * np.float32(0.5))


@pytest.mark.parametrize("op", ["maximum", "atan2", "hypot"])
def test_dense_same_shape_ops_mid_size(op):
    """The pre-resolved ufunc call for dense same-shape operands (no SIMD loop of its own)."""
    x = nbtorch.tensor(awkward_floats(20000, np.float64))
    y = nbtorch.tensor(awkward_floats(20000, np.float64, 3))
    got = getattr(nbtorch, op)(x, y).numpy()
    want = getattr(nbtorch, op)(x[:4000], y[:4000]).numpy()     # the small path
    np.testing.assert_array_equal(got[:4000], want)
    with np.errstate(all="ignore"):
        ref = getattr(np, {"maximum": "maximum", "atan2": "arctan2", "hypot": "hypot"}[op])(
            x.numpy(), y.numpy())
    np.testing.assert_allclose(got, ref, rtol=1e-15, atol=0)


@pytest.mark.parametrize("exponent", [1, 2, 0.5, -0.5, -1, 1.0, 3, 0])
def test_pow_special_exponents_match_pytorch_values(exponent):
    """1 copies, 2 squares, 0.5 is sqrt, -0.5 rsqrt, -1 the reciprocal (PyTorch's
    pow_tensor_scalar): -0.0 ** 0.5 is -0.0 and (-inf) ** 0.5 NaN, as PyTorch gives."""
    vals = np.array([4.0, 0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 2.5, 1e-30], np.float32)
    got = nbtorch.tensor(vals).pow(exponent).numpy()
    with np.errstate(all="ignore"):
        want = {1: vals, 2: vals * vals, 0.5: np.sqrt(vals), -0.5: 1 / np.sqrt(vals),
                -1: 1 / vals}.get(exponent)
    if want is None:
        want = np.power(vals, np.float32(exponent))
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_pow_special_exponents_keep_integer_and_complex_rules():
    assert nbtorch.tensor([4, 9]).pow(0.5).tolist() == [2.0, 3.0]      # int -> float
    assert nbtorch.tensor([4, 9]).pow(1).dtype is nbtorch.int64
    z = nbtorch.tensor([-4 + 0j]).pow(0.5)
    assert abs(z.item() - 2j) < 1e-6
    assert nbtorch.tensor([2.0]).pow(-1, out=nbtorch.empty(1)).tolist() == [0.5]


@pytest.mark.parametrize("exponent", [1, 2, 0.5, -0.5, -1, 3])
def test_pow_special_exponent_gradients(exponent):
    x = nbtorch.rand(6, dtype=nbtorch.float64) + 0.5
    x.requires_grad_(True)
    assert gradcheck(lambda t: t.pow(exponent), (x,))
    x.grad = None
    (x ** exponent).sum().backward()
    xn = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), exponent * xn ** (exponent - 1), rtol=1e-12)


def test_square_gradient_is_twice_x_bitwise():
    x = nbtorch.tensor(awkward_floats(20000, np.float32), requires_grad=True)
    g = nbtorch.tensor(awkward_floats(20000, np.float32, 9))
    x.pow(2).backward(g)
    with np.errstate(all="ignore"):
        want = g.numpy() * (x.detach().numpy() * np.float32(2))
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_masked_fill_gradient_zeroes_the_masked_places():
    x = nbtorch.randn(300, 70, requires_grad=True)
    mask = x.detach() > 0.5
    g = nbtorch.randn(300, 70)
    x.masked_fill(mask, 3.0).backward(g)
    np.testing.assert_array_equal(x.grad.numpy(), np.where(mask.numpy(), 0, g.numpy()))
    v = nbtorch.tensor(2.0, requires_grad=True)
    x.grad = None
    x.masked_fill(mask, v).sum().backward()
    assert v.grad.item() == mask.sum().item()
    assert gradcheck(lambda t: t.masked_fill(mask[:4, :5], 0.0),
                     (nbtorch.randn(4, 5, dtype=nbtorch.float64, requires_grad=True),))



LARGE = 150_000            # past _MID_LIMIT (128K): the large dense path

LARGE_OPS = {"x + y": lambda x, y: x + y, "x * y": lambda x, y: x * y,
             "x / y": lambda x, y: x / y, "x > y": lambda x, y: x > y,
             "maximum": lambda x, y: nbtorch.maximum(x, y),
             "atan2": lambda x, y: nbtorch.atan2(x, y), "exp": lambda x, y: x.exp(),
             "tanh": lambda x, y: x.tanh(), "sigmoid": lambda x, y: nbtorch.sigmoid(x),
             "relu": lambda x, y: x.relu(), "neg": lambda x, y: -x,
             "x - y": lambda x, y: x - y, "x * 0.5": lambda x, y: x * 0.5,
             "1 - x": lambda x, y: 1.0 - x, "x / 3": lambda x, y: x / 3.0}


def _without_dense_path(monkeypatch, fn):
    """fn() with every elementwise call taking the kernel's own checks (the path before
    `ufuncs.dense_call`)."""
    from nbtorch.ops._small_calls import _SMALL
    saved = dict(_SMALL)
    monkeypatch.setattr(ufuncs, "dense_call", lambda kernel, types: None)
    monkeypatch.setattr(ufuncs, "dense_value_call", lambda kernel, types: None)
    _SMALL.clear()
    try:
        return fn()
    finally:
        monkeypatch.undo()
        _SMALL.clear()
        _SMALL.update(saved)


@pytest.mark.parametrize("name", list(LARGE_OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(LARGE,), (300, 500), (1, LARGE), (2, 1, LARGE // 2)])
def test_large_dense_calls_give_the_kernels_bits(monkeypatch, name, dtype, shape):
    """Dense same-shape operands from _MID_LIMIT take the kernel's split path directly
    (`ufuncs.dense_call`): the loop and split the kernel's own checks choose, so the
    same bits, split and serial ((1, n) stays rows.py's, as before)."""
    make = LARGE_OPS[name]
    n = int(np.prod(shape))
    x = nbtorch.tensor(awkward_floats(n, dtype, 11).reshape(shape))
    y = nbtorch.tensor(awkward_floats(n, dtype, 12).reshape(shape))
    got = [make(x, y) for _ in range(3)]            # the first call of a kind is serial
    want = _without_dense_path(monkeypatch, lambda: make(x, y))
    for g in got:
        assert g.dtype == want.dtype and g.shape == want.shape
        np.testing.assert_array_equal(g.numpy().view(np.uint8), want.numpy().view(np.uint8))
    nbtorch.set_num_threads(1)
    try:
        serial = make(x, y)
    finally:
        nbtorch.set_num_threads(2)
    np.testing.assert_array_equal(serial.numpy().view(np.uint8), want.numpy().view(np.uint8))


def test_large_dense_calls_take_the_judged_streaming_loop(monkeypatch):
    """A large dense float32 product runs `stream.py`'s 256-bit loop through the compiled
    judge of its size class, the same bits as NumPy's."""
    from nbtorch.kernels.cpu import spin_threads, stream
    if not spin_threads.SUPPORTED:
        pytest.skip("no spinning helpers here")
    calls = []
    judged = spin_threads._dispatch_dense_judged
    monkeypatch.setattr(spin_threads, "_dispatch_dense_judged",
                        lambda *args: calls.append((args[2], args[4], args[5])) or
                        judged(*args))
    x = nbtorch.rand(LARGE)
    ys = [x * x for _ in range(3)]
    assert [(a, n) for a, n, _ in calls] == [(stream.address("mul", "ff->f"), LARGE)] * 3
    assert calls[0][2] is calls[2][2] and calls[2][2][spin_threads.J_CALLS] >= 3
    for y in ys:
        np.testing.assert_array_equal(y.numpy(), x.numpy() * x.numpy())


def test_large_dense_calls_leave_a_swapped_kernel_to_itself():
    from nbtorch import _registry
    a = nbtorch.rand(LARGE)
    a + a
    seen = []

    def my_add(out, x, y):
        seen.append(out.shape)
        np.add(x, y, out=out)
    _registry.register_kernel("add", "cpu", my_add, override=True)
    try:
        b = a + a
    finally:
        _registry.unregister_kernel("add", "cpu")
    assert seen == [(LARGE,)] and np.array_equal(b.numpy(), a.numpy() * 2)
    x = nbtorch.arange(LARGE, dtype=nbtorch.int64)
    assert ((x + x) == 2 * x).all()


def test_large_dense_operators_skip_the_op_layers(monkeypatch):
    """``a + b`` / ``x.sqrt()`` / ``x * 0.37`` on large dense unrecorded operands go from
    the operator straight to the split path (`_small_calls._dense_result`), with the same
    bits; anything else (a strided operand, a recorded call) still takes the layers."""
    from nbtorch.ops import _elementwise
    x = nbtorch.tensor(awkward_floats(LARGE, np.float32, 13))
    y = nbtorch.tensor(awkward_floats(LARGE, np.float32, 14))
    want_add, want_exp = (x + y).numpy(), x.sqrt().numpy()
    want_scaled = x.numpy() * np.float32(0.37)
    x + y, x.sqrt(), x * 0.37       # (a first call may compile the loop: then it resolves)
    layers = []
    run = _elementwise.run_elementwise
    monkeypatch.setattr(_elementwise, "run_elementwise",
                        lambda *args, **kwargs: layers.append(args[0]) or run(*args, **kwargs))
    got_add, got_exp, got_scaled = x + y, x.sqrt(), x * 0.37
    assert layers == []
    np.testing.assert_array_equal(got_add.numpy().view(np.uint8), want_add.view(np.uint8))
    np.testing.assert_array_equal(got_exp.numpy().view(np.uint8), want_exp.view(np.uint8))
    np.testing.assert_array_equal(got_scaled.numpy().view(np.uint8),
                                  want_scaled.view(np.uint8))
    x2 = nbtorch.tensor(awkward_floats(2 * LARGE, np.float32, 15)).reshape(2, LARGE)
    x2[:, ::2] + x2[:, ::2]                                     # strided
    x.requires_grad_() + y                                      # recorded
    assert len(layers) == 2


OUT_OPS = {"add": lambda x, y, o: nbtorch.add(x, y, out=o),
           "mul": lambda x, y, o: nbtorch.mul(x, y, out=o),
           "x * 0.37": lambda x, y, o: nbtorch.mul(x, 0.37, out=o),
           "sub 2.5": lambda x, y, o: nbtorch.sub(x, 2.5, out=o),
           "sqrt": lambda x, y, o: nbtorch.sqrt(x.abs(), out=o),
           "maximum": lambda x, y, o: nbtorch.maximum(x, y, out=o)}


@pytest.mark.parametrize("name", list(OUT_OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_dense_calls_into_a_given_out_give_the_kernels_bits(monkeypatch, name, dtype):
    """``add(a, b, out=o)`` with dense operands sharing no memory with `o` takes the split
    path straight into `o` (`_small_calls._dense_into`): the bits of the path it replaced,
    `o` returned and its version bumped; an `o` that is an input keeps the in-place path."""
    from nbtorch.ops import _small_calls
    make = OUT_OPS[name]
    shape = (300, 500)
    x = nbtorch.tensor(awkward_floats(LARGE, dtype, 21).reshape(shape))
    y = nbtorch.tensor(awkward_floats(LARGE, dtype, 22).reshape(shape))
    o = nbtorch.empty(shape, dtype=x.dtype)
    make(x, y, nbtorch.empty(shape, dtype=x.dtype))     # a process's first call of an op may
    taken = []                                          # compile its loop: the layers then
    dense_into = _small_calls._dense_into
    from nbtorch.ops import _elementwise
    monkeypatch.setattr(_elementwise, "_dense_into",
                        lambda *a: dense_into(*a) and not taken.append(1))
    got = []
    for _ in range(3):                              # the first call of a kind is serial
        version = o._version
        assert make(x, y, o) is o and o._version > version
        got.append(o.numpy().copy())
    monkeypatch.setattr(_elementwise, "_dense_into", lambda *a: False)
    want = make(x, y, nbtorch.empty(shape, dtype=x.dtype)).numpy()
    for g in got:
        np.testing.assert_array_equal(g.view(np.uint8), want.view(np.uint8))
    assert len(taken) == 3
    monkeypatch.setattr(_elementwise, "_dense_into", dense_into)
    if name in ("add", "mul", "maximum"):
        z = x.clone()
        expect = make(x, y, nbtorch.empty(shape, dtype=x.dtype)).numpy()
        make(z, y, z)                               # out is an input: in place
        np.testing.assert_array_equal(z.numpy().view(np.uint8), expect.view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_permuted_dense_operands_run_flat_and_keep_their_layout(dtype, monkeypatch):
    """``x.t() + x.t()``, ``x.t() * 0.37``, ``x.t().sqrt()`` and a permuted 4-D batch:
    after the first call (the layers) the operator runs the loop over the operands'
    memory (`_small_calls._permuted_result`); the result keeps their strides and has
    NumPy's bits."""
    from nbtorch.ops import _elementwise
    base = awkward_floats(LARGE + 2 * 1024, dtype, 21)[:1024 * (LARGE // 1024)]
    x = nbtorch.tensor(base.reshape(1024, -1))
    w = nbtorch.tensor(awkward_floats(LARGE, dtype, 22)[:16 * 4 * 64 * 36].reshape(16, 4, 64, 36))
    np_x, np_w = base.reshape(1024, -1).T, w.numpy().transpose(0, 2, 1, 3)
    with np.errstate(all="ignore"):
        wants = [np_x + np_x, np_x * dtype(0.37), np.sqrt(np_x), np_w * np_w]
    fns = [lambda: x.t() + x.t(), lambda: x.t() * 0.37, lambda: x.t().sqrt(),
           lambda: w.transpose(1, 2) * w.transpose(1, 2)]
    for fn, want in zip(fns, wants):
        first = fn()                      # the layers (and the loop's entry resolved)
        layers = []
        run = _elementwise.run_elementwise
        monkeypatch.setattr(_elementwise, "run_elementwise", lambda *a, **k:
                            layers.append(a[0]) or run(*a, **k))
        got = fn()
        monkeypatch.undo()
        assert layers == []
        assert got.stride() == first.stride()
        assert got.stride() != nbtorch.empty(got.shape).stride()
        for t in (first, got):
            np.testing.assert_array_equal(np.ascontiguousarray(t.numpy()).view(np.uint8),
                                          np.ascontiguousarray(want).view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["add_", "sub_", "mul_", "div_"])
def test_in_place_op_with_itself_gives_numpys_bits(name, dtype):
    """x.add_(x), also on a transposed x: the in-place loop reads x alone."""
    a = awkward_floats(LARGE, dtype, 23)
    fn = {"add_": np.add, "sub_": np.subtract, "mul_": np.multiply, "div_": np.divide}[name]
    with np.errstate(all="ignore"):
        want = fn(a, a)
    for shaped in (lambda t: t, lambda t: t.reshape(-1, 10).t()):
        t = nbtorch.tensor(a.copy())
        v = shaped(t)
        getattr(v, name)(v)
        np.testing.assert_array_equal(t.numpy().view(np.uint8), want.view(np.uint8))
