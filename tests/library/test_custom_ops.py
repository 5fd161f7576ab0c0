"""nbtorch.library: custom ops (CPU kernels, meta rule, backward), elementwise ops, overrides."""
import numba
import numpy as np
import pytest

import nbtorch
from nbtorch import library
from nbtorch.autograd import gradcheck, gradgradcheck


@pytest.fixture
def lib(request):
    """A namespace of ops deleted after the test (so no op leaks into other tests)."""
    name = "t_" + request.node.name.replace("[", "_").replace("]", "").replace("-", "_")
    with library.Library(name) as lib_:
        yield lib_


@numba.njit
def _scaled_add_kernel(x, y, alpha, out):
    for i in range(out.size):
        out.flat[i] = x.flat[i] + alpha * y.flat[i]


def _define_scaled_add(lib):
    @lib.define("scaled_add")
    def scaled_add(x, y, alpha=1.0):
        """x + alpha * y."""
        return library.TensorSpec(x.shape, x.dtype)

    scaled_add.register_kernel("cpu", _scaled_add_kernel)

    @scaled_add.register_backward
    def _(ctx, grad):
        return grad, grad * ctx.inputs[2], None
    return scaled_add


def _t(*shape, dtype=nbtorch.float64, grad=True):
    return nbtorch.randn(*shape, dtype=dtype, requires_grad=grad)


# ---- a custom op: values, tape, gradcheck, no_grad, modules -------------------------------

def test_custom_op_values_and_tape(lib):
    op = _define_scaled_add(lib)
    a, b = _t(3, 4), _t(3, 4)
    y = op(a, b, alpha=2.0)
    np.testing.assert_allclose(y.detach().numpy(), a.detach().numpy() + 2 * b.detach().numpy())
    assert y.requires_grad and lib.namespace + "::scaled_add" in y.grad_fn.name()
    assert op(a, b).dtype is nbtorch.float64          # default alpha
    assert "scaled_add" in nbtorch.library.ops("cpu")[0] or op.name in library.ops("cpu")
    assert op.devices == ("cpu",) and "with backward" in repr(op)


def test_custom_op_gradcheck(lib):
    op = _define_scaled_add(lib)
    a, b = _t(2, 3), _t(2, 3)
    assert gradcheck(lambda a, b: op(a, b, 3.0), (a, b))
    assert gradgradcheck(lambda a, b: op(a, b, 3.0), (a, b))


def test_custom_op_non_contiguous_input_is_made_contiguous(lib):
    op = _define_scaled_add(lib)
    a = nbtorch.randn(4, 3, dtype=nbtorch.float64).t()
    b = nbtorch.randn(3, 4, dtype=nbtorch.float64)
    np.testing.assert_allclose(op(a, b).numpy(), a.numpy() + b.numpy())


def test_custom_op_under_no_grad(lib):
    op = _define_scaled_add(lib)
    a, b = _t(3), _t(3)
    with nbtorch.no_grad():
        y = op(a, b)
    assert not y.requires_grad and y.grad_fn is None


def test_custom_op_in_module(lib):
    op = _define_scaled_add(lib)

    class Shift(nbtorch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bias = nbtorch.nn.Parameter(nbtorch.ones(4, dtype=nbtorch.float64))

        def forward(self, x):
            return op(x, self.bias.expand(x.shape), 0.5)

    m = Shift()
    x = _t(2, 4, grad=False)
    loss = m(x).sum()
    loss.backward()
    np.testing.assert_allclose(m.bias.grad.numpy(), np.full(4, 0.5 * 2))
    np.testing.assert_allclose(m(x).detach().numpy(), x.numpy() + 0.5)


def test_kernel_returning_its_output_and_multiple_outputs(lib):
    @lib.define("split_sign")
    def split_sign(x):
        return [(x.shape, x.dtype), (x.shape, x.dtype)]

    @split_sign.register_kernel("cpu")
    @numba.njit
    def _(x):                       # no room for outputs: returns them
        return np.maximum(x, 0.0), np.minimum(x, 0.0)

    @split_sign.register_backward
    def _(ctx, gp, gn):
        x = ctx.inputs[0]
        return gp * (x > 0) + gn * (x <= 0)

    x = _t(5)
    pos, neg = split_sign(x)
    np.testing.assert_allclose((pos + neg).detach().numpy(), x.detach().numpy())
    assert gradcheck(lambda x: split_sign(x)[0] * 2 + split_sign(x)[1], (x,))


def test_backward_through_a_backward_kernel_op(lib):
    @lib.define("relu_grad")
    def relu_grad(grad, x):
        return grad.shape, grad.dtype

    @relu_grad.register_kernel("cpu")
    @numba.njit
    def _(grad, x, out):
        for i in range(out.size):
            out.flat[i] = grad.flat[i] if x.flat[i] > 0 else 0.0

    @lib.define("relu")
    def relu(x):
        return x.shape

    @relu.register_kernel("cpu")
    @numba.njit
    def _(x, out):
        for i in range(out.size):
            out.flat[i] = max(x.flat[i], 0.0)

    relu.register_backward(lambda ctx, g: relu_grad(g, ctx.inputs[0]))
    x = nbtorch.tensor([-1.5, -0.2, 0.3, 2.0], dtype=nbtorch.float64, requires_grad=True)
    assert gradcheck(relu, (x,))
    relu(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 1, 1])


def test_setup_context_style_backward(lib):
    @lib.define("cube")
    def cube(x):
        return x.shape

    @cube.register_kernel("cpu")
    @numba.njit
    def _(x, out):
        for i in range(out.size):
            out.flat[i] = x.flat[i] ** 3

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    cube.register_autograd(lambda ctx, g: g * 3 * ctx.saved_tensors[0] ** 2,
                           setup_context=setup)
    assert gradcheck(cube, (_t(4),))


# ---- elementwise from one scalar function ------------------------------------------------

def test_elementwise_values_dtypes_and_broadcast(lib):
    @lib.elementwise(name="softsign", grads=[lambda x: 1 / (1 + abs(x)) ** 2])
    def softsign(x):
        return x / (1 + abs(x))

    x = np.array([1.0, -3.0, 0.0], np.float32)
    for dtype in (nbtorch.float32, nbtorch.float64):
        y = softsign(nbtorch.tensor(x, dtype=dtype))
        assert y.dtype is dtype
        np.testing.assert_allclose(y.numpy(), x / (1 + np.abs(x)), rtol=1e-6)
    assert softsign(nbtorch.tensor([1, 2])).dtype is nbtorch.float32   # ints compute float
    half = softsign(nbtorch.tensor(x, dtype=nbtorch.float16))
    assert half.dtype is nbtorch.float16
    assert gradcheck(softsign, (_t(2, 3),))

    @lib.elementwise(name="axpb", backward=lambda ctx, g: (g * ctx.inputs[1], g * ctx.inputs[0],
                                                           g))
    def axpb(a, x, b):
        return a * x + b

    a, xx = _t(2, 1), _t(1, 3)
    out = axpb(a, xx, 0.5)                         # broadcast, a scalar operand
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out.detach().numpy(),
                               a.detach().numpy() * xx.detach().numpy() + 0.5)
    assert gradcheck(lambda a, x: axpb(a, x, 0.5), (a, xx))


def test_elementwise_bad_arguments(lib):
    with pytest.raises(ValueError, match="one derivative per input"):
        lib.elementwise(lambda x, y: x + y, name="bad1", grads=[lambda x, y: 1.0])
    with pytest.raises(ValueError, match="either grads= or backward="):
        lib.elementwise(lambda x: x, name="bad2", grads=[lambda x: 1.0],
                        backward=lambda ctx, g: g)
    op = lib.elementwise(lambda x: x + 1, name="inc")
    with pytest.raises(TypeError, match="must be a Tensor or a number"):
        op("text")
    with pytest.raises(TypeError, match="at least one Tensor"):
        op(1.0)


# ---- overriding a built-in kernel ----------------------------------------------------------

@numba.njit
def _naive_matmul(a, b, out):
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            acc = 0.0
            for k in range(a.shape[1]):
                acc += a[i, k] * b[k, j]
            out[i, j] = acc


def test_override_builtin_matmul_then_restore():
    calls = []

    def my_matmul(a, b, out):
        calls.append(a.shape)
        _naive_matmul(a, b, out)

    a = nbtorch.randn(3, 4, dtype=nbtorch.float64)
    b = nbtorch.randn(4, 2, dtype=nbtorch.float64)
    builtin = library.kernel("matmul", "cpu")
    handle = library.override("matmul", "cpu", my_matmul)
    try:
        assert library.kernel("matmul", "cpu") is my_matmul
        np.testing.assert_allclose((a @ b).numpy(), a.numpy() @ b.numpy())
        assert calls == [(3, 4)]
    finally:
        handle.restore()
    assert library.kernel("matmul", "cpu") is builtin and "restored" in repr(handle)
    a @ b
    assert len(calls) == 1
    with library.override("matmul", "cpu", my_matmul):    # as a context manager
        a @ b
    assert len(calls) == 2 and library.kernel("matmul", "cpu") is builtin
    library.override("matmul", "cpu", my_matmul)
    library.override("matmul", "cpu", my_matmul)
    library.restore("matmul", "cpu")                       # every override at once
    assert library.kernel("matmul", "cpu") is builtin


def test_override_restored_out_of_order():
    builtin = library.kernel("neg", "cpu")
    first = library.override("neg", "cpu", lambda out, x: np.negative(x, out=out))
    second = library.override("neg", "cpu", lambda out, x: np.negative(x, out=out))
    first.restore()                                        # not the top one
    assert library.kernel("neg", "cpu") is second.fn
    second.restore()
    assert library.kernel("neg", "cpu") is builtin


# ---- errors ---------------------------------------------------------------------------------

def test_defining_twice_needs_override(lib):
    _define_scaled_add(lib)
    with pytest.raises(RuntimeError, match="already defined.*override=True"):
        lib.define("scaled_add", lambda x: x.shape)
    op = lib.define("scaled_add", lambda x: x.shape, override=True)
    assert op.arg_names == ("x",)


def test_registering_a_kernel_twice_needs_override(lib):
    op = _define_scaled_add(lib)
    with pytest.raises(RuntimeError, match="already has a cpu kernel.*override=True"):
        op.register_kernel("cpu", _scaled_add_kernel)
    op.register_kernel("cpu", _scaled_add_kernel, override=True)


def test_kernel_output_disagreeing_with_meta(lib):
    @lib.define("bad_shape")
    def bad_shape(x):
        return x.shape, x.dtype

    @bad_shape.register_kernel("cpu")
    @numba.njit
    def _(x):
        return x[:1].copy()

    with pytest.raises(RuntimeError, match=r"bad_shape.*shape \[1\].*declares shape \[3\]"):
        bad_shape(nbtorch.ones(3))

    @lib.define("bad_dtype")
    def bad_dtype(x):
        return x.shape, nbtorch.float32

    bad_dtype.register_kernel("cpu", numba.njit(lambda x: x * 2.0))
    with pytest.raises(RuntimeError, match="bad_dtype.*float64.*declares.*float32"):
        bad_dtype(nbtorch.ones(3, dtype=nbtorch.float64))


def test_backward_wrong_number_or_shape_of_gradients(lib):
    op = _define_scaled_add(lib)
    op.register_backward(lambda ctx, g: (g, g))
    a, b = _t(2, 3), _t(2, 3)
    with pytest.raises(RuntimeError, match=r"scaled_add: backward returned 2 gradient\(s\), "
                                           r"expected 3 \(one per argument: x, y, alpha"):
        op(a, b).sum().backward()
    op.register_backward(lambda ctx, g: (g, nbtorch.ones(5, dtype=g.dtype), None))
    with pytest.raises(RuntimeError, match=r"scaled_add: backward returned a gradient of shape "
                                           r"\[5\] for argument 'y', which has shape \[2, 3\]"):
        op(a, b).sum().backward()


def test_missing_backward_is_an_error_at_backward_time(lib):
    op = lib.define("nograd", lambda x: x.shape)
    op.register_kernel("cpu", numba.njit(lambda x: x.copy()))
    y = op(_t(3))
    with pytest.raises(RuntimeError, match="nograd has no backward"):
        y.sum().backward()


def test_unknown_names_devices_and_arguments(lib):
    op = _define_scaled_add(lib)
    with pytest.raises(ValueError, match="unknown device type 'tpu'"):
        op.register_kernel("tpu", _scaled_add_kernel)
    with pytest.raises(ValueError, match="unknown device type"):
        library.kernel("add", "tpu")
    with pytest.raises(ValueError, match="namespace::name"):
        library.custom_op("plain_name", lambda x: x.shape)
    with pytest.raises(KeyError, match="no custom op named 'nope::x'"):
        library.get_op("nope::x")
    with pytest.raises(ValueError, match="unknown op 'no_such_op'"):
        library.override("no_such_op", "cpu", _naive_matmul)
    with pytest.raises(TypeError, match="scaled_add.*unexpected keyword"):
        op(_t(2), _t(2), beta=1)
    with pytest.raises(NotImplementedError, match="no op named"):
        nbtorch.get_kernel("nope::x", "cpu")
    with pytest.raises(TypeError, match="meta function must return"):
        lib.define("weird", lambda x: "shape")
        lib.weird.register_kernel("cpu", _scaled_add_kernel)
        lib.weird(_t(2))


def test_library_close_unregisters_everything():
    with library.Library("t_close") as lib_:
        op = _define_scaled_add(lib_)
        assert lib_.scaled_add is op and op.name in library.ops()
    assert op.name not in library.ops()
    with pytest.raises(AttributeError, match="no op 'scaled_add'"):
        lib_.scaled_add


def test_define_impl_and_lookups():
    with library.Library("t_impl") as lib_:
        op = library.define("t_impl::neg", lambda x: x.shape)
        lib_._ops["neg"] = op                     # owned by the library from here on
        lib_.impl("neg", numba.njit(lambda x: -x), "cpu")
        assert library.get_op("t_impl::neg") is op and op.kernel("cpu").py_func
        np.testing.assert_allclose(op(nbtorch.ones(2)).numpy(), [-1.0, -1.0])
        lib_.impl("neg", numba.njit(lambda x: -x - x), "cpu")        # impl replaces
        np.testing.assert_allclose(op(nbtorch.ones(2)).numpy(), [-2.0, -2.0])
    assert "t_impl::neg" not in library.ops()
