"""Regressions found by running whole PyTorch-style programs (training loops, tensor-subclass
libraries, EMA helpers) under ``import nbtorch as torch``."""
import nbtorch as torch


def test_operators_reach_torch_function_as_the_named_tensor_method():
    """`a + b` arrives as ``Tensor.add`` (``a *= 2`` as ``Tensor.mul_``...), as in PyTorch, so
    HANDLED_FUNCTIONS tables keyed on methods, and handlers keyed on names, see operators."""
    seen = []

    class Logged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return super().__torch_function__(func, types, args, kwargs or {})

    t = torch.ones(3).as_subclass(Logged)
    cases = [(lambda: t + 1, torch.Tensor.add), (lambda: 1 + t, torch.Tensor.add),
             (lambda: t - 1, torch.Tensor.sub), (lambda: 2 * t, torch.Tensor.mul),
             (lambda: t / 2, torch.Tensor.div), (lambda: t % 2, torch.Tensor.remainder),
             (lambda: t ** 2, torch.Tensor.pow), (lambda: -t, torch.Tensor.neg),
             (lambda: t < 1, torch.Tensor.lt), (lambda: t != 1, torch.Tensor.ne),
             (lambda: t @ t, torch.Tensor.matmul)]
    for op, want in cases:
        seen.clear()
        out = op()
        assert seen[0] is want, (want, seen)
        assert type(out) is Logged
    assert (t + 1).tolist() == [2.0, 2.0, 2.0] and (1 - t).tolist() == [0.0, 0.0, 0.0]
    u = torch.ones(2).as_subclass(Logged)
    seen.clear()
    u *= 3
    assert seen[0] is torch.Tensor.mul_ and u.tolist() == [3.0, 3.0]


def test_modes_see_operators_on_plain_tensors_as_named_methods():
    seen = []

    class Mode(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", None))
            return func(*args, **(kwargs or {}))

    x = torch.ones(2)
    with Mode():
        y = x * 2 + 1
    assert seen[:2] == ["mul", "add"] and y.tolist() == [3.0, 3.0]


def test_embedding_bag_sparse_gradient_as_the_text_classification_tutorial():
    """nn.EmbeddingBag(sparse=True) + SparseAdam (NotImplementedError before): the gradient
    is sparse COO with one row per non-padding index, equal to the dense gradient."""
    import numpy as np
    F = torch.nn.functional
    w0 = np.random.RandomState(0).randn(6, 2).astype(np.float32)
    inp, offs = torch.tensor([1, 2, 1, 0, 3]), torch.tensor([0, 2, 2])
    for mode, pad in (("mean", 0), ("sum", None)):
        grads = []
        for sparse in (False, True):
            w = torch.tensor(w0, requires_grad=True)
            out = F.embedding_bag(inp, w, offs, mode=mode, sparse=sparse, padding_idx=pad)
            out.backward(torch.arange(6.0).view(3, 2))
            grads.append(w.grad)
        assert grads[1].is_sparse and grads[1]._nnz() == (4 if pad == 0 else 5)
        np.testing.assert_allclose(grads[1].to_dense(), grads[0], rtol=1e-6)
    bag = torch.nn.EmbeddingBag(6, 2, mode="mean", sparse=True)
    opt = torch.optim.SparseAdam(bag.parameters(), lr=0.1)
    before = bag.weight.detach().clone()
    bag(inp, offs).sum().backward()
    opt.step()
    changed = (bag.weight.detach() != before).any(1).tolist()
    assert changed == [True, True, True, True, False, False]


def test_nn_modules_utils_tuple_helpers_custom_layers_import():
    """``from torch.nn.modules.utils import _pair`` (custom conv layers): ImportError before."""
    from nbtorch.nn.modules.utils import _ntuple, _pair, _quadruple, _reverse_repeat_tuple
    assert torch.nn.modules.utils._single(3) == (3,)
    assert _pair(3) == (3, 3) and _pair([1, 2]) == (1, 2) and _quadruple(0) == (0, 0, 0, 0)
    assert _ntuple(3, "t")(1) == (1, 1, 1)
    assert _reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1)


def test_reversed_is_a_flipped_tensor():
    """``reversed(t)`` returns ``t.flip(0)`` as in PyTorch (a list_reverseiterator before)."""
    r = reversed(torch.arange(6).view(2, 3))
    assert isinstance(r, torch.Tensor) and r.tolist() == [[3, 4, 5], [0, 1, 2]]
    assert reversed(torch.tensor(5.0)).item() == 5.0


def test_autograd_grad_refuses_empty_inputs():
    import pytest
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="`inputs` argument to `grad\\(\\)` cannot be empty"):
        torch.autograd.grad(x.sum(), [], allow_unused=True)


def test_conv_forward_hook_for_weight_standardised_conv():
    """A Conv2d subclass calling ``self._conv_forward(x, w, self.bias)`` (weight
    standardisation, as BiT/timm code does): AttributeError before."""
    import numpy as np
    nn, F = torch.nn, torch.nn.functional

    class WSConv2d(nn.Conv2d):
        def forward(self, x):
            w = self.weight
            w = (w - w.mean(dim=(1, 2, 3), keepdim=True)) / (
                w.std(dim=(1, 2, 3), keepdim=True) + 1e-5)
            return self._conv_forward(x, w, self.bias)

    torch.manual_seed(0)
    conv = WSConv2d(2, 3, 3, padding=1, padding_mode="reflect")
    x = torch.randn(1, 2, 5, 5)
    w = conv.weight
    w = (w - w.mean(dim=(1, 2, 3), keepdim=True)) / (w.std(dim=(1, 2, 3), keepdim=True) + 1e-5)
    want = F.conv2d(F.pad(x, (1, 1, 1, 1), mode="reflect"), w, conv.bias)
    np.testing.assert_allclose(conv(x).detach(), want.detach(), rtol=1e-5, atol=1e-6)
    c1 = nn.Conv1d(2, 2, 3)
    assert c1._conv_forward(torch.ones(1, 2, 4), c1.weight, None).shape == (1, 2, 2)


def test_pytorch_module_paths_of_attention_classes():
    mha = torch.nn.MultiheadAttention(4, 2)
    assert isinstance(mha, torch.nn.modules.activation.MultiheadAttention)
    assert isinstance(mha.out_proj, torch.nn.modules.linear.NonDynamicallyQuantizableLinear)


def test_autograd_grad_takes_model_parameters_generator():
    """``torch.autograd.grad(loss, model.parameters(), create_graph=True)`` (MAML, gradient
    penalties): the generator was taken as one input (AttributeError before)."""
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 2)
    loss = (m(torch.ones(4, 3)) ** 2).sum()
    gw, gb = torch.autograd.grad(loss, m.parameters(), create_graph=True)
    assert gw.shape == (2, 3) and gb.shape == (2,) and gw.requires_grad
    (g2,) = torch.autograd.grad(loss, dict(m.named_parameters()).values().__iter__().__next__(),
                                retain_graph=True)
    assert g2.shape == (2, 3)
    (gv,) = torch.autograd.grad(loss, {"b": m.bias}.values())
    assert gv.shape == (2,)
    x = torch.ones(2, requires_grad=True)
    (x * 3).sum().backward(inputs=iter([x]))
    assert x.grad.tolist() == [3.0, 3.0]


def test_function_saving_for_forward_mode_runs_under_func_transforms():
    """A custom Function written for both AD modes (setup_context calls
    ctx.save_for_forward, a jvp staticmethod): AttributeError before."""
    import numpy as np

    class MyExp(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)
            ctx.save_for_forward(output)

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r

        @staticmethod
        def jvp(ctx, t):
            (r,) = ctx.saved_tensors
            return t * r

    x = torch.tensor([0.0, 1.0], dtype=torch.float64)
    np.testing.assert_allclose(torch.func.grad(lambda t: MyExp.apply(t).sum())(x), np.exp([0, 1]))
    tangent = torch.ones(2, dtype=torch.float64)
    np.testing.assert_allclose(torch.func.jvp(MyExp.apply, (x,), (tangent,))[1], np.exp([0, 1]))
    assert torch.func.vmap(MyExp.apply)(torch.zeros(3, 2)).shape == (3, 2)


def test_increment_version_makes_saved_tensors_stale():
    import pytest
    x = torch.ones(3, requires_grad=True)
    y = x.exp()
    z = y.exp()
    v = y._version
    torch.autograd.graph.increment_version(y)
    assert y._version == v + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_typed_forward_return_annotations_trace():
    """``def forward(self, x: Tensor) -> Tuple[Tensor, Optional[Tensor]]`` (typed model
    code): jit.trace, fx.symbolic_trace and export failed with NameError 'nbtorch' in the
    generated code."""
    from typing import Optional, Tuple

    class M(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
            return x + 1, x

    class N(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, ...]:
            return (x * 2,)

    x = torch.ones(2)
    assert torch.fx.symbolic_trace(M())(x)[0].tolist() == [2.0, 2.0]
    assert torch.jit.trace(N(), x)(x)[0].tolist() == [2.0, 2.0]
    assert torch.export.export(M(), (x,)).module()(x)[0].tolist() == [2.0, 2.0]


def test_script_helper_called_inside_traced_scripted_and_compiled_code():
    """A @torch.jit.script helper (timm/torchvision style) called from code that is itself
    traced, scripted or compiled runs inline in the outer graph (the scripted caller failed:
    'set_rng_state() inside compiled code'; jit.trace: a node of another graph)."""
    @torch.jit.script
    def swish(x: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
        return x * torch.sigmoid(beta * x)

    def g(x):
        return swish(x) + 1

    x = torch.tensor([0.0, 1.0])
    want = (x * torch.sigmoid(x) + 1).tolist()
    assert torch.jit.script(g)(x).tolist() == want
    assert torch.jit.trace(g, x)(x).tolist() == want
    assert torch.compile(g)(x).tolist() == want
    assert swish(x, 2.0).tolist() == (x * torch.sigmoid(2 * x)).tolist()


def test_symbolic_trace_of_forward_with_var_keyword():
    """``forward(self, x, *, scale=1.0, **kwargs)`` (HF/timm signatures) traces as PyTorch's:
    a ``**kwargs`` placeholder, extra keywords accepted and ignored (RuntimeError before)."""
    class A(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = torch.nn.Linear(2, 2)

        def forward(self, x, *, scale: float = 1.0, **kwargs):
            return self.l(x) * scale

    torch.manual_seed(0)
    m = A()
    g = torch.fx.symbolic_trace(m)
    assert [n.target for n in g.graph.nodes if n.op == "placeholder"] == ["x", "scale",
                                                                          "**kwargs"]
    x = torch.ones(1, 2)
    assert g(x, extra=3).tolist() == m(x).tolist()
    assert g(x, scale=2.0).tolist() == m(x, scale=2.0).tolist()


def test_size_arithmetic_keeps_size_and_exports_to_onnx(tmp_path):
    """``x.size()[:-1] + (n,)`` (GPT-2's Conv1D): ``(4,) + size`` and ``size * 2`` are
    Sizes as in PyTorch, and the ONNX export of such shape arithmetic is a Concat of the
    traced shape (AttributeError 'Size' has no 'dtype' before)."""
    import numpy as np
    import pytest
    assert type((4,) + torch.Size([2])) is torch.Size and (4,) + torch.Size([2]) == (4, 2)
    assert type(torch.Size([1, 2]) * 2) is torch.Size
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")

    class Conv1D(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(4, 3))
            self.bias = torch.nn.Parameter(torch.zeros(3))

        def forward(self, x):
            size_out = x.size()[:-1] + (3,)
            return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(size_out)

    m = Conv1D()
    path = str(tmp_path / "c.onnx")
    torch.onnx.export(m, (torch.randn(2, 5, 4),), path, input_names=["x"],
                      dynamic_axes={"x": {0: "b", 1: "t"}})
    x = torch.randn(3, 7, 4)
    got = ort.InferenceSession(path).run(None, {"x": x.numpy()})[0]
    np.testing.assert_allclose(got, m(x).detach().numpy(), rtol=1e-5, atol=1e-6)
