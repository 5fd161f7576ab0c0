"""Autograd behaviour a sweep against PyTorch found different: grad-mode decorators,
requires_grad_ on non-leaves, torch.func results connected to closed-over parameters."""
import pytest

import nbtorch as torch


def test_set_grad_enabled_as_a_decorator_leaves_the_mode_alone():
    @torch.set_grad_enabled(False)
    def f(x):
        return x * 2
    assert torch.is_grad_enabled()                  # turned off for the program before
    x = torch.ones(2, requires_grad=True)
    assert not f(x).requires_grad and (x * 2).requires_grad


def test_bare_inference_mode_decorator_and_decorated_generators():
    @torch.inference_mode
    def f(x):
        return x * 2
    assert f(torch.ones(2)).tolist() == [2.0, 2.0]  # returned a function before

    @torch.no_grad()
    def gen(x):
        yield (x * 2).requires_grad
        yield (x * 3).requires_grad
    x = torch.ones(2, requires_grad=True)
    assert list(gen(x)) == [False, False]           # the context closed at the first yield
    assert torch.is_grad_enabled()


def test_requires_grad_true_on_a_non_leaf_that_requires_grad_is_a_no_op():
    h = torch.ones(2, requires_grad=True) * 2
    assert h.requires_grad_(True) is h


def test_func_results_stay_differentiable_for_closed_over_parameters():
    """A gradient penalty / meta-learning: grad(f)(x) must depend on the weights f reads."""
    w = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    x = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64)
    g = torch.func.grad(lambda a: (a * w).sin().sum())(x)
    assert g.requires_grad
    got, = torch.autograd.grad(g.sum(), w)
    # d/dw sum_i w_i cos(a_i w_i) = cos(a w) - a w sin(a w)
    want = (x * w).cos() - x * w * (x * w).sin()
    assert torch.allclose(got, want.detach())
    assert torch.func.jacrev(lambda a: (a * w).sin())(x).requires_grad
    assert not torch.func.grad(lambda a: (a * 2.0).sin().sum())(x).requires_grad


class _Sin(torch.autograd.Function):
    """PyTorch 2's style: forward without ctx, setup_context saves."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * x.cos()


def test_functions_in_the_setup_context_style():
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)   # TypeError before
    _Sin.apply(x).sum().backward()
    assert torch.allclose(x.grad, x.detach().cos())
    assert torch.autograd.gradcheck(_Sin.apply, (x[0].detach().requires_grad_(),))
    assert torch.vmap(_Sin.apply)(x).shape == (4, 3)
    g = torch.func.grad(lambda a: _Sin.apply(a).sum())(torch.zeros(3))
    assert g.tolist() == [1.0, 1.0, 1.0]


def test_saved_tensors_hooks_pack_and_unpack_what_nodes_save():
    packed, unpacked = [], []

    def pack(t):
        packed.append(tuple(t.shape))
        return t.clone()

    def unpack(t):
        unpacked.append(tuple(t.shape))
        return t
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x.exp() * x).sin().sum()           # exp: its output; mul: both; sin: its input
    y.backward()
    assert len(packed) == len(unpacked) == 4
    e = x.detach().exp()
    assert torch.allclose(x.grad, (e * x.detach()).cos() * (e * x.detach() + e))
    lin = torch.nn.Linear(3, 2).double()
    x.grad = None
    with torch.autograd.graph.save_on_cpu():
        lin(x).relu().sum().backward()
    assert x.grad is not None
    with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        try:
            with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                raise AssertionError("entered")
        except RuntimeError as e:
            assert "no hooks here" in str(e)


def test_node_hooks_and_retained_gradients_as_pytorchs():
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x.exp()
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] * 0,))
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]            # the post-hook's return was ignored
    x.grad, calls = None, []
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda go: calls.append("pre") or (go[0] * 5,))
    acc.register_hook(lambda gi, go: calls.append("post"))
    y.sum().backward()
    assert calls == ["pre", "post"] and x.grad.tolist() == [10.0, 10.0]   # never ran
    h = x * 3
    h.retain_grad()
    (h * h).sum().backward(create_graph=True)
    assert h.grad.requires_grad                     # detached before
    w = torch.ones(2, 3, requires_grad=True)
    w.register_hook(lambda g: g.sum())
    try:
        w.sum().backward()
    except RuntimeError as e:
        assert "has changed the size of value" in str(e)
    else:
        raise AssertionError("a hook changing the gradient's size was accepted")


def test_grad_with_batched_grad_outputs_gives_the_jacobian():
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    y = x * x
    jac, = torch.autograd.grad(y, x, torch.eye(3, dtype=torch.float64),
                               is_grads_batched=True)        # 'Mismatch in shape' before
    assert jac.tolist() == [[2, 0, 0], [0, 4, 0], [0, 0, 6]]
    try:
        torch.autograd.grad(y, x, torch.ones(3, dtype=torch.float64), allow_unused=False,
                            materialize_grads=True)
    except ValueError as e:
        assert "materialize_grads" in str(e)
    else:
        raise AssertionError("materialize_grads with allow_unused=False was accepted")


def test_non_reentrant_checkpoint_supports_double_backward():
    from nbtorch.utils.checkpoint import checkpoint
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = checkpoint(lambda a: a ** 3, x, use_reentrant=False)
    g, = torch.autograd.grad(y.sum(), x, create_graph=True)
    assert g.requires_grad                          # no graph before
    gg, = torch.autograd.grad(g.sum(), x)
    assert gg.tolist() == [3.0, -6.0, 12.0]


def test_backward_with_inputs_accumulates_once_as_a_plain_backward():
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    h = x * 3
    h.retain_grad()
    (h * 2).sum().backward(inputs=[h])
    assert h.grad.tolist() == [2.0, 2.0, 2.0]              # counted twice before
    seen = []
    x.register_post_accumulate_grad_hook(lambda p: seen.append(1))
    (x * 2).sum().backward(inputs=[x])
    g = x.grad
    (x * 2).sum().backward(inputs=[x])
    assert seen == [1, 1] and g is x.grad and x.grad.tolist() == [4.0, 4.0, 4.0]
    try:
        (x * 2).sum().backward(inputs=[])
    except RuntimeError as e:
        assert "cannot be empty" in str(e)
    else:
        raise AssertionError("inputs=[] was accepted")


def test_full_backward_hook_of_a_module_returning_a_dict_is_not_called():
    class M(torch.nn.Module):
        def forward(self, x):
            return {"a": x * 2, "n": 3}
    m, calls = M(), []
    m.register_full_backward_hook(lambda mod, gi, go: calls.append(go))
    a = torch.ones(2, requires_grad=True)
    m(a)["a"].sum().backward()          # called with grad_output None before (user crash)
    assert calls == [] and a.grad.tolist() == [2.0, 2.0]


def test_vmap_refuses_a_batched_output_with_out_dims_none():
    try:
        torch.vmap(lambda x: x * 2, out_dims=None)(torch.arange(3.0))
    except ValueError as e:
        assert "out_dim is None" in str(e)        # returned element 0 before
    else:
        raise AssertionError("a batched output with out_dims=None was accepted")
    assert torch.vmap(lambda x: torch.ones(2), out_dims=None)(torch.arange(3.0)).shape == (2,)


def test_gradcheck_checks_complex_gradients_and_reentrancy():
    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            return z * (1 + 1j)

        @staticmethod
        def backward(ctx, g):
            return g * (1 + 1j)                     # PyTorch's convention: g * (1 - 1j)
    z = torch.tensor([1 + 2j, -0.5 + 0.3j], dtype=torch.complex128, requires_grad=True)
    assert not torch.autograd.gradcheck(Wrong.apply, (z,), raise_exception=False)
    for f in (lambda a: a * a, lambda a: a.abs(), lambda a: a.exp()):
        assert torch.autograd.gradcheck(f, (z,))

    import random
    r = random.Random(0)

    class Noisy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 + r.random() * 1e-7
    x = torch.tensor([0.1, 0.2], dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(Noisy.apply, (x,), raise_exception=False)
    assert torch.autograd.gradcheck(Noisy.apply, (x,), nondet_tol=1e-6)
    # the error says where and by how much the two backward passes differ
    from nbtorch.autograd.gradcheck import GradcheckError
    with pytest.raises(GradcheckError,
                       match=r"not reentrant.*Input 0: elements \[0, 1\] differ, by up to"):
        torch.autograd.gradcheck(Noisy.apply, (x,))
