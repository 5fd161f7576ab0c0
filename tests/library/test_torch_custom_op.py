"""PyTorch's ``torch.library.custom_op`` under ``import nbtorch as torch``: the tutorials'
examples unchanged, schema inference, autograd, aliasing/argument errors (PyTorch 2.13's
wording), compile and jit.trace."""
from typing import Optional, Sequence

import numpy as np
import pytest

import nbtorch as torch
from nbtorch.library import _OPS


@pytest.fixture(autouse=True)
def _forget_ops():
    """Ops a test defines are deleted after it (op names repeat across tests)."""
    before = set(_OPS)
    yield
    for key in set(_OPS) - before:
        _OPS[key].delete()


def _schema(op):
    return str(op._opoverload._schema)


# ---- the tutorials, unchanged except for PIL's crop/paste (done with NumPy slicing) ----------

def _numpy_sin_op():
    @torch.library.custom_op("mylib::numpy_sin", mutates_args=())
    def numpy_sin(x: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(np.sin(x.numpy()))

    @numpy_sin.register_fake
    def _(x):
        return torch.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.cos()

    numpy_sin.register_autograd(backward, setup_context=setup_context)
    return numpy_sin


def test_numpy_sin_values_grad_gradcheck_and_torch_ops():
    numpy_sin = _numpy_sin_op()
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    y = torch.ops.mylib.numpy_sin(x)
    np.testing.assert_allclose(y.detach().numpy(), np.sin(x.detach().numpy()))
    assert y.grad_fn.name() == "GeneratedBackwardFor_mylib_numpy_sin_defaultBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()))
    assert torch.autograd.gradcheck(numpy_sin, (x,))
    assert torch.autograd.gradgradcheck(numpy_sin, (x,))     # backward written with ops
    assert torch.ops.mylib.numpy_sin.default(x.detach()).shape == (3, 4)
    with torch.no_grad():
        assert numpy_sin(x).grad_fn is None
    assert _schema(numpy_sin) == "mylib::numpy_sin(Tensor x) -> Tensor"
    assert repr(numpy_sin) == "<CustomOpDef(mylib::numpy_sin)>"
    assert torch.library.opcheck(numpy_sin, (x,)) == dict.fromkeys(
        ("test_schema", "test_autograd_registration", "test_faketensor",
         "test_aot_dispatch_dynamic"), "SUCCESS")


def _crop_ops():
    """python_custom_ops.py's crop and paste, PIL's crop/paste done with NumPy slicing."""
    @torch.library.custom_op("mylib::crop", mutates_args=())
    def crop(pic: torch.Tensor, box: Sequence[int]) -> torch.Tensor:
        x0, y0, x1, y1 = box
        cropped = pic.detach().cpu().numpy()[:, y0:y1, x0:x1].copy()
        return torch.from_numpy(cropped).to(pic.device, pic.dtype)

    @crop.register_fake
    def _(pic, box):
        channels = pic.shape[0]
        x0, y0, x1, y1 = box
        return pic.new_empty(channels, y1 - y0, x1 - x0)

    @torch.library.custom_op("mylib::paste", mutates_args=())
    def paste(im1: torch.Tensor, im2: torch.Tensor, coord: Sequence[int]) -> torch.Tensor:
        assert im1.device == im2.device
        assert im1.dtype == im2.dtype
        out = im1.cpu().numpy().copy()
        x0, y0 = coord
        out[:, y0:y0 + im2.shape[1], x0:x0 + im2.shape[2]] = im2.cpu().numpy()
        return torch.from_numpy(out).to(im1.device, im1.dtype)

    @paste.register_fake
    def _(im1, im2, coord):
        assert im1.device == im2.device
        assert im1.dtype == im2.dtype
        return torch.empty_like(im1)

    def backward(ctx, grad_output):
        grad_input = grad_output.new_zeros(ctx.pic_shape)
        grad_input = paste(grad_input, grad_output, ctx.coords)
        return grad_input, None

    def setup_context(ctx, inputs, output):
        pic, box = inputs
        ctx.coords = box[:2]
        ctx.pic_shape = pic.shape

    crop.register_autograd(backward, setup_context=setup_context)
    return crop, paste


def test_tutorial_crop_compile_backward_and_opcheck():
    crop, paste = _crop_ops()
    img = torch.ones(3, 64, 64)
    img *= torch.linspace(0, 1, steps=64) * torch.linspace(0, 1, steps=64).unsqueeze(-1)

    @torch.compile(fullgraph=True)
    def f(img):
        return crop(img, (10, 10, 50, 50))

    cropped_img = f(img)
    np.testing.assert_array_equal(cropped_img.numpy(), img.numpy()[:, 10:50, 10:50])
    img = img.requires_grad_()
    result = crop(img, (10, 10, 50, 50))
    result.sum().backward()
    expected = np.zeros((3, 64, 64), np.float32)
    expected[:, 10:50, 10:50] = 1
    np.testing.assert_array_equal(img.grad.numpy(), expected)
    examples = [
        [torch.randn(3, 64, 64), [0, 0, 10, 10]],
        [torch.randn(3, 91, 91, requires_grad=True), [10, 0, 20, 10]],
        [torch.randn(3, 60, 60, dtype=torch.double), [3, 4, 32, 20]],
        [torch.randn(3, 80, 80, requires_grad=True, dtype=torch.double), [3, 4, 32, 45]],
    ]
    for example in examples:
        torch.library.opcheck(crop, example)
    assert _schema(crop) == "mylib::crop(Tensor pic, SymInt[] box) -> Tensor"


def test_tutorial_mutable_numpy_sin_compiled_and_opcheck():
    @torch.library.custom_op("mylib::numpy_sin", mutates_args={"output"}, device_types="cpu")
    def numpy_sin(input: torch.Tensor, output: torch.Tensor) -> None:
        assert input.device == output.device
        assert input.device.type == "cpu"
        input_np = input.numpy()
        output_np = output.numpy()
        np.sin(input_np, out=output_np)

    @torch.compile(fullgraph=True)
    def f(x):
        out = torch.empty(3)
        numpy_sin(x, out)
        return out

    x = torch.randn(3)
    y = f(x)
    assert torch.allclose(y, x.sin())
    x2 = torch.randn(3)
    assert torch.allclose(f(x2), x2.sin())             # the compiled graph, not a replay
    example_inputs = [
        [torch.randn(3), torch.empty(3)],
        [torch.randn(0, 3), torch.empty(0, 3)],
        [torch.randn(1, 2, 3, 4, dtype=torch.double),
         torch.empty(1, 2, 3, 4, dtype=torch.double)],
    ]
    for example in example_inputs:
        torch.library.opcheck(numpy_sin, example)
    out = torch.empty(3)
    v = out._version
    assert numpy_sin(x, out) is None and out._version > v     # a mutation bumps the version
    assert _schema(numpy_sin) == "mylib::numpy_sin(Tensor input, Tensor(a1!) output) -> ()"
    with pytest.raises(RuntimeError, match=r"^Cannot register autograd formula for "
                       r"non-functional operator <CustomOpDef\(mylib::numpy_sin\)> with schema "
                       r"mylib::numpy_sin\(Tensor input, Tensor\(a1!\) output\) -> \(\)\. "
                       "Please create a functional operator"):
        numpy_sin.register_autograd(lambda ctx, g: None)


def test_undeclared_mutation_is_caught_by_opcheck():
    @torch.library.custom_op("mylib::sin_into", mutates_args=(), device_types="cpu")
    def sin_into(input: torch.Tensor, output: torch.Tensor) -> None:
        np.sin(input.numpy(), out=output.numpy())

    with pytest.raises(torch.library.OpCheckError,
                       match="test_schema failed with Argument output is not defined as "
                             "mutable but was mutated"):
        torch.library.opcheck(sin_into, [torch.randn(3), torch.empty(3)])


# ---- schema inference ----------------------------------------------------------------------

def test_schema_inference_as_pytorch():
    def f1(x: torch.Tensor, *, y: float = 2.0) -> torch.Tensor:
        return x * y

    def f2(x: torch.Tensor, y: torch.Tensor) -> None:
        y.add_(x)

    def f3(x: torch.Tensor) -> tuple[torch.Tensor, int]:
        return x * 2, 1

    def f4(x: torch.Tensor, s: Sequence[float], n: int = None) -> list[torch.Tensor]:
        return [x * 2]

    def f5(x: Optional[torch.Tensor], xs: list[torch.Tensor], a: int,
           g: list[Optional[torch.Tensor]], b: bool = False, c: str = "x",
           d: Optional[int] = None, e: torch.types.Number = 2, f: torch.dtype = torch.float32,
           h: Optional[Sequence[int]] = None, i: float = 1e-5, j: torch.device = "cpu",
           k: float = -2.0, m: int = -3) -> torch.Tensor:
        return xs[0] * 2

    def f6(x: "torch.Tensor") -> "torch.Tensor":
        return x.clone()

    cases = [(f1, (), "mylib::f1(Tensor x, *, float y=2.) -> Tensor"),
             (f2, ("y",), "mylib::f2(Tensor x, Tensor(a1!) y) -> ()"),
             (f2, "unknown", "mylib::f2(Tensor(a0!) x, Tensor(a1!) y) -> ()"),
             (f3, (), "mylib::f3(Tensor x) -> (Tensor, SymInt)"),
             (f4, (), "mylib::f4(Tensor x, float[] s, SymInt n=None) -> Tensor[]"),
             (f5, (), "mylib::f5(Tensor? x, Tensor[] xs, SymInt a, Tensor?[] g, bool b=False, "
                      "str c=\"x\", SymInt? d=None, Scalar e=2, ScalarType f=6, "
                      "SymInt[]? h=None, float i=1.0000000000000001e-05, Device j=cpu, "
                      "float k=-2., SymInt m=-3) -> Tensor"),
             (f6, (), "mylib::f6(Tensor x) -> Tensor")]
    for fn, mutates, expected in cases:
        op = torch.library.custom_op(f"mylib::{fn.__name__}", fn, mutates_args=mutates)
        assert _schema(op) == expected
    assert torch.library.infer_schema(f1, mutates_args=()) == \
        "(Tensor x, *, float y=2.0) -> Tensor"


def test_schema_inference_errors():
    def unannotated(x):
        return x

    def no_return(x: torch.Tensor):
        return x

    def bad_type(x: torch.Tensor, y: dict) -> torch.Tensor:
        return x

    def varargs(x: torch.Tensor, *args) -> torch.Tensor:
        return x

    def tuple_arg(x: torch.Tensor, t: tuple[int, int]) -> torch.Tensor:
        return x

    def list_default(x: torch.Tensor, t: Sequence[int] = [1]) -> torch.Tensor:
        return x

    def opt_return(x: torch.Tensor) -> Optional[torch.Tensor]:
        return x

    def mutates_int(x: torch.Tensor, n: int) -> torch.Tensor:
        return x

    cases = [(unannotated, (), "Parameter x must have a type annotation."),
             (no_return, (), "No return type annotation was provided. Please add one."),
             (bad_type, (), "Parameter y has unsupported type <class 'dict'>. The valid types"),
             (varargs, (), "We do not support positional-only args, varargs, or varkwargs."),
             (tuple_arg, (), "We do not support Tuple inputs in schema."),
             (list_default, (), "Parameter t has an unsupported default value type "
                                "<class 'list'>"),
             (opt_return, (), "Return has unsupported type typing.Optional"),
             (mutates_int, ("n",), "Parameter n is in mutable_args but only Tensors or "
                                   "collections of Tensors can be mutated"),
             (mutates_int, ("zz",), "{'zz'} in mutates_args were not found in the custom "
                                    "op's signature")]
    for fn, mutates, message in cases:
        with pytest.raises(ValueError, match=r"^infer_schema\(func\): ") as info:
            torch.library.custom_op("mylib::bad", fn, mutates_args=mutates)
        assert message in str(info.value) and "Got func with signature" in str(info.value)
    with pytest.raises(ValueError, match='Expected `qualname` to be of the form '
                                         '"namespace::name", but got f9'):
        torch.library.custom_op("f9", mutates_args=())(no_return)
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: "
                                        "'mutates_args'"):
        torch.library.custom_op("mylib::f", device_types="cpu")


# ---- calling: arguments, aliasing, devices ----------------------------------------------

def test_argument_errors_as_pytorch():
    @torch.library.custom_op("mylib::scale", mutates_args=())
    def scale(x: torch.Tensor, k: float, *, n: int = 1) -> torch.Tensor:
        return x * k * n

    x = torch.ones(2)
    np.testing.assert_array_equal(scale(x, 2, n=3).numpy(), [6, 6])     # int for float: ok
    decl = "Declaration: mylib::scale(Tensor x, float k, *, SymInt n=1) -> Tensor"
    with pytest.raises(RuntimeError) as info:
        scale(x)
    assert str(info.value) == f"mylib::scale() is missing value for argument 'k'. {decl}"
    with pytest.raises(RuntimeError) as info:
        scale(x, "a")
    assert str(info.value) == ("mylib::scale() Expected a value of type 'float' for argument "
                               f"'k' but instead found type 'str'.\nPosition: 1\nValue: 'a'\n"
                               f"{decl}")
    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor' for argument 'x'"):
        scale(3.0, 1.0)
    with pytest.raises(RuntimeError, match="Expected a value of type 'int' for argument 'n'"):
        scale(x, 1.0, n=2.5)
    with pytest.raises(RuntimeError, match=r"takes 2 positional argument\(s\) but 3 was/were"):
        scale(x, 1.0, 2)
    with pytest.raises(RuntimeError, match="Unknown keyword argument 'm' for operator "
                                           "'mylib::scale'"):
        scale(x, 1.0, m=2)


def test_outputs_must_not_alias_inputs():
    @torch.library.custom_op("mylib::same", mutates_args=())
    def same(x: torch.Tensor) -> torch.Tensor:
        return x

    @torch.library.custom_op("mylib::view", mutates_args=())
    def view(x: torch.Tensor) -> torch.Tensor:
        return x.view(-1)

    @torch.library.custom_op("mylib::twice", mutates_args=())
    def twice(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = x * 2
        return y, y

    @torch.library.custom_op("mylib::shares", mutates_args=())
    def shares(x: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(x.numpy())        # a new storage over the same memory: ok

    for op in (same, view, twice):
        with pytest.raises(RuntimeError, match=f"^{op.__name__} \\(with implementation in "
                           r"<module '[\w.]+'>\): The output of this custom operator \(1\) "
                           "must not also be an input"):
            op(torch.randn(2, 2))
    assert shares(torch.ones(2)).shape == (2,)


def test_register_kernel_per_device_and_set_kernel_enabled():
    @torch.library.custom_op("mylib::dev", mutates_args=(), device_types="cpu")
    def dev(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    x = torch.ones(2)
    assert dev(x).tolist() == [2, 2]

    @dev.register_kernel("cpu")
    def _(x):
        return x * 3

    assert dev(x).tolist() == [3, 3]
    with dev.set_kernel_enabled("cpu", False):
        assert dev(x).tolist() == [2, 2]
    assert dev(x).tolist() == [3, 3]
    assert torch.library.kernel("mylib::dev", "cpu") is _      # in the device registry
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type at start "
                                           "of device string: tpu"):
        dev.register_kernel("tpu")

    @torch.library.custom_op("mylib::gpu_only", mutates_args=(), device_types="cuda")
    def gpu_only(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    with pytest.raises(NotImplementedError, match="Could not run 'mylib::gpu_only' with "
                                                  "arguments from the 'CPU' backend"):
        gpu_only(x)
    torch.library.register_kernel("mylib::gpu_only", "cpu", lambda x: x + 1)
    assert gpu_only(x).tolist() == [2, 2]


# ---- autograd ----------------------------------------------------------------------------

def _mysin():
    @torch.library.custom_op("mylib::mysin", mutates_args=())
    def mysin(x: torch.Tensor, k: float) -> torch.Tensor:
        return torch.from_numpy(np.sin(x.numpy()) * k)
    return mysin


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.k = inputs[1]


def test_autograd_gradcheck_needs_input_grad_and_no_grad():
    mysin = _mysin()
    seen = []

    def backward(ctx, g):
        seen.append(ctx.needs_input_grad)
        x, = ctx.saved_tensors
        return g * x.cos() * ctx.k, None

    calls = []
    mysin.register_autograd(backward, setup_context=lambda *a: (calls.append(1), _setup(*a)))
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: mysin(x, 2.0), (x,))
    assert seen[0] == (True, False)
    n = len(calls)
    with torch.no_grad():
        mysin(x, 2.0)
    mysin(x.detach(), 2.0)
    assert len(calls) == n                     # setup_context runs only when recording
    mysin.register_autograd(lambda ctx, g: (g * ctx.saved_tensors[0].cos() * ctx.k, None,
                                            None), setup_context=_setup)
    mysin(x, 2.0).sum().backward()             # trailing Nones are accepted, as in PyTorch


def test_autograd_errors_as_pytorch():
    mysin = _mysin()
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    node = "GeneratedBackwardFor_mylib_mysin_defaultBackward"
    with pytest.raises(RuntimeError, match="^Trying to backward through mylib.mysin.default "
                                           "but no autograd formula was registered. Please "
                                           "use register_autograd to add one.$"):
        mysin(x, 2.0).sum().backward()
    cases = [(lambda ctx, g: g, r"function %s returned an incorrect number of gradients "
                                r"\(expected 2, got 1\)" % node),
             (lambda ctx, g: (g, g), f"function {node} returned a gradient different than "
                                     "None at position 2, but the corresponding forward input "
                                     "was not a Variable"),
             (lambda ctx, g: (3.0, None), r"expected Variable or None \(got float\)"),
             (lambda ctx, g: (g[:1], None), f"Function {node} returned an invalid gradient at "
                                            r"index 0 - got \[1\] but expected shape "
                                            r"compatible with \[3\]")]
    for backward, message in cases:
        mysin.register_autograd(backward, setup_context=_setup)
        with pytest.raises(RuntimeError, match=message):
            mysin(x, 2.0).sum().backward()


def test_list_inputs_and_outputs():
    @torch.library.custom_op("mylib::prod2", mutates_args=())
    def prod2(xs: list[torch.Tensor]) -> torch.Tensor:
        return xs[0] * xs[1]

    seen = []

    def backward(ctx, g):
        a, b = ctx.saved_tensors
        seen.append(ctx.needs_input_grad)
        return [g * b, g * a]

    prod2.register_autograd(backward, setup_context=lambda ctx, inputs, output:
                            ctx.save_for_backward(*inputs[0]))
    a = torch.randn(3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: prod2([a, b]), (a, b))
    assert seen[0] == ([True, True],)
    prod2.register_autograd(lambda ctx, g: (g,), setup_context=lambda *a: None)
    with pytest.raises(RuntimeError, match="Expected the return from backward to be of the "
                                           "same structure as the inputs"):
        prod2([a, b]).sum().backward()

    @torch.library.custom_op("mylib::split2", mutates_args=())
    def split2(x: torch.Tensor) -> list[torch.Tensor]:
        return [x * 2, x * 3]

    split2.register_autograd(lambda ctx, g1, g2: 2 * g1 + 3 * g2)
    outs = split2(a)
    assert isinstance(outs, list) and len(outs) == 2
    assert torch.autograd.gradcheck(lambda a: tuple(split2(a)), (a,))

    @torch.library.custom_op("mylib::with_int", mutates_args=())
    def with_int(x: torch.Tensor) -> tuple[torch.Tensor, int]:
        return x * 2, x.shape[0]

    y, n = with_int(a)
    assert n == 3 and y.requires_grad


def test_compile_and_trace_record_the_op_with_its_own_backward():
    @torch.library.custom_op("mylib::ste_round", mutates_args=())
    def ste_round(x: torch.Tensor) -> torch.Tensor:
        return x.round()                       # one elementwise kernel: still one op node

    ste_round.register_fake(lambda x: torch.empty_like(x))
    ste_round.register_autograd(lambda ctx, g: g)      # straight-through

    def f(x):
        return ste_round(x * 3.0).sin()

    x = torch.randn(6, requires_grad=True)
    f(x).sum().backward()
    eager = x.grad.clone()
    x.grad = None
    compiled = torch.compile(f, fullgraph=True)
    y = compiled(x)
    np.testing.assert_allclose(y.detach().numpy(), np.sin(np.round(x.detach().numpy() * 3)),
                               rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), eager.numpy(), rtol=1e-6)
    traced = torch.jit.trace(f, (x.detach(),))
    targets = [n.target for n in traced.graph.nodes if n.op == "call_function"]
    assert ste_round in targets


def test_pytorch_agrees():
    """The same op in PyTorch 2.13 and nbtorch: schema, values, gradients, error texts."""
    pt = pytest.importorskip("torch")

    def make(lib):
        def body(x, y, alpha=1.0):
            return x + alpha * y.sin()
        body.__annotations__ = {"x": lib.Tensor, "y": lib.Tensor, "alpha": float,
                                "return": lib.Tensor}
        op = lib.library.custom_op("nbtest::axsin", body, mutates_args=())
        op.register_autograd(
            lambda ctx, g: (g, g * ctx.alpha * ctx.y.cos(), None),
            setup_context=lambda ctx, inputs, output: (
                setattr(ctx, "alpha", inputs[2]), setattr(ctx, "y", inputs[1])))
        return op

    ops = make(pt), make(torch)
    assert str(ops[0]._opoverload._schema) == str(ops[1]._opoverload._schema)
    a, b = np.random.randn(2, 3), np.random.randn(2, 3)
    results = []
    for lib, op in zip((pt, torch), ops):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        out = op(x, y, alpha=2.0)
        out.sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy(), y.grad.numpy()))
        errors = []
        for call in (lambda: op(x), lambda: op(x, y, "a")):
            with pytest.raises(RuntimeError) as info:
                call()
            errors.append(str(info.value).split("\nCast error details")[0])
        results.append(errors)
    for u, v in zip(results[0], results[2]):
        np.testing.assert_allclose(u, v)
    assert results[1] == results[3]


def test_autocast_vmap_and_stored_rules():
    seen = []

    @torch.library.custom_op("mylib::mm2", mutates_args=())
    def mm2(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        seen.append((torch.is_autocast_enabled("cpu"), a.dtype))
        return a @ b

    mm2.register_autocast("cpu", torch.bfloat16)
    a = torch.randn(2, 2)
    with torch.autocast("cpu"):
        assert mm2(a, a).dtype == torch.bfloat16
    assert mm2(a, a).dtype == torch.float32
    assert seen == [(False, torch.bfloat16), (False, torch.float32)]     # as PyTorch 2.13
    x = torch.randn(3, 2, 2)
    out = torch.func.vmap(mm2, in_dims=(0, None))(x, a)
    np.testing.assert_allclose(out.numpy(), x.numpy() @ a.numpy(), rtol=1e-6)

    def rule(info, in_dims, a, b):
        return a @ b, 0

    torch.library.register_vmap("mylib::mm2", rule)
    assert mm2._vmap_fn is rule
    torch.library.register_torch_dispatch(mm2, object, lambda *a: None)
    torch.library.impl("mylib::mm2", "Autograd", torch.library.fallthrough_kernel)
    assert mm2(a, a).shape == (2, 2)           # the fallthrough changed nothing
    with pytest.raises(NotImplementedError, match="nbtorch has no Triton"):
        torch.library.wrap_triton(None)


def test_pytorch_docstring_examples():
    """torch.library's own docstring examples: a data-dependent output size, a factory,
    an in-place op, a kernel added for one device."""
    from nbtorch import Tensor

    @torch.library.custom_op("mylib::custom_nonzero", mutates_args=())
    def custom_nonzero(x: Tensor) -> Tensor:
        x_np = x.numpy(force=True)
        res = np.stack(np.nonzero(x_np), axis=1)
        return torch.tensor(res, device=x.device)

    @custom_nonzero.register_fake
    def _(x):
        ctx = torch.library.get_ctx()
        nnz = ctx.new_dynamic_size()
        shape = [nnz, x.dim()]
        result = x.new_empty(shape, dtype=torch.int64)
        return result

    x = torch.tensor([0, 1, 2, 3, 4, 0])
    assert custom_nonzero(x).flatten().tolist() == [1, 2, 3, 4]
    torch.library.opcheck(custom_nonzero, (x,))

    @torch.library.custom_op("mylib::bar", mutates_args={}, device_types="cpu")
    def bar(device: torch.device) -> Tensor:
        return torch.ones(3)

    assert bar("cpu").tolist() == [1, 1, 1]

    @torch.library.custom_op("mylib::numpy_sin_inplace", mutates_args={"x"},
                             device_types="cpu")
    def numpy_sin_inplace(x: Tensor) -> None:
        x_np = x.numpy()
        np.sin(x_np, out=x_np)

    x = torch.randn(3)
    expected = np.sin(x.numpy())
    numpy_sin_inplace(x)
    np.testing.assert_allclose(x.numpy(), expected)

    @torch.library.custom_op("mylib::numpy_cos", mutates_args=(), device_types="cpu")
    def numpy_cos(x: Tensor) -> Tensor:
        return torch.from_numpy(np.cos(x.numpy()))

    @torch.library.register_kernel("mylib::numpy_cos", "cuda")
    def _(x):
        return torch.from_numpy(np.cos(x.cpu().numpy())).to(device=x.device)

    assert numpy_cos.devices == ("cpu", "cuda")
