"""PyTorch's ``torch.library.define`` / ``impl`` / ``Library(ns, kind)`` / ``opcheck`` and
``torch.ops.<namespace>`` under ``import nbtorch as torch``; nbtorch's own ops reached
through the same functions."""
import subprocess
import sys
import warnings

import numba
import numpy as np
import pytest

import nbtorch as torch
from nbtorch import library
from nbtorch.library import _OPS


@pytest.fixture(autouse=True)
def _forget_ops():
    before = set(_OPS)
    yield
    for key in set(_OPS) - before:
        _OPS[key].delete()


def _axpy():
    torch.library.define("mylib::axpy", "(Tensor x, Tensor y, float alpha=1.0) -> Tensor")

    @torch.library.impl("mylib::axpy", "cpu")
    def axpy_cpu(x, y, alpha=1.0):
        return x + alpha * y

    return torch.ops.mylib.axpy


def test_define_impl_fake_autograd_gradcheck_opcheck():
    axpy = _axpy()
    assert str(axpy.default._schema) == \
        "mylib::axpy(Tensor x, Tensor y, float alpha=1.) -> Tensor"
    a, b = torch.ones(2), torch.ones(2)
    assert axpy(a, b, alpha=3.0).tolist() == [4, 4] == axpy(a, b, 3.0).tolist()

    @torch.library.register_fake("mylib::axpy")
    def _(x, y, alpha=1.0):
        return torch.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.alpha = inputs[2]

    torch.library.register_autograd("mylib::axpy", lambda ctx, g: (g, g * ctx.alpha, None),
                                    setup_context=setup_context)
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, y: axpy(x, y, 2.0), (x, y))
    assert torch.library.opcheck(axpy.default, (x, y, 2.0))["test_faketensor"] == "SUCCESS"
    assert torch.library.opcheck(axpy, (x, y), {"alpha": 2.0})["test_schema"] == "SUCCESS"
    torch.library.register_kernel("mylib::axpy", "cpu", lambda x, y, alpha=1.0: x - y)
    assert axpy(a, b).tolist() == [0, 0]


def test_impl_without_autograd_is_traced_and_warns_at_backward():
    axpy = _axpy()
    x = torch.randn(3, requires_grad=True)
    out = axpy(x, x)
    assert out.grad_fn is not None and "GeneratedBackward" not in out.grad_fn.name()
    with pytest.warns(UserWarning, match="mylib::axpy: an autograd kernel was not registered "
                                         "to the Autograd key"):
        out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 2, 2])
    torch.library.define("mylib::implicit", "(Tensor x) -> Tensor")
    torch.library.impl("mylib::implicit", "CompositeImplicitAutograd", lambda x: x.sin())
    x.grad = None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.ops.mylib.implicit(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-6)
    x.grad = None
    with pytest.raises(torch.library.OpCheckError, match="test_autograd_registration failed"):
        torch.library.opcheck(axpy, (x, x))


def test_schema_strings_parse_print_and_check():
    torch.library.define("mylib::many", '(Tensor[] xs, Tensor? b, int[] dims, SymInt n, '
                                        'Scalar s, ScalarType? dt=None, bool flag=False, '
                                        'str mode="a", *, float eps=1e-05) -> (Tensor, Tensor)')
    torch.library.impl("mylib::many", "default",
                       lambda xs, b, dims, n, s, dt=None, flag=False, mode="a", *, eps=1e-5:
                       (xs[0] * n, xs[0] + eps))
    many = torch.ops.mylib.many
    decl = ('mylib::many(Tensor[] xs, Tensor? b, int[] dims, SymInt n, Scalar s, '
            'ScalarType? dt=None, bool flag=False, str mode="a", *, '
            'float eps=1.0000000000000001e-05) -> (Tensor, Tensor)')   # as PyTorch prints it
    assert str(many.default._schema) == decl
    args = [a.name for a in many.default._schema.arguments if a.kwarg_only]
    assert args == ["eps"]
    u, v = many([torch.ones(2)], None, [1], 2, 3.0, eps=0.5)
    assert u.tolist() == [2, 2] and v.tolist() == [1.5, 1.5]
    with pytest.raises(RuntimeError) as info:
        many([torch.ones(2)], None, [1.5], 2, 3.0)
    assert str(info.value) == ("mylib::many() Expected a value of type 'List[int]' for "
                               "argument 'dims' but instead found type 'list'.\nPosition: 2\n"
                               f"Value: [1.5]\nDeclaration: {decl}")
    with pytest.raises(RuntimeError, match=r"expected at most 9 argument\(s\) but received 10"):
        many([torch.ones(2)], None, [1], 2, 3.0, None, False, "a", 1e-3, 5)
    torch.library.define("mylib::inplace_add", "(Tensor(a!) x, Tensor y) -> Tensor(a!)")
    assert str(torch.ops.mylib.inplace_add.default._schema) == \
        "mylib::inplace_add(Tensor(a!) x, Tensor y) -> Tensor(a!)"
    torch.library.define("mylib::ov.Scalar", "(Tensor x, Scalar y) -> Tensor")
    torch.library.define("mylib::ov", "(Tensor x, Tensor y) -> Tensor")
    torch.library.impl("mylib::ov.Scalar", "cpu", lambda x, y: x + 10 * y)
    torch.library.impl("mylib::ov", "cpu", lambda x, y: x + y)
    assert sorted(torch.ops.mylib.ov.overloads()) == ["Scalar", "default"]
    assert torch.ops.mylib.ov(torch.ones(1), 2.0).tolist() == [21]       # picks by schema
    assert torch.ops.mylib.ov(torch.ones(1), torch.ones(1)).tolist() == [2]
    assert torch.ops.mylib.ov.Scalar.name() == "mylib::ov.Scalar"


def test_schema_string_errors():
    with pytest.raises(ValueError, match=r'^define\(qualname, schema, ...\): expected schema to '
                                         r'look like e.g. "\(Tensor x\) -> Tensor" but got '
                                         r'"Tensor x -> Tensor"$'):
        torch.library.define("mylib::bad", "Tensor x -> Tensor")
    with pytest.raises(RuntimeError, match="unknown type specifier. Common valid schema types "
                                           "include Tensor"):
        torch.library.define("mylib::bad2", "(Tensor x, floaty a) -> Tensor")
    with pytest.raises(RuntimeError, match="expected ident but found"):
        torch.library.define("mylib::bad3", "(Tensor x, int) -> Tensor")
    with pytest.raises(RuntimeError, match="Non-default positional argument follows default "
                                           "argument. Parameter y"):
        torch.library.define("mylib::bad4", "(Tensor x, int n=1, Tensor y) -> Tensor")
    with pytest.raises(ValueError, match='Expected `qualname` to be of the form'):
        torch.library.define("bad5", "(Tensor x) -> Tensor")
    torch.library.define("mylib::once", "(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match=r"Tried to register an operator \(mylib::once"
                                           r"\(Tensor x\) -> Tensor\) with the same name"):
        torch.library.define("mylib::once", "(Tensor x) -> Tensor")
    with pytest.raises(NotImplementedError, match="Could not run 'mylib::once' with arguments "
                                                  "from the 'CPU' backend"):
        torch.ops.mylib.once(torch.ones(1))
    with pytest.raises(AttributeError, match="'_OpNamespace' 'mylib' object has no attribute "
                                             "'nosuch'"):
        torch.library.register_autograd("mylib::nosuch", lambda ctx, g: g)


def test_library_kinds():
    lib = torch.library.Library("nbt_kinds", "DEF")
    assert (lib.ns, lib.kind) == ("nbt_kinds", "DEF")
    assert repr(lib) == "Library(kind=DEF, ns=nbt_kinds, dispatch_key=)>"
    assert lib.define("foo(Tensor x) -> Tensor") == "foo"
    lib.impl("foo", lambda x: x * 5, "CPU")
    assert torch.ops.nbt_kinds.foo(torch.ones(2)).tolist() == [5, 5]
    with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY can be used to "
                                           "register the namespace nbt_kinds"):
        torch.library.Library("nbt_kinds", "DEF")
    frag = torch.library.Library("nbt_kinds", "FRAGMENT")
    frag.define("bar(Tensor x, int n) -> Tensor")
    frag.impl("bar", lambda x, n: x * n, "CompositeExplicitAutograd")
    assert torch.ops.nbt_kinds.bar(torch.ones(2), 3).tolist() == [3, 3]
    impl_lib = torch.library.Library("nbt_kinds", "IMPL")
    with pytest.raises(RuntimeError, match=r'def\("baz"\): Cannot define an operator inside '
                                           "of a TORCH_LIBRARY_IMPL block"):
        impl_lib.define("baz(Tensor x) -> Tensor")

    @torch.library.impl(impl_lib, "bar", "CPU")            # PyTorch's older decorator form
    def _(x, n):
        return x * n * 10

    assert torch.ops.nbt_kinds.bar(torch.ops.nbt_kinds.bar(torch.ones(1), 2), 1).tolist() \
        == [200]
    impl_lib.close()                             # its CPU kernel goes: the default is back
    assert torch.ops.nbt_kinds.bar(torch.ones(1), 2).tolist() == [2]
    with pytest.raises(ValueError, match="Unsupported kind: XYZ"):
        torch.library.Library("nbt_kinds", "XYZ")
    frag.close()
    lib.close()
    assert not hasattr(torch.ops.nbt_kinds, "foo") and not hasattr(torch.ops.nbt_kinds, "bar")
    torch.library.Library("nbt_kinds", "DEF").close()    # the namespace is free again


def test_opcheck_failures_and_options():
    @torch.library.custom_op("mylib::nofake", mutates_args=())
    def nofake(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    x = torch.randn(3)
    with pytest.raises(torch.library.OpCheckError, match=r"test_faketensor failed with There "
                       r"was no fake impl registered for <CustomOpDef\(mylib::nofake\)>"):
        torch.library.opcheck(nofake, [x])
    for fake, what in ((lambda x: x.new_empty(4), r"Shapes torch.Size\(\[3\]\) and "
                                                  r"torch.Size\(\[4\]\) are not equal!"),
                       (lambda x: torch.empty_like(x, dtype=torch.float64),
                        "Dtypes torch.float32 and torch.float64 are not equal!")):
        nofake.register_fake(fake)
        with pytest.raises(torch.library.OpCheckError,
                           match="When comparing the output of mylib.nofake.default on "
                                 "FakeTensor and concrete Tensors, found mismatched tensor "
                                 "metadata: " + what):
            torch.library.opcheck(nofake, [x])
    nofake.register_fake(lambda x: torch.empty_like(x))
    result = torch.library.opcheck(nofake, [x.requires_grad_()], raise_exception=False)
    assert isinstance(result["test_aot_dispatch_dynamic"], RuntimeError)
    assert "no autograd formula was registered" in str(result["test_aot_dispatch_dynamic"])
    assert result["test_schema"] == "SUCCESS"
    assert torch.library.opcheck(nofake, [x], test_utils="test_schema") == \
        {"test_schema": "SUCCESS"}
    with pytest.raises(ValueError, match="expected test_utils to be subset of"):
        torch.library.opcheck(nofake, [x], test_utils=("test_foo",))
    with pytest.raises(ValueError, match="op must be instance of torch._ops.OpOverload"):
        torch.library.opcheck(lambda x: x, [x])


def test_torch_ops_namespaces_and_aten():
    axpy = _axpy()
    assert (str(axpy), axpy.__name__, str(axpy.default), axpy.default.__name__,
            axpy.default.name(), axpy.overloads()) == (
        "mylib.axpy", "axpy", "mylib.axpy.default", "axpy.default", "mylib::axpy", ["default"])
    assert "axpy" in dir(torch.ops.mylib)
    with pytest.raises(AttributeError, match="'_OpNamespace' 'mylib' object has no attribute "
                                             "'nope'"):
        torch.ops.mylib.nope
    with pytest.raises(AttributeError, match="The underlying op of 'mylib.axpy' has no "
                                             "overload name 'Tensor'"):
        axpy.Tensor
    aten = torch.ops.aten
    a = torch.tensor([[1.0, -2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(aten.add.Tensor(a, a).numpy(), 2 * a.numpy())
    np.testing.assert_array_equal(aten.add(a, 1).numpy(), a.numpy() + 1)
    np.testing.assert_array_equal(aten.mul.Tensor(a, a).numpy(), a.numpy() ** 2)
    np.testing.assert_array_equal(aten.mm.default(a, a).numpy(), a.numpy() @ a.numpy())
    np.testing.assert_array_equal(aten.relu.default(a).numpy(), np.maximum(a.numpy(), 0))
    np.testing.assert_array_equal(aten.view.default(a, [4]).numpy(), a.numpy().ravel())
    np.testing.assert_array_equal(aten.sum.dim_IntList(a, [1]).numpy(), a.numpy().sum(1))
    np.testing.assert_allclose(aten._softmax.default(a, 1, False).numpy(),
                               torch.softmax(a, 1).numpy())
    np.testing.assert_array_equal(aten.slice.Tensor(a, 1, 1, 2).numpy(), a.numpy()[:, 1:2])
    np.testing.assert_array_equal(aten.index.Tensor(a, [None, torch.tensor([1, 0])]).numpy(),
                                  a.numpy()[:, [1, 0]])
    assert torch.ops.aten is torch.ops.aten
    import copy
    import pickle
    for thing in (axpy, axpy.default, aten.add, aten.add.Tensor):      # kept by name
        back = pickle.loads(pickle.dumps(thing))
        assert type(back) is type(thing) and str(back) == str(thing)
    assert pickle.loads(pickle.dumps(axpy.default)) == axpy.default
    op = _OPS["mylib::axpy"]
    assert pickle.loads(pickle.dumps(op)) is op and copy.deepcopy(op) is op
    with pytest.raises(AttributeError, match="'_OpNamespace' 'aten' object has no attribute "):
        aten.no_such_op_here


def test_internal_ops_package_still_imports_its_submodules():
    """``torch.ops.<name>`` must not shadow nbtorch.ops' own submodules (imported lazily)."""
    code = ("import sys, nbtorch\n"
            "lazy = [m for m in ('lstm', 'strided_grad', 'linalg_cdet') "
            "if 'nbtorch.ops.' + m not in sys.modules]\n"
            "assert lazy, 'every submodule is imported eagerly: pick another'\n"
            "from nbtorch.ops import " + ", ".join(("lstm", "strided_grad", "linalg_cdet")) +
            "\n"
            "import types\n"
            "assert all(isinstance(m, types.ModuleType) for m in (lstm, strided_grad, "
            "linalg_cdet))\n"
            "import nbtorch.ops.attention\n"
            "assert type(nbtorch.ops.mylib).__name__ == 'OpNamespace'\n"
            "assert not hasattr(nbtorch.ops, '__wrapped__')\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_nbtorch_style_ops_through_pytorch_functions():
    """nbtorch's raw-array CustomOp: reachable by torch.ops and PyTorch's register_*."""
    with library.Library("nbt_style") as lib:
        @lib.define("double")
        def double(x):
            return library.TensorSpec(x.shape, x.dtype)

        @numba.njit
        def kernel(x, out):
            for i in range(out.size):
                out.flat[i] = 2 * x.flat[i]

        torch.library.register_kernel("nbt_style::double", "cpu", kernel)
        torch.library.register_autograd("nbt_style::double", lambda ctx, g: 2 * g)
        x = torch.randn(3, dtype=torch.float64, requires_grad=True)
        np.testing.assert_allclose(torch.ops.nbt_style.double(x).detach().numpy(),
                                   2 * x.detach().numpy())
        assert torch.autograd.gradcheck(double, (x,))
        lib.impl("double", lambda x: 3 * x, "cpu")            # nbtorch's device spelling
        np.testing.assert_allclose(double(x.detach()).numpy(), 3 * x.detach().numpy())
