"""The __torch_function__ protocol: Tensor subclasses and TorchFunctionModes as PyTorch's
(results compared with PyTorch 2.13 when it is installed), and its switch-on leaving plain
tensors, autocast and fx as they were."""
import io
import subprocess
import sys

import numpy as np
import pytest

import nbtorch
from nbtorch import _torch_function


def _program(torch):
    """The same subclass / mode program for both libraries: what it observes."""
    out, log = [], []

    class MyT(torch.Tensor):
        pass

    class Logged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append(torch.overrides.resolve_name(func))
            return super().__torch_function__(func, types, args, kwargs)

    x = torch.tensor([1., -2., 3.], requires_grad=True)
    b = (x * 2).as_subclass(MyT)
    for r in (b, b + 1, 1 + b, torch.add(b, 1), torch.stack([b, b]), b.max(0), b.max(0).values,
              b.T, b[0], b.sum().item(), torch.nn.functional.relu(b),
              torch.nn.Linear(3, 2)(b), torch.where(b > 1, b, torch.zeros(3)), b.unbind()[0],
              b.clone(), b.detach(), b.to(torch.float64)):
        out.append(type(r).__name__)
    (b * 3).sum().backward()
    out.append(x.grad.tolist())
    p = torch.nn.Parameter(torch.randn(2))
    out += [type(p * 2).__name__, type(p.as_subclass(MyT) * 2).__name__]
    y = torch.tensor([1., 2.]).as_subclass(Logged)
    out += [type(torch.relu(y * 2 + 1).sum()).__name__, list(log)]
    out.append(repr(torch.tensor([1., 2.]).as_subclass(MyT)))

    class Seen(torch.overrides.TorchFunctionMode):
        def __init__(self, tag, seen):
            super().__init__()
            self.tag, self.seen = tag, seen

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.seen.append((self.tag, torch.overrides.resolve_name(func)))
            out = func(*args, **(kwargs or {}))
            return out * 0 if func is torch.ones else out
    seen = []
    with Seen("outer", seen), Seen("inner", seen):
        c = torch.add(torch.ones(2), 1)
    out += [seen, c.tolist()]

    class Diag:                         # a duck type (not a Tensor)
        def __init__(self, v):
            self.v = v

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return args[0].v / 2 if func is torch.mean else NotImplemented
    out.append(torch.mean(Diag(3.0)))
    for call in (lambda: torch.sum(Diag(1.0)),
                 lambda: torch.zeros(2).as_subclass(Bad(torch)) + 1):
        with pytest.raises(TypeError) as e:
            call()
        out.append(str(e.value).split(";")[0])
    out += [torch.overrides.has_torch_function((b,)), torch.overrides.has_torch_function((x,)),
            torch.overrides.is_tensor_like(Diag(1.0)),
            torch.overrides.is_tensor_method_or_property(torch.Tensor.add)]
    return out


def Bad(torch):
    class Bad(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented
    return Bad


def test_subclasses_and_modes_behave_as_pytorch():
    got = _program(nbtorch)
    assert got[:17] == ["MyT"] * 5 + ["max"] + ["MyT"] * 3 + ["float"] + ["MyT"] * 7
    assert got[17] == [6.0, 6.0, 6.0] and got[18:20] == ["Tensor", "MyT"]
    assert got[21] == ["torch.Tensor.mul", "torch.Tensor.add", "torch.relu", "torch.Tensor.sum"]
    assert got[22] == "MyT([1., 2.])"
    assert got[23] == [("inner", "torch.ones"), ("outer", "torch.ones"),   # inner's `* 0`
                       ("outer", "torch.Tensor.mul"), ("inner", "torch.add"),  # goes outward
                       ("outer", "torch.add")]
    assert got[24] == [1.0, 1.0] and got[25] == 1.5
    assert got[26] == "Multiple dispatch failed for 'torch.sum'"
    assert got[27] == "unsupported operand type(s) for +: 'Bad' and 'int'"
    torch = pytest.importorskip("torch")
    assert got == _program(torch)


def test_plain_tensors_untouched_until_something_takes_part():
    code = ("import nbtorch, nbtorch.nn, nbtorch.sparse, nbtorch.ao.quantization, nbtorch.fx\n"
            "from nbtorch import _torch_function as tf\na = tf.is_active()\n"
            "class P(nbtorch.nn.Parameter): pass\n"
            "b = tf.is_active()\n"
            "class S(nbtorch.Tensor): pass\n"
            "print(a, b, tf.is_active(), type(nbtorch.add).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "True", "_Dispatcher"]


def test_switched_on_keeps_fx_autocast_and_identity():
    class Sub(nbtorch.Tensor):
        pass
    assert _torch_function.is_active()
    assert nbtorch.relu == nbtorch.nn.functional.relu and nbtorch.functional.einsum is \
        nbtorch.einsum
    gm = nbtorch.fx.symbolic_trace(lambda x: nbtorch.relu(x) + 1)
    assert any(n.target == nbtorch.relu for n in gm.graph.nodes)
    w = nbtorch.randn(4, 3)
    with nbtorch.autocast("cpu", dtype=nbtorch.bfloat16):
        assert nbtorch.nn.functional.linear(nbtorch.randn(2, 3), w).dtype == nbtorch.bfloat16
        s = nbtorch.randn(2, 3).as_subclass(Sub)
        r = nbtorch.matmul(s, w.t())
    assert type(r) is Sub and r.dtype == nbtorch.bfloat16
    np.testing.assert_allclose(nbtorch.jit.trace(lambda x: nbtorch.relu(x) * 2,
                                                 (nbtorch.ones(2),))(-nbtorch.ones(2)).numpy(),
                               [0.0, 0.0])


def test_disable_contexts_and_wrap_torch_function():
    class MyT(nbtorch.Tensor):
        pass
    b = nbtorch.ones(2).as_subclass(MyT)
    with nbtorch.overrides.DisableTorchFunctionSubclass():
        assert type(b + 1) is nbtorch.Tensor

    @nbtorch.overrides.wrap_torch_function(lambda a: (a,))
    def myfn(a):
        return a + 0

    class Catch(nbtorch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is myfn:
                return "intercepted"
            return super().__torch_function__(func, types, args, kwargs)
    assert myfn(nbtorch.zeros(1).as_subclass(Catch)) == "intercepted"
    assert type(myfn(nbtorch.zeros(1))) is nbtorch.Tensor
    table = nbtorch.overrides.get_overridable_functions()
    assert nbtorch.Tensor in table and len(table[nbtorch.Tensor]) > 300


def test_subclass_save_load_and_make_subclass():
    class Tagged(nbtorch.Tensor):
        @staticmethod
        def __new__(cls, data, tag=None):
            t = nbtorch.Tensor._make_subclass(cls, data, data.requires_grad)
            t.tag = tag
            return t

        def __init__(self, data, tag=None):
            pass
    t = Tagged(nbtorch.tensor([1., 2.]), tag="hi")
    assert type(t * 2) is Tagged and t.tag == "hi"
    globals()["Tagged"] = Tagged
    Tagged.__qualname__ = "Tagged"
    buf = io.BytesIO()
    nbtorch.save({"t": t}, buf)
    buf.seek(0)
    with pytest.raises(Exception, match="add_safe_globals"):
        nbtorch.load(buf)
    buf.seek(0)
    with nbtorch.serialization.safe_globals([Tagged]):
        back = nbtorch.load(buf)["t"]
    assert type(back) is Tagged and back.tag == "hi" and back.tolist() == [1.0, 2.0]


def test_torch_C_names_subclass_code_uses():
    class Plain(nbtorch.Tensor):
        __torch_function__ = nbtorch._C._disabled_torch_function_impl
    x = nbtorch.ones(2).as_subclass(Plain)
    assert type(x * 2) is nbtorch.Tensor and not _torch_function.is_active()
    assert nbtorch._C._is_torch_function_enabled()
    with nbtorch._C.DisableTorchFunctionSubclass():
        assert not nbtorch._C._is_torch_function_enabled()
    assert nbtorch._C._len_torch_function_stack() == 0 and nbtorch._C._get_tracing_state() is None


def test_pytorch_functions_given_nbtorch_tensors_raise_a_type_error():
    """Real PyTorch calls nbtorch.Tensor.__torch_function__ for its own functions: they get
    NotImplemented (PyTorch's TypeError), not a call back into PyTorch (a recursion loop)."""
    torch = pytest.importorskip("torch")
    x = nbtorch.randn(1, 1, 4, 4)
    w = nbtorch.randn(1, 1, 3, 3)
    for fn, args in ((torch.nn.functional.conv2d, (x, w)), (torch.add, (x, x)),
                     (torch.nn.functional.relu, (x,))):
        with pytest.raises(TypeError):
            fn(*args)
    assert nbtorch.nn.functional.conv2d(x, w).shape == (1, 1, 2, 2)
