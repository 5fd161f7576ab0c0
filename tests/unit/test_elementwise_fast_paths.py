"""Elementwise ops' fast paths (ops/_elementwise.py) are Function.apply's own results:
the unrecorded call straight to run_elementwise, the recorded one linked in one step
(`_record_fast`), and the small CPU call in a context that ignores NumPy's
floating-point errors. Each case is compared with the generic path, taken by setting
`APPLY_WRAPPERS` (as a graph capture or the profiler does)."""
import warnings

import numpy as np
import pytest

import nbtorch
import nbtorch.nn.functional as F
from nbtorch.autograd import function

CASES = {
    "tensor * tensor": lambda x, w: x * w,
    "tensor + number": lambda x, w: x + 0.5,
    "number - tensor": lambda x, w: 2 - x,
    "tanh (saves out)": lambda x, w: x.tanh() * w,
    "leaky_relu (a parameter)": lambda x, w: F.leaky_relu(x * w, 0.2),
    "broadcast": lambda x, w: x * w[0],
}


def _run(fn, generic):
    g = nbtorch.Generator().manual_seed(0)
    x = nbtorch.randn(3, 4, generator=g, dtype=nbtorch.float64, requires_grad=True)
    w = nbtorch.randn(3, 4, generator=g, dtype=nbtorch.float64, requires_grad=True)
    function.APPLY_WRAPPERS[0] += generic
    try:
        y = fn(x, w)
        node = y.grad_fn
        facts = (type(node).__name__, node.needs_input_grad, len(node.next_functions),
                 [None if m is None else (tuple(m[0]), m[1]) for m in node._input_meta],
                 node._arg_pos, [s is not None for s in (node._saved or ())])
        y.backward(nbtorch.ones_like(y), create_graph=False)
    finally:
        function.APPLY_WRAPPERS[0] -= generic
    return y.detach().numpy(), facts, x.grad.numpy(), w.grad.numpy() if w.grad is not None \
        else None


@pytest.mark.parametrize("name", list(CASES))
def test_recorded_fast_path_builds_the_generic_node(name):
    fast, generic = _run(CASES[name], 0), _run(CASES[name], 1)
    assert fast[1] == generic[1]
    for a, b in zip(fast[0:1] + fast[2:], generic[0:1] + generic[2:]):
        assert (a is None and b is None) or np.array_equal(a, b)


def test_gradcheck_through_the_fast_path():
    x = nbtorch.randn(5, dtype=nbtorch.float64, requires_grad=True)
    w = nbtorch.randn(5, dtype=nbtorch.float64, requires_grad=True)
    assert nbtorch.autograd.gradcheck(lambda x, w: (x * w + 0.5).tanh() / (w * w + 1), (x, w))
    assert nbtorch.autograd.gradgradcheck(lambda x, w: (x * w).sigmoid() - x, (x, w))


def test_small_calls_neither_warn_nor_raise_on_inf_and_nan():
    x, zero = nbtorch.ones(3), nbtorch.zeros(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        old = np.seterr(all="raise")
        try:
            assert np.isinf((x / zero).numpy()).all()
            assert np.isnan((zero / zero).numpy()).all()
            assert np.isinf(nbtorch.log(zero).numpy()).all()
            assert np.isinf((nbtorch.ones(5000) * 1e300).numpy()).all()   # a large call
        finally:
            np.seterr(**old)


INPLACE = {
    "add_ tensor": lambda x, y: x.add_(y),
    "sub_ float": lambda x, y: x.sub_(0.25),
    "mul_ int": lambda x, y: x.mul_(3),
    "div_ tensor": lambda x, y: x.div_(y),
    "exp_": lambda x, y: x.exp_(),
    "mul_ itself": lambda x, y: x.mul_(x),
    "add_ alpha (general path)": lambda x, y: x.add_(y, alpha=2),
    "add_ broadcast (general path)": lambda x, y: x.add_(y[..., :1]),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
@pytest.mark.parametrize("shape", [(3, 4), (70, 80)])      # the small ufunc call, the kernel
@pytest.mark.parametrize("dtype", [nbtorch.float32, nbtorch.float64])
def test_inplace_fast_path_is_the_generic_result(name, shape, dtype):
    """x.op_(y) without autograd writes what the generic in-place path writes, into a
    transposed view as well, and bumps the version."""
    results = []
    for generic in (0, 1):
        g = nbtorch.Generator().manual_seed(1)
        base = nbtorch.rand(shape[::-1], generator=g, dtype=dtype) + 0.5
        x = base.t()                                        # a strided self
        y = nbtorch.rand(shape, generator=g, dtype=dtype) + 0.5
        version = x._version
        function.APPLY_WRAPPERS[0] += generic
        try:
            assert INPLACE[name](x, y) is x
        finally:
            function.APPLY_WRAPPERS[0] -= generic
        assert x._version > version
        results.append(base.numpy().copy())
    np.testing.assert_array_equal(results[0], results[1])


def test_inplace_fast_path_keeps_the_checks():
    x = nbtorch.arange(10.0)
    with pytest.raises(RuntimeError, match="single memory location"):
        x[2:].add_(x[:-2])
    with pytest.raises(RuntimeError, match="more than one element"):
        nbtorch.zeros(1).expand(3).add_(1)
    w = nbtorch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.add_(1)
    y = w * 2
    saved = y.sin()                                         # sin saves its input
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        saved.sum().backward()
    z = nbtorch.ones(3)
    z.add_(nbtorch.ones(3, requires_grad=True))            # recorded: the general path
    assert z.grad_fn is not None


# ---- the operators' small-call path (`tensor_operator`) ------------------------------

OPERATORS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
             "/": lambda a, b: a / b, "+=": lambda a, b: b + a, "* float": lambda a, b: a * 0.3,
             "float *": lambda a, b: 0.3 * a, "- float": lambda a, b: a - 1.25}


def _generic(fn, *args):
    function.APPLY_WRAPPERS[0] += 1
    try:
        return fn(*args)
    finally:
        function.APPLY_WRAPPERS[0] -= 1


@pytest.mark.parametrize("name", list(OPERATORS))
@pytest.mark.parametrize("shape", [(), (1,), (3, 5), (70, 60)])
@pytest.mark.parametrize("dtype", [nbtorch.float32, nbtorch.float64])
def test_operator_fast_path_is_the_generic_result(name, shape, dtype):
    g = nbtorch.Generator().manual_seed(1)
    a, b = (nbtorch.randn(*shape, generator=g, dtype=dtype) for _ in range(2))
    fn = OPERATORS[name]
    fn(a, b)                                    # the first call resolves the small call
    fast, generic = fn(a, b), _generic(fn, a, b)
    assert fast.dtype is generic.dtype is dtype and fast.shape == generic.shape
    assert fast.stride() == generic.stride() and fast.grad_fn is None
    assert np.array_equal(fast.numpy(), generic.numpy())


@pytest.mark.parametrize("make", [
    lambda a, b: (a.t(), b.t()),                          # strided: the general path
    lambda a, b: (a, b[0]),                               # broadcast
    lambda a, b: (a.int(), b.int()),                      # integers: int / int is float
    lambda a, b: (a.half(), b.half()),
    lambda a, b: (a, b.double()),                         # promotion
    lambda a, b: (a.requires_grad_(), b),                 # recorded
])
def test_operator_fast_path_leaves_other_cases_to_the_generic_path(make):
    g = nbtorch.Generator().manual_seed(2)
    a, b = make(nbtorch.randn(4, 3, generator=g), nbtorch.randn(4, 3, generator=g))
    for fn in (OPERATORS["+"], OPERATORS["/"], OPERATORS["* float"]):
        fn(a, b)
        fast, generic = fn(a, b), _generic(fn, a, b)
        assert fast.dtype is generic.dtype and fast.shape == generic.shape
        assert (fast.grad_fn is None) == (generic.grad_fn is None)
        np.testing.assert_array_equal(fast.detach().numpy(), generic.detach().numpy())
    assert (a / b).dtype.is_floating_point


@pytest.mark.parametrize("name", ["+", "-", "*", "/"])
@pytest.mark.parametrize("which", ["left", "right"])
@pytest.mark.parametrize("dtype", [nbtorch.float32, nbtorch.float64])
def test_operator_fast_path_with_one_value_broadcast(name, which, dtype):
    """A stride-0 operand (a sum's gradient, `g.expand(shape)`) with a dense one: the
    value as a scalar, bits and layout as the generic path's; not for other layouts."""
    g = nbtorch.Generator().manual_seed(4)
    dense = nbtorch.randn(3, 5, generator=g, dtype=dtype)
    one = nbtorch.tensor(1.7, dtype=dtype).expand(3, 5)
    a, b = (one, dense) if which == "left" else (dense, one)
    fn = OPERATORS[name]
    fn(a, b)
    fast, generic = fn(a, b), _generic(fn, a, b)
    assert fast.is_contiguous() and fast.stride() == generic.stride() == (5, 1)
    assert np.array_equal(fast.numpy(), generic.numpy())
    row = nbtorch.randn(5, dtype=dtype).expand(3, 5)     # stride (0, 1): not one value
    assert np.array_equal(fn(row, dense).numpy(), _generic(fn, row, dense).numpy())


def test_sum_backward_through_the_broadcast_value_path():
    x = nbtorch.randn(4, 6, dtype=nbtorch.float64, requires_grad=True)
    w = nbtorch.randn(4, 6, dtype=nbtorch.float64, requires_grad=True)
    (x * w).sum().backward()
    assert np.array_equal(x.grad.numpy(), w.detach().numpy())
    assert nbtorch.autograd.gradcheck(lambda x, w: (x * w / (w * w + 1)).mean(), (x, w))


def test_operator_fast_path_runs_a_swapped_kernel_and_is_profiled():
    from nbtorch import _registry
    a, b = nbtorch.ones(3), nbtorch.ones(3)
    a + b
    calls = []

    def my_add(out, x, y):
        calls.append(1)
        out[...] = 7
    _registry.register_kernel("add", "cpu", my_add, override=True)
    try:
        assert (a + b).tolist() == [7.0, 7.0, 7.0] and calls
    finally:
        _registry.unregister_kernel("add", "cpu")
    assert (a + b).tolist() == [2.0, 2.0, 2.0]
    with nbtorch.profiler.profile() as prof:             # the profiler sees every op
        a * b
    assert [e.name for e in prof.function_events if e.kind == "op"] == ["Mul"]


UNARY = {"x.exp()": lambda x: x.exp(), "torch.tanh": lambda x: nbtorch.tanh(x),
         "x.relu()": lambda x: x.relu(), "torch.sigmoid": lambda x: nbtorch.sigmoid(x),
         "-x": lambda x: -x, "torch.add": lambda x: nbtorch.add(x, x * 0.5),
         "x.mul(2.0)": lambda x: x.mul(2.0), "torch.div": lambda x: nbtorch.div(x, 3.0)}


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("make", [lambda t: t, lambda t: t.t(), lambda t: t.double(),
                                  lambda t: t.requires_grad_()])
def test_unary_and_function_fast_paths_are_the_generic_result(name, make):
    x = make(nbtorch.randn(6, 5, generator=nbtorch.Generator().manual_seed(3)))
    fn = UNARY[name]
    fn(x)
    fast, generic = fn(x), _generic(fn, x)
    assert fast.dtype is generic.dtype and fast.shape == generic.shape
    assert fast.stride() == generic.stride()
    assert type(fast.grad_fn) is type(generic.grad_fn)
    assert np.array_equal(fast.detach().numpy(), generic.detach().numpy())
