"""autograd.Function's vmap staticmethod / generate_vmap_rule under torch.func.vmap."""
import numpy as np
import pytest

import nbtorch


def _scale_fn(lib, calls):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

        @staticmethod
        def vmap(info, in_dims, x, k):
            calls.append((info.batch_size, info.randomness, in_dims, tuple(x.shape)))
            return Scale.apply(x, k * 10), in_dims[0]
    return Scale


def test_vmap_rule_used_for_apply():
    calls = []
    scale = _scale_fn(nbtorch, calls)
    x = nbtorch.ones(3, 2, requires_grad=True)
    y = nbtorch.func.vmap(scale.apply, in_dims=(-1, None))(x, 2.0)
    assert calls == [(2, "error", (1, None), (3, 2))]
    assert tuple(y.shape) == (2, 3)
    np.testing.assert_allclose(y.detach().numpy(), np.full((2, 3), 20.0))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 2), 20.0))


def test_matches_torch_with_out_dims():
    torch = pytest.importorskip("torch")
    res = {}
    for lib in (torch, nbtorch):
        class Two(lib.autograd.Function):
            @staticmethod
            def forward(x, y):
                return x * 2, y

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g, h):
                return g * 2, h

            @staticmethod
            def vmap(info, in_dims, x, y):
                return (x * 2, y.sum()), (in_dims[0], None)
        a, b = lib.func.vmap(Two.apply, in_dims=(-1, None), out_dims=(1, 0))(
            lib.arange(6.0).reshape(2, 3), lib.ones(4))
        res[lib] = (a.numpy().tolist(), b.numpy().tolist())
    assert res[torch] == res[nbtorch]


def test_generate_vmap_rule_runs_the_loop():
    class Double(nbtorch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2
    x = nbtorch.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(nbtorch.func.vmap(Double.apply)(x).numpy(), x.numpy() * 2)
    assert nbtorch.autograd.Function.generate_vmap_rule is False


def test_both_rule_and_generate_is_an_error():
    class Both(nbtorch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def vmap(info, in_dims, x):
            return x, 0
    with pytest.raises(RuntimeError, match="has both generate_vmap_rule=True and an "
                                           "overridden vmap staticmethod"):
        nbtorch.func.vmap(Both.apply)(nbtorch.ones(3))


def test_default_vmap_staticmethod_raises():
    with pytest.raises(NotImplementedError, match="To use autograd.Function with vmap, you "
                                                  "must either override the vmap"):
        nbtorch.autograd.Function.vmap(None, None)
